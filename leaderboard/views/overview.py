"""Overview: per paper, its claims by verdict in three groups under one set of filters: the paper's numbers, the
direction at budget scale, and the architecture (with its reviewed deviations and derived counts apart)."""

from urllib.parse import urlencode

import streamlit as st

from leaderboard import charts, queries, ui
from leaderboard.queries import COUNTED

SECTIONS = (
    ("accuracy", "The paper's numbers", "The paper's results (scalars, deltas against a baseline, trends) at the "
     "paper's scale: judged by full runs and released weights against the reported value and its tolerance."),
    ("budget", "Direction at budget scale", "Budget runs (small real data, a CPU or one GPU) judge the sign of a "
     "difference or trend under the paper's committed plan, never its size: counted apart from the paper's numbers. "
     "Premise failed: the budget regime cannot test the claim; off plan: runs exist, none under the plan."),
    ("architecture", "Architecture claims", "Parameter counts and multiply-adds: judged by the arch tier, which "
     "profiles the models without data. A deviation (a reviewed difference from the paper's count) is not counted "
     "as reproduced; a derived count (it follows from the stated configuration) is counted as no evidence."),
)  # fmt: skip
EMPTY = {"accuracy": "claims about the paper's numbers", "budget": "claims judged at budget scale",
         "architecture": "architecture claims"}  # fmt: skip
# the statuses each group's headline and table always show; any other is shown where it occurs
STATUS_COLUMNS = {
    "accuracy": ("reproduced", "not-reproduced", "inconclusive", "not-run"),
    "budget": ("reproduced", "not-reproduced", "inconclusive", "not-run", "premise-failed", "untestable", "off-plan"),
    "architecture": ("reproduced", "not-reproduced", "deviation", "derived", "not-run"),
}


def label(status: str) -> str:
    return "Derived (no evidence)" if status == "derived" else status.capitalize().replace("-", " ")


def show_section(group: str, heading: str, caption: str, filters: dict[str, list[str]]) -> None:
    """One group's headline (following the filters), its table of papers and its bar chart."""
    table = queries.overview(db, group, **filters)
    st.header(heading, anchor=group)
    st.caption(caption)
    totals = queries.headline(table)
    statuses = [*STATUS_COLUMNS[group], *(s for s in COUNTED if s not in STATUS_COLUMNS[group] and totals[s])]
    headline = ("papers", "claims", "runs", *statuses)
    for column, key in zip(st.columns(len(headline)), headline, strict=True):
        column.metric("Successful runs" if key == "runs" else label(key), totals[key])
    if table.empty:
        st.info(f"No {EMPTY[group]} match the filters.")
        return
    table.insert(2, "claims_page", ["paper?" + urlencode({"paper": p}) for p in table["paper"]])
    shown = ["paper", "title", "claims_page", "link", "claims", *statuses]
    st.dataframe(
        table,
        hide_index=True,
        placeholder="",
        key=f"overview-{group}",
        column_order=[*shown, "best_tier", "runs"] if group != "architecture" else [*shown, "runs"],
        column_config={
            "paper": "Paper",
            "title": st.column_config.TextColumn("Title", width="medium"),
            "claims_page": st.column_config.LinkColumn("Details", display_text="claims →"),
            "link": st.column_config.LinkColumn(
                "Source", display_text=r"([^/]+)$", help="the paper: its arXiv page, or where it is published"
            ),
            "claims": st.column_config.NumberColumn("Claims"),
            **{status: st.column_config.NumberColumn(label(status)) for status in COUNTED},
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
    "A verdict names the tier it rests on: smoke runs never judge a claim, budget runs judge the direction of deltas "
    "and trends at small scale, full and weights runs judge the paper's numbers (docs/verdicts.md)."
)
