"""Paper: every claim of one paper, the paper's numbers apart from the direction at budget scale, with the evidence,
runs and command behind each, and a delta claim's two arms' learning curves."""

import json
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from leaderboard import charts, queries, ui

PAPER_COLUMNS = (
    "claim_id", "status", "tags_text", "tier", "metric", "reported", "measured", "delta", "tolerance", "interval", "n",
    "seeds", "n_runs", "runs", "evidence_text", "others_text", "kind", "model", "dataset", "split", "source", "reason",
    "command",
)  # fmt: skip
BUDGET_COLUMNS = (
    "claim_id", "status", "tags_text", "tier", "metric", "measured", "interval", "p_value", "p_holm", "analysis",
    "excluded", "n", "seeds_needed", "machines", "seeds", "n_runs", "runs", "evidence_text", "others_text", "kind",
    "model", "baseline", "dataset", "split", "source", "reason", "command",
)  # fmt: skip
TAG_COLORS = {"premise-failed": "violet", "fragile": "orange", "deviation": "blue", "off-plan": "gray",
              "derived": "gray", "constructed": "gray", "holm": "orange"}  # fmt: skip


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


def interval_text(low, high) -> str | None:
    return f"[{low:.4g}, {high:.4g}]" if pd.notna(low) and pd.notna(high) else None


