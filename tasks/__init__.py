"""Evaluation tasks: one package per task family (data module, official-format scorer, metric, fixtures)."""
