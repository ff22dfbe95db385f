"""Subcommands of the ``contrastkit`` command line, one module each (see :mod:`contrastkit.cli`)."""
