"""Paper reproductions: one package per paper (model.py, system.py, configs/, claims.yaml, README.md)."""
