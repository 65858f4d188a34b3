"""Reproduction harness for ML papers: claims, run records, a DuckDB store, verdicts and the ``harness`` command."""

__version__ = "0.1.0"
