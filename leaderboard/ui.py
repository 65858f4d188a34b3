"""Streamlit pieces the pages share: where the database is, filters that follow the URL, colours, the no-data page."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from leaderboard import queries
from leaderboard.charts import STATUS_COLORS

DEFAULT_DB = Path("results/harness.duckdb")
PAGE_SIZE = 100  # rows of run records a page shows at once (a million would not reach the browser)


def status_style(status: str) -> str:
    """CSS for a status cell (pandas Styler), in the status's colour."""
    return f"color: {STATUS_COLORS[status]}; font-weight: 600" if status in STATUS_COLORS else ""


def db_path() -> Path:
    """``--db PATH`` after ``--`` on the ``streamlit run`` line, else ``$HARNESS_DB``, else results/harness.duckdb."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--db")
    args, _ = parser.parse_known_args(sys.argv[1:])
    return Path(args.db or os.environ.get("HARNESS_DB") or DEFAULT_DB)


def require_database(db: Path) -> None:
    """Without a usable database, show how to make one and stop the page."""
    state = queries.database_state(db)
    if state == "ok":
        return
    st.title("paper-harness leaderboard")
    message = {
        "missing": f"There is no database at `{db}` yet.",
        "empty": f"`{db}` holds no runs yet.",
        "unreadable": f"`{db}` is not a harness database this version can read; rebuild it from the run records.",
        "outdated": f"`{db}` was written by another version of the harness: run `harness ingest` to rebuild it "
        "from the run records (results/runs/).",
    }[state]
    st.info(message, icon=":material/info:")
    if state == "outdated":
        st.code(".venv/bin/harness ingest", language="bash")
        st.stop()
    st.markdown("Run every paper's CPU tiers and ingest the records (from the repository root):")
    st.code(".venv/bin/dvc repro", language="bash")
    st.markdown("or run one paper's architecture tier, or load records you already have:")
    st.code(
        ".venv/bin/harness list\n.venv/bin/harness run PAPER --tier arch\n.venv/bin/harness ingest", language="bash"
    )
    st.caption("Reload this page once the database is there; the leaderboard reads it afresh on every view.")
    st.stop()


def url_multiselect(label: str, options: Sequence[str], param: str, help_text: str | None = None) -> list[str]:
    """A multiselect whose default comes from the URL's ``?param=a,b`` (so pages can link to a filtered view)."""
    wanted = [v for v in st.query_params.get_all(param) for v in v.split(",") if v in options]
    return st.multiselect(label, options, default=wanted, key=f"filter-{param}", help=help_text)
