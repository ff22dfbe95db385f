"""Benchmarks: ``python -m benchmarks.<name>`` writes its section of ``docs/benchmarks.md``."""