def show_claims(claims: pd.DataFrame, paper: str) -> None:
    """The claims in two tables: the paper's numbers (reported against measured, Δ, tolerance) and the direction at
    budget scale (the sign only: interval, p and Holm p, analysis, what a null excludes)."""
    table = claims.copy()
    table["runs"] = ["runs?" + urlencode({"paper": paper, "claim": c}) for c in table["claim_id"]]
    table["seeds"] = [queries.seeds_text(s) for s in table["seeds"]]
    table["tags_text"] = [", ".join(tags) or None for tags in table["tags"]]
    table["interval"] = [interval_text(lo, hi) for lo, hi in zip(table["low"], table["high"], strict=True)]
    table["evidence_text"] = [queries.evidence_text(e) for e in table["evidence"]]
    table["others_text"] = [queries.others_text(e, k) for e, k in zip(table["evidence"], table["kind"], strict=True)]
    number = st.column_config.NumberColumn
    config = {
        "claim_id": "Claim",
        "tags_text": st.column_config.TextColumn("Tags", help="premise-failed, derived, constructed, fragile, ..."),
        "reported": number("Reported", format="%.4g", help="the paper's value (a delta: model minus baseline)"),
        "measured": number(
            "Measured", format="%.4g", help="mean over seeds (a delta: the difference; a trend: rho or the slope)"
        ),  # fmt: skip
        "delta": number("Δ", format="%+.3g", help="measured minus reported"),
        "tolerance": number("± tolerance", format="%.3g"),
        "interval": st.column_config.TextColumn("Interval", help="the 95% interval the status rests on"),
        "p_value": number("p", format="%.3g", help="two-sided, of no effect"),
        "p_holm": number("Holm p", format="%.3g", help="Holm-adjusted over the paper's budget verdicts"),
        "analysis": st.column_config.TextColumn("Analysis", width="medium"),
        "excluded": st.column_config.TextColumn("A null excludes", width="medium"),
        "seeds_needed": number("Seeds needed", help="per side, for the smallest effect of interest at 80% power"),
        "machines": number("Machines", help="distinct machines the judged runs ran on"),
        "n": number("n", help="seeds (trend: points) the verdict rests on"),
        "n_runs": number("Run records", help="the run records the verdict rests on"),
        "runs": st.column_config.LinkColumn("Runs", display_text="runs →"),
        "evidence_text": st.column_config.TextColumn(
            "Evidence", help="what the verdict rests on: published or local records · machine @ commit"
        ),
        "others_text": st.column_config.TextColumn(
            "Other machines", help="each other machine's records judged apart: ✓ where its status is the verdict's"
        ),
        "reason": st.column_config.TextColumn("Why", width="large"),
        "command": st.column_config.TextColumn("Command that reproduces it", width="large"),
    }
    for scale, heading, columns in (("paper", "The paper's numbers", PAPER_COLUMNS),
                                    ("budget", "Direction at budget scale", BUDGET_COLUMNS)):  # fmt: skip
        mine = table[table["scale"] == scale]
        if mine.empty:
            continue
        st.subheader(heading)
        if scale == "budget":
            st.caption("The sign of each difference at small scale, under the paper's committed plan: never its size, "
                       "so no Δ to the paper's value.")  # fmt: skip
        st.dataframe(
            mine.style.map(ui.status_style, subset=["status"]), hide_index=True, placeholder="",
            column_order=columns, column_config=config, key=f"claims-{scale}",
        )  # fmt: skip
    if claims["command"].isna().any():
        st.caption(
            f"A claim resting on more than {queries.MAX_JOINED_RUNS} runs shows its seeds and command under "
            "A claim's evidence."
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


def tag_badges(tags: list[str]) -> str:
    return " ".join(f":{TAG_COLORS.get(tag, 'gray')}-badge[{tag}]" for tag in tags)


def evidence_lines(chosen) -> list[str]:
    """The verdict's evidence in words, one line per field it has."""
    lines = []
    scale = "the paper's number" if chosen.scale == "paper" else "the direction at budget scale (the sign only)"
    lines.append(f"Judges {scale}")
    if (interval := interval_text(chosen.low, chosen.high)) is not None:
        lines.append(f"Interval: {interval}")
    if pd.notna(chosen.p_value):
        holm = f", Holm p = {chosen.p_holm:.3g} (over the paper's budget verdicts)" if pd.notna(chosen.p_holm) else ""
        lines.append(f"p = {chosen.p_value:.3g}{holm}")
    for field, name in (("analysis", "Analysis"), ("excluded", "A null excludes")):
        if isinstance(getattr(chosen, field), str):
            lines.append(f"{name}: {getattr(chosen, field)}")
    if pd.notna(chosen.seeds_needed):
        lines.append(f"Seeds needed: {int(chosen.seeds_needed)} per side (the smallest effect of interest, 80% power)")
    if chosen.machines:
        ids = f": {', '.join(f'`{m}`' for m in chosen.machine_ids)}" if chosen.machine_ids else ""
        lines.append(f"Machines: {int(chosen.machines)}{ids}")
    if isinstance(chosen.plan, str):
        lines.append(f"Plan: `{chosen.plan}`")
    if chosen.off_plan:
        lines.append(f"Off-plan records: {int(chosen.off_plan)} (shown on the Runs page, never judged)")
    return lines


def rests_on_lines(evidence: dict) -> list[str]:
    """The machine, commits and record sets a verdict rests on, and the other machines that confirm it, in words."""
    lines = [f"Machine: `{evidence['machine']}`"] if evidence.get("machine") else []
    if commits := evidence.get("commits"):
        tree = "made from a dirty working tree" if evidence.get("dirty") else "clean working tree"
        lines.append(f"Commits: {', '.join(f'`{c}`' for c in commits)} ({tree})")
    origins = ["local (no published record set)" if o == "local" else o for o in evidence.get("origins") or []]
    if origins:
        lines.append(f"Records: {'; '.join(origins)}")
    if confirmed := evidence.get("confirmed_on"):
        lines.append(f"Confirmed on: {', '.join(f'`{m}`' for m in confirmed)}")
    return lines


def show_other_machines(others: list[dict]) -> None:
    """Each other machine's records judged apart: its status, seeds, mean, interval, p and where they come from."""
    st.markdown("**Judged apart on other machines**")
    table = pd.DataFrame(others, columns=["machine", "status", "n", "mean", "low", "high", "p_value", "origins"])
    table["interval"] = [interval_text(lo, hi) for lo, hi in zip(table["low"], table["high"], strict=True)]
    table["origins"] = [", ".join(o) if isinstance(o, list) else None for o in table["origins"]]
    number = st.column_config.NumberColumn
    config = {
        "machine": "Machine", "status": "Status", "n": number("n"), "mean": number("Mean", format="%.4g"),
        "interval": "Interval", "p_value": number("p", format="%.3g"), "origins": "Records",
    }  # fmt: skip
    st.dataframe(
        table.style.map(ui.status_style, subset=["status"]), hide_index=True, placeholder="", key="claim-machines",
        column_order=("machine", "status", "n", "mean", "interval", "p_value", "origins"), column_config=config,
    )  # fmt: skip


def show_premises(premises: list[dict]) -> None:
    st.markdown("**Premises checked**")
    table = pd.DataFrame(premises, columns=["id", "check", "passed", "detail"])
    table["result"] = ["pass" if ok else "fail" for ok in table["passed"]]
    colour = {"pass": "reproduced", "fail": "not-reproduced"}
    st.dataframe(
        table.style.map(lambda result: ui.status_style(colour[result]), subset=["result"]),
        hide_index=True, placeholder="", key="claim-premises", column_order=("id", "check", "result", "detail"),
        column_config={"id": "Premise", "check": "Check", "result": "Result", "detail": "Detail"},
    )  # fmt: skip


def show_examples(examples: dict) -> None:
    st.markdown("**Per-example evidence**")
    method, n = examples.get("method"), examples.get("n_examples")
    if examples.get("estimate") is None:
        st.markdown(f"{method or 'none'}: {examples.get('reason') or 'no per-example evidence'}")
        return
    interval = interval_text(examples.get("low"), examples.get("high"))
    p = f", p = {examples['p_value']:.3g}" if examples.get("p_value") is not None else ""
    over = f" over {n} examples" if n else ""
    st.markdown(f"{method}{over}: estimate {examples['estimate']:+.4g}, interval {interval}{p}")


def show_arm_curves(chosen, paper: str) -> None:
    """A delta claim's two arms: the training curves of its model's runs and its baseline's, one line per run."""
    st.markdown("**Learning curves of both arms**")
    logs = queries.claim_logs(db, paper, chosen.claim_id)
    if logs.empty:
        st.caption("The runs behind this claim name no training logs.")
        return
    curves = queries.arm_curves(db, logs)
    drawn = curves["run_id"].nunique() if not curves.empty else 0
    arms = f"`{chosen.model}` against `{chosen.baseline}`" if isinstance(chosen.baseline, str) else f"`{chosen.model}`"
    st.caption(f"{arms}: the training logs of {drawn} of the verdict's runs (at most {queries.MAX_CURVE_RUNS} per "
               f"model){'; the others are not on this machine' if drawn < len(logs) else ''}.")  # fmt: skip
    if drawn:
        st.altair_chart(charts.arm_curves(curves))


def show_claim_detail(claims: pd.DataFrame, paper: str) -> None:
    st.subheader("A claim's evidence")
    ids = claims["claim_id"].tolist()
    wanted = st.query_params.get("claim")
    claim_id = st.selectbox("Claim", ids, index=ids.index(wanted) if wanted in ids else 0, key="claim-detail")
    st.query_params["claim"] = claim_id
    chosen = claims[claims["claim_id"] == claim_id].iloc[0]
    if not isinstance(chosen.command, str):  # resting on many runs: looked up alone
        chosen = queries.paper_claims(db, paper, claim_id=claim_id, look_up_all=True).iloc[0]
    tier = chosen.tier if isinstance(chosen.tier, str) else "-"
    st.markdown(f"**{chosen.status}** at tier `{tier}` {tag_badges(chosen.tags)}".rstrip())
    st.markdown(chosen.reason)
    st.markdown("\n".join(f"- {line}" for line in evidence_lines(chosen)))
    if chosen.evidence:
        st.markdown("**What it rests on**\n\n" + "\n".join(f"- {line}" for line in rests_on_lines(chosen.evidence)))
    if chosen.evidence and chosen.evidence.get("others"):
        show_other_machines(chosen.evidence["others"])
    if chosen.premises:
        show_premises(chosen.premises)
    if chosen.examples:
        show_examples(chosen.examples)
    st.markdown("**Reproduce it**")
    st.code(chosen.command, language="bash")
    if chosen.kind == "delta":
        show_arm_curves(chosen, paper)
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
