"""The Streamlit leaderboard over results/harness.duckdb (pure query functions apart from the pages)."""
