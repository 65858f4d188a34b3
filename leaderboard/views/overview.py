"""Overview: per paper, its accuracy claims and its architecture claims by verdict, under one set of filters."""

from urllib.parse import urlencode

import streamlit as st

from leaderboard import charts, queries, ui
from leaderboard.queries import STATUSES

SECTIONS = (
    ("accuracy", "Accuracy claims", "The paper's results (scalars, deltas against a baseline, trends): judged by "
     "budget runs (trends, the sign of deltas), full runs and released weights (the paper's numbers)."),
    ("architecture", "Architecture claims", "Parameter counts and multiply-adds: judged by the arch tier, which "
     "profiles the models without data."),
)  # fmt: skip
HEADLINE = ("papers", "claims", "runs", *STATUSES)


def show_section(group: str, heading: str, caption: str, filters: dict[str, list[str]]) -> None:
    """One group's headline (following the filters), its table of papers and its bar chart."""
    table = queries.overview(db, group, **filters)
    st.header(heading, anchor=group)
    st.caption(caption)
    totals = queries.headline(table)
    for column, key in zip(st.columns(len(HEADLINE)), HEADLINE, strict=True):
        label = "Successful runs" if key == "runs" else key.capitalize().replace("-", " ")
        column.metric(label, totals[key])
    if table.empty:
        st.info(f"No paper has {heading.lower()} that match the filters.")
        return
    table.insert(2, "claims_page", ["paper?" + urlencode({"paper": p}) for p in table["paper"]])
    shown = ["paper", "title", "claims_page", "link", "claims", *STATUSES, "runs"]
    st.dataframe(
        table,
        hide_index=True,
        placeholder="",
        key=f"overview-{group}",
        column_order=shown[:-1] + ["best_tier", "runs"] if group == "accuracy" else shown,
        column_config={
            "paper": "Paper",
            "title": st.column_config.TextColumn("Title", width="medium"),
            "claims_page": st.column_config.LinkColumn("Details", display_text="claims →"),
            "link": st.column_config.LinkColumn(
                "Source", display_text=r"([^/]+)$", help="the paper: its arXiv page, or where it is published"
            ),
            "claims": st.column_config.NumberColumn("Claims"),
            **{status: st.column_config.NumberColumn(status.capitalize().replace("-", " ")) for status in STATUSES},
            "best_tier": st.column_config.TextColumn(
                "Best tier", help="the strongest tier with a successful run that can judge these claims"
            ),
            "runs": st.column_config.NumberColumn("Runs", help="successful runs at the tiers of these claims"),
        },
    )
    st.altair_chart(charts.status_bars(table, f"{heading} by verdict"))


db = ui.db_path()
st.title("Does each paper's number hold?")
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

for group, heading, caption in SECTIONS:
    show_section(group, heading, caption, {"papers": papers, "tasks": tasks, "tiers": tiers, "statuses": statuses})
st.caption(
    "A verdict names the tier it rests on: smoke runs never judge a claim, budget runs judge trends and the sign "
    "of deltas, full and weights runs judge the paper's numbers (docs/verdicts.md)."
)
