"""Overview: one row per paper, its claims by verdict and the best tier it has reached."""

from urllib.parse import urlencode

import streamlit as st

from leaderboard import charts, queries, ui
from leaderboard.queries import STATUSES

db = ui.db_path()
st.title("Does each paper's number hold?")
totals = queries.counts(db)
for column, key in zip(st.columns(7), ("papers", "claims", "runs", *STATUSES), strict=True):
    column.metric(key.capitalize().replace("-", " "), totals[key])

options = queries.filter_options(db)
columns = st.columns(4)
with columns[0]:
    papers = ui.url_multiselect("Paper", options["papers"], "paper")
with columns[1]:
    tasks = ui.url_multiselect("Task (dataset)", options["tasks"], "task")
with columns[2]:
    tiers = ui.url_multiselect("Tier", options["tiers"], "tier", "the tier a claim's verdict rests on")
with columns[3]:
    statuses = ui.url_multiselect("Status", options["statuses"], "status")

table = queries.overview(db, papers, tasks, tiers, statuses)
table.insert(1, "claims_page", ["paper?" + urlencode({"paper": p}) for p in table["paper"]])
table["best_tier"] = table["best_tier"].fillna("-")
st.dataframe(
    table,
    hide_index=True,
    column_config={
        "paper": "Paper",
        "claims_page": st.column_config.LinkColumn("Details", display_text="claims →"),
        "link": st.column_config.LinkColumn(
            "Source", display_text=r"([^/]+)$", help="the paper: its arXiv page, or where it is published"
        ),
        "claims": st.column_config.NumberColumn("Claims"),
        **{status: st.column_config.NumberColumn(status.capitalize().replace("-", " ")) for status in STATUSES},
        "best_tier": st.column_config.TextColumn("Best tier", help="highest tier with a successful run"),
        "runs": st.column_config.NumberColumn("Runs"),
    },
)

st.altair_chart(charts.status_bars(table))
st.caption(
    "A verdict names the tier it rests on: smoke runs never judge a claim, budget runs judge trends and the sign "
    "of deltas, full and weights runs judge the paper's numbers (docs/verdicts.md)."
)
