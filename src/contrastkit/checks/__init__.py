"""Argument checks shared by every layer, with one message style: each raises ``ValueError``
naming the argument, what was expected and what it got (``temperature must be > 0, got
-1.0``).

- :mod:`contrastkit.checks.scalars`: numbers, counts, ranges, choices (no torch import, so the
  theory functions and the config use them without loading torch);
- :mod:`contrastkit.checks.tensors`: embeddings, two views, labels, generators.
"""
