"""The leaderboard: reported against reproduced, claim by claim, over results/harness.duckdb.

Started by ``harness leaderboard [--port P] [--db PATH]``, i.e. ``streamlit run leaderboard/app.py -- --db PATH``.
Pages (``st.navigation``): Overview (one row per paper), Paper (every claim of one paper), Runs (run records
with provenance, downloads). Queries live in ``leaderboard.queries``; each opens the database read-only and
closes it, so an ingest can replace the file while the app runs.
"""

from pathlib import Path

import streamlit as st

from leaderboard import ui

PAGES = Path(__file__).resolve().parent / "views"  # not pages/: that name would make Streamlit add its own page list

st.set_page_config(page_title="paper-harness leaderboard", page_icon=":material/leaderboard:", layout="wide")
navigation = st.navigation(
    [
        st.Page(PAGES / "overview.py", title="Overview", icon=":material/leaderboard:", default=True),
        st.Page(PAGES / "paper.py", title="Paper", icon=":material/article:", url_path="paper"),
        st.Page(PAGES / "runs.py", title="Runs", icon=":material/list_alt:", url_path="runs"),
    ]
)
ui.require_database(ui.db_path())
navigation.run()
