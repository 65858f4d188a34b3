"""Paper: every claim of one paper, reported against measured, with the runs and the command behind each."""

import json
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from leaderboard import charts, queries, ui

COLUMNS = (
    "claim_id", "status", "tier", "metric", "reported", "measured", "delta", "tolerance", "n", "seeds", "n_runs",
    "runs", "kind", "model", "dataset", "split", "source", "reason", "command",
)  # fmt: skip


def show_source(db, paper: str) -> None:
    """The paper's title as the page's heading, its id and where it comes from beneath."""
    st.title(queries.titles(db).get(paper, paper))
    source = queries.paper_source(db, paper)
    where = ""
    if source and source["arxiv"]:
        where = f" · [arXiv:{source['arxiv']}]({source['link']})"
    elif source:
        checked = f"sha256 `{source['sha256']}`" if source["sha256"] else f"accessed {source['accessed']}"
        where = f" · [{source['link']}]({source['link']}) ({checked})"
    st.markdown(f"`{paper}`{where}")


def show_claims(claims: pd.DataFrame, paper: str) -> None:
    table = claims.copy()
    table["runs"] = ["runs?" + urlencode({"paper": paper, "claim": c}) for c in table["claim_id"]]
    table["seeds"] = [queries.seeds_text(s) for s in table["seeds"]]
    number = st.column_config.NumberColumn
    st.dataframe(
        table.style.map(ui.status_style, subset=["status"]),
        hide_index=True,
        placeholder="",
        column_order=COLUMNS,
        column_config={
            "claim_id": "Claim",
            "reported": number("Reported", format="%.4g", help="the paper's value (a delta: model minus baseline)"),
            "measured": number("Measured", format="%.4g", help="mean over seeds (a trend: rho or the slope)"),
            "delta": number("Δ", format="%+.3g", help="measured minus reported"),
            "tolerance": number("± tolerance", format="%.3g"),
            "n": number("n", help="seeds (trend: points) the verdict rests on"),
            "n_runs": number("Run records", help="the run records the verdict rests on"),
            "runs": st.column_config.LinkColumn("Runs", display_text="runs →"),
            "reason": st.column_config.TextColumn("Why", width="large"),
            "command": st.column_config.TextColumn("Command that reproduces it", width="large"),
        },
    )
    if claims["command"].isna().any():
        st.caption(
            f"A claim resting on more than {queries.MAX_JOINED_RUNS} runs shows its seeds and command under "
            "Reproduce a claim."
        )


def show_what_to_run(claims: pd.DataFrame, paper: str) -> None:
    """For a paper without runs: the commands that make its evidence, instead of empty charts."""
    st.info(f"No runs of `{paper}` yet: nothing is measured, so every claim is not run.", icon=":material/info:")
    st.markdown(
        "Run its CPU tiers (those `params.yaml` lists for it) and ingest the records, from the repository root:"
    )
    st.code(f".venv/bin/dvc repro {paper}", language="bash")
    st.markdown("or the runs that judge each claim (at the cheapest tier that can judge it), then ingest:")
    commands = list(dict.fromkeys(line for command in claims["command"].dropna() for line in command.splitlines()))
    st.code("\n".join([*commands, ".venv/bin/harness ingest"]), language="bash")


def show_charts(claims: pd.DataFrame, paper: str) -> None:
    chart_data = queries.reported_vs_measured(claims)
    if not chart_data.empty:
        st.subheader("Reported against measured")
        st.caption(
            "Each claim's Δ (measured − reported) in units of its tolerance, on a symmetric-log axis: inside the "
            "shaded band [-1, 1] it holds, whatever the metric's scale."
        )
        st.altair_chart(charts.reported_vs_measured(chart_data))
    for trend in claims[claims["kind"] == "trend"].itertuples():
        st.subheader(f"Trend: {trend.statement}")
        points = queries.trend_points(db, paper, trend.claim_id)
        tier = trend.tier if isinstance(trend.tier, str) else "-"  # pandas gives NaN for a missing tier
        st.caption(f"`{trend.claim_id}` — {trend.status} at tier {tier}: {trend.reason}")
        if points.empty:
            st.info("No runs yet at a tier that judges this trend.")
            continue
        rule = json.loads(trend.rule)
        if points["runs"].max() > 1:
            st.caption(f"{points['runs'].sum()} runs: each point is the mean y of the runs at its x.")
        st.altair_chart(charts.trend_curve(points, rule["x"], rule["y"]))
    for title, spec in queries.paper_figures(db, paper):
        st.subheader(title)
        st.vega_lite_chart(spec)


def show_claim_detail(claims: pd.DataFrame, paper: str) -> None:
    st.subheader("Reproduce a claim")
    claim_id = st.selectbox("Claim", claims["claim_id"].tolist(), key="claim-detail")
    chosen = claims[claims["claim_id"] == claim_id].iloc[0]
    if not isinstance(chosen.command, str):  # resting on many runs: looked up alone
        chosen = queries.paper_claims(db, paper, claim_id=claim_id, look_up_all=True).iloc[0]
    tier = chosen.tier if isinstance(chosen.tier, str) else "-"
    st.markdown(f"**{chosen.status}** at tier `{tier}`: {chosen.reason}")
    st.code(chosen.command, language="bash")
    evidence = queries.runs(db, claim=(paper, claim_id), limit=ui.PAGE_SIZE)
    if evidence.empty:
        st.caption("No runs behind this claim yet.")
        return
    st.dataframe(evidence, hide_index=True, placeholder="", key="claim-runs")
    if chosen.n_runs > len(evidence):
        st.caption(f"The newest {len(evidence)} of its {chosen.n_runs} runs; all of them on the Runs page.")


db = ui.db_path()
options = queries.filter_options(db)
papers = options["papers"]
wanted = st.query_params.get("paper")
paper = st.selectbox("Paper", papers, index=papers.index(wanted) if wanted in papers else 0)
st.query_params["paper"] = paper
show_source(db, paper)
left, right = st.columns(2)
with left:
    statuses = ui.url_multiselect("Status", options["statuses"], "status")
with right:
    tiers = ui.url_multiselect("Tier", options["tiers"], "tier", "the tier a claim's verdict rests on")
claims = queries.paper_claims(db, paper, statuses, tiers)
if claims.empty:
    st.info("No claim of this paper matches the filters.")
    st.stop()
show_claims(claims, paper)
if queries.paper_run_count(db, paper) == 0:
    show_what_to_run(claims, paper)
    st.stop()
show_charts(claims, paper)
show_claim_detail(claims, paper)
