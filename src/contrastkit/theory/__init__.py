"""The papers' theory as code: closed forms, bounds and optimal geometries (numpy / scipy)."""

from .constructions import simplex_etf

__all__ = ["simplex_etf"]
