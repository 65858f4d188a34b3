"""The leaderboard: reported against reproduced, claim by claim, over results/harness.duckdb.

Started by ``harness leaderboard [--port P] [--db PATH]``, i.e. ``streamlit run leaderboard/app.py -- --db PATH``.
Pages (``st.navigation``): Overview (per paper, its accuracy and architecture claims), Paper (every claim of one
paper), Runs (run records a page at a time, with provenance, downloads, training curves). Queries live in
``leaderboard.queries``; a page's run opens the database read-only once and closes it when drawn, so an ingest can
replace the file while the app runs.
"""

from pathlib import Path

import streamlit as st

from leaderboard import queries, ui

PAGES = Path(__file__).resolve().parent / "views"  # not pages/: that name would make Streamlit add its own page list

st.set_page_config(page_title="paper-harness leaderboard", page_icon=":material/leaderboard:", layout="wide")
navigation = st.navigation(
    [
        st.Page(PAGES / "overview.py", title="Overview", icon=":material/leaderboard:", default=True),
        st.Page(PAGES / "paper.py", title="Paper", icon=":material/article:", url_path="paper"),
        st.Page(PAGES / "runs.py", title="Runs", icon=":material/list_alt:", url_path="runs"),
    ]
)
with queries.page_session(ui.db_path()):  # the page's queries share one read-only connection, closed once drawn
    ui.require_database(ui.db_path())
    navigation.run()
