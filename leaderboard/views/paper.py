"""Paper: every claim of one paper, reported against measured, with the runs and the command behind each."""

import json
from urllib.parse import urlencode

import streamlit as st

from leaderboard import charts, queries, ui

COLUMNS = (
    "claim_id", "status", "tier", "metric", "reported", "measured", "delta", "tolerance", "n", "seeds", "runs",
    "kind", "model", "dataset", "split", "source", "reason", "command",
)  # fmt: skip

db = ui.db_path()
options = queries.filter_options(db)
papers = options["papers"]
wanted = st.query_params.get("paper")
paper = st.selectbox("Paper", papers, index=papers.index(wanted) if wanted in papers else 0)
st.query_params["paper"] = paper
st.title(paper)
source = queries.paper_source(db, paper)
if source and source["arxiv"]:
    st.markdown(f"[arXiv:{source['arxiv']}]({source['link']})")
elif source:
    checked = f"sha256 `{source['sha256']}`" if source["sha256"] else f"accessed {source['accessed']}"
    st.markdown(f"[{source['link']}]({source['link']}) ({checked})")
left, right = st.columns(2)
with left:
    statuses = ui.url_multiselect("Status", options["statuses"], "status")
with right:
    tiers = ui.url_multiselect("Tier", options["tiers"], "tier", "the tier a claim's verdict rests on")
claims = queries.paper_claims(db, paper, statuses, tiers)
if claims.empty:
    st.info("No claim of this paper matches the filters.")
    st.stop()

table = claims.copy()
table["runs"] = ["runs?" + urlencode({"paper": paper, "claim": c}) for c in table["claim_id"]]
table["seeds"] = [", ".join(map(str, s)) for s in table["seeds"]]
number = st.column_config.NumberColumn
st.dataframe(
    table.style.map(ui.status_style, subset=["status"]),
    hide_index=True,
    column_order=COLUMNS,
    column_config={
        "claim_id": "Claim",
        "reported": number("Reported", format="%.4g", help="the paper's value (a delta: model minus baseline)"),
        "measured": number("Measured", format="%.4g", help="mean over seeds (a trend: rho or the slope)"),
        "delta": number("Δ", format="%+.3g", help="measured minus reported"),
        "tolerance": number("± tolerance", format="%.3g"),
        "n": number("n", help="seeds (trend: points) the verdict rests on"),
        "runs": st.column_config.LinkColumn("Runs", display_text="runs →"),
        "reason": st.column_config.TextColumn("Why", width="large"),
        "command": st.column_config.TextColumn("Command that reproduces it", width="large"),
    },
)

chart_data = queries.reported_vs_measured(claims)
if not chart_data.empty:
    st.subheader("Reported against measured")
    st.caption("One panel per metric; the bar is the tolerance band around the reported value, the dashed line y = x.")
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
    st.altair_chart(charts.trend_curve(points, rule["x"], rule["y"]))

for title, spec in queries.paper_figures(db, paper):
    st.subheader(title)
    st.vega_lite_chart(spec)

st.subheader("Reproduce a claim")
claim_id = st.selectbox("Claim", claims["claim_id"].tolist(), key="claim-detail")
chosen = claims[claims["claim_id"] == claim_id].iloc[0]
st.markdown(f"**{chosen.status}** at tier `{chosen.tier or '-'}`: {chosen.reason}")
st.code(chosen.command, language="bash")
evidence = queries.runs(db, run_ids=chosen.run_ids)
if evidence.empty:
    st.caption("No runs behind this claim yet.")
else:
    st.dataframe(evidence, hide_index=True, key="claim-runs")
