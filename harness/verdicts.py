"""Verdicts: does what we measured support each claim? The decision rules are written out in docs/verdicts.md.

A claim is judged only by results of the tiers that may support it (scalar: ``full``/``weights``; arch:
``arch``; delta and trend: ``budget`` or higher), using the highest such tier that has results. Smoke
results are listed, never judged.
"""

from __future__ import annotations

import fnmatch
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.claims import Claim
from harness.plans import Plan, PlannedClaim, check_premise, on_plan, recipe_hash, seeds_needed
from harness.records import RunRecord, machine_key, record_value
from harness.stats import (
    CONFIDENCE,
    EPS,
    MIN_SEEDS,
    ZERO_SPREAD,
    Difference,
    against_band,
    difference,
    spearman,
    summarise,
    t_quantile,
)
from harness.tiers import DETERMINISTIC_TIERS, JUDGING_TIERS, TIER_ORDER

# premise-failed: the budget regime cannot test the claim (a premise check failed); untestable: the plan says the
# tier cannot afford the seeds the claim needs; off-plan: records exist but none under the paper's committed plan;
# deviation: an arch count that differs from the paper's for a reviewed reason (never counted as reproduced)
STATUSES = (
    "reproduced", "not-reproduced", "inconclusive", "not-run", "premise-failed", "untestable", "off-plan", "deviation",
)  # fmt: skip
MIN_TREND_POINTS = 3
HOLM_ALPHA = 0.05  # the family-wise error rate of a paper's budget verdicts
DECIDED = ("reproduced", "not-reproduced")  # the statuses the evidence decided
JUDGED = (*DECIDED, "inconclusive")  # the statuses of a claim the evidence tested
REPORT_KEYS = (
    "paper", "claim_id", "kind", "model", "dataset", "split", "metric", "reported", "tolerance",
    "status", "tier", "mean", "std", "n", "delta",
)  # fmt: skip


@dataclass
class Verdict:
    """One claim's verdict; ``reason`` says in words why the status is what it is."""

    paper: str
    claim_id: str
    kind: str
    model: str
    dataset: str
    split: str
    metric: str
    reported: float | None
    tolerance: float | None
    status: str = "not-run"
    tier: str | None = None
    mean: float | None = None
    std: float | None = None
    n: int = 0
    delta: float | None = None
    reason: str = "no matching results"
    run_ids: list[str] = field(default_factory=list)
    scale: str | None = None  # "paper" (the paper's number: full, weights, arch) or "budget" (direction at small scale)
    analysis: str | None = None  # what was computed, in words ("paired t over 5 seeds", "TOST", ...)
    low: float | None = None  # the interval the status rests on (of the mean, the difference or the slope)
    high: float | None = None
    p_value: float | None = None  # two-sided, of "no effect" (a trend: of no correlation; TOST: of no equivalence)
    p_holm: float | None = None  # Holm-adjusted over the paper's budget verdicts that have a p-value
    excluded: str | None = None  # what an inconclusive interval rules out, in words
    seeds_needed: int | None = None  # per side, for the smallest effect of interest at 80% power
    machines: int = 0  # distinct machines (CPU model and ISA level, accelerator) the judged records ran on
    machine_ids: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)  # premise-failed, derived, constructed, fragile, nested, ...
    premises: list[dict[str, Any]] = field(default_factory=list)  # {id, check, passed, detail} per premise checked
    plan: str | None = None  # the plan file the claim was judged under
    examples: dict[str, Any] | None = None  # per-example evidence from the kept predictions
    off_plan: int = 0  # matching records the plan does not cover (shown, never judged)
    # what the verdict rests on: {machine, commits, origins, others: [{machine, status, n, ...}], confirmed_on}
    evidence: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        return asdict(self)

    def report(self) -> dict[str, Any]:
        """The ``harness report --json`` object: DESIGN.md's keys, plus ``reason``."""
        data = {key: getattr(self, key) for key in REPORT_KEYS}
        data["reason"] = self.reason
        return data


def matches(claim: Claim, record: RunRecord, baseline: bool = False) -> bool:
    """Same paper, model (a glob for trend claims), dataset, split, protocol (when the claim names one),
    conditions (dotted keys looked up in the record's config), and the record has the claim's metric. With
    ``baseline``, the paper, model and conditions are those of the delta claim's baseline."""
    paper = claim.baseline_paper if baseline else claim.paper
    model = claim.baseline_model if baseline else claim.model
    conditions = claim.baseline_conditions if baseline else claim.conditions
    same_model = fnmatch.fnmatchcase(record.model, model) if claim.kind == "trend" else record.model == model
    return (
        same_model
        and record.paper == paper
        and record.dataset == claim.dataset
        and record.split == claim.split
        and _metric_name(claim) in record.metrics
        and (claim.protocol is None or record.protocol == claim.protocol)
        and all(record_value(record, f"config.{key}") == value for key, value in conditions.items())
    )


def _metric_name(claim: Claim) -> str:
    """The record metric a claim reads: ``<metric>@<rule>`` for an arch claim counted by the paper's own rule."""
    return f"{claim.metric}@{claim.counting}" if claim.counting else claim.metric


def _per_seed(records: Sequence[RunRecord]) -> list[RunRecord]:
    """One record per seed: the latest finished, so a re-run with newer code supersedes the old one."""
    latest: dict[int, RunRecord] = {}
    for record in records:
        if record.seed not in latest or record.finished_at > latest[record.seed].finished_at:
            latest[record.seed] = record
    return [latest[seed] for seed in sorted(latest)]


def _judge_arch(verdict: Verdict, claim: Claim, value: float) -> None:
    """One profile decides; a reviewed deviation holds only while the count is still the one reviewed."""
    verdict.mean, verdict.n, verdict.delta, verdict.analysis = value, 1, value - claim.value, "profile (deterministic)"
    verdict.low = verdict.high = value
    counted = f" counted by the paper's rule {claim.counting!r}" if claim.counting else ""
    band = f"{claim.value} ± {claim.tolerance}"
    verdict.status = against_band(value, value, claim.value, claim.tolerance)
    verdict.reason = f"arch result {value:.6g}{counted} against {band} (deterministic: no interval)"
    deviation = claim.deviation
    if verdict.status == "not-reproduced" and deviation is not None:
        if abs(value - deviation.measured) <= claim.tolerance + EPS:
            verdict.status = "deviation"
            verdict.tags.append("deviation")
            verdict.reason += f"; reviewed deviation: {deviation.reason} (evidence: {deviation.evidence})"
        else:
            verdict.reason += f"; the reviewed deviation was for {deviation.measured:g}: the count has moved since"


def _judge_scalar(verdict: Verdict, claim: Claim, values: list[float], tier: str) -> None:
    mean, std = summarise(values)
    verdict.mean, verdict.std, verdict.n, verdict.delta = mean, std, len(values), mean - claim.value
    band = f"{claim.value} ± {claim.tolerance}"
    if tier in DETERMINISTIC_TIERS:
        verdict.low = verdict.high = mean
        verdict.status = against_band(mean, mean, claim.value, claim.tolerance)
        verdict.analysis = "one evaluation (deterministic)"
        verdict.reason = f"{tier} result {mean:.6g} against {band} (deterministic: no interval)"
    elif len(values) < MIN_SEEDS:
        verdict.status = "inconclusive"
        verdict.reason = f"{len(values)} seed(s) at tier {tier}: at least {MIN_SEEDS} needed for an interval"
    elif std == 0:
        verdict.status = "inconclusive"
        verdict.reason = ZERO_SPREAD.format(n=len(values), what="seeds")
    else:
        half = t_quantile(CONFIDENCE, len(values) - 1) * std / math.sqrt(len(values))
        verdict.low, verdict.high = mean - half, mean + half
        verdict.analysis = f"t-interval over {len(values)} seeds"
        verdict.status = against_band(mean - half, mean + half, claim.value, claim.tolerance)
        verdict.reason = f"{CONFIDENCE:.0%} t-interval [{mean - half:.4g}, {mean + half:.4g}] against {band}"


def _judge_delta(verdict: Verdict, claim: Claim, ours: dict[int, float], theirs: dict[int, float], tier: str) -> None:
    paired = claim.analysis == "paired"
    verdict.delta = None
    if tier in DETERMINISTIC_TIERS:  # fixed weights: one evaluation a side decides
        diff = statistics.fmean(ours.values()) - statistics.fmean(theirs.values())
        verdict.mean, verdict.n, verdict.low, verdict.high = diff, 1, diff, diff
        verdict.delta, verdict.analysis = diff - claim.value, "one evaluation a side (deterministic)"
        verdict.status = _decide_delta(verdict, claim, diff, diff, tier)
        return
    result = difference(ours, theirs, paired)
    if isinstance(result, str):
        verdict.n = min(len(ours), len(theirs))
        verdict.mean = statistics.fmean(ours.values()) - statistics.fmean(theirs.values()) if verdict.n else None
        verdict.status, verdict.reason = "inconclusive", f"at tier {tier}: {result}"
        return
    verdict.mean, verdict.std, verdict.n, verdict.analysis = result.diff, result.std, result.n, result.analysis
    if claim.equivalence is not None:
        _judge_equivalence(verdict, claim, result)
        return
    low, high = result.interval()
    verdict.low, verdict.high, verdict.p_value = low, high, result.p_value()
    if tier != "budget":
        verdict.delta = result.diff - claim.value
    verdict.status = _decide_delta(verdict, claim, low, high, tier)


def _decide_delta(verdict: Verdict, claim: Claim, low: float, high: float, tier: str) -> str:
    if tier != "budget":
        verdict.reason = f"difference interval [{low:.4g}, {high:.4g}] against {claim.value} ± {claim.tolerance}"
        return against_band(low, high, claim.value, claim.tolerance)
    # small scale: only the direction of the difference is judged
    sign = 1 if claim.value >= 0 else -1
    low_s, high_s = sorted((sign * low, sign * high))
    verdict.reason = (
        f"budget tier judges the sign only: {CONFIDENCE:.0%} interval of the difference [{low:.4g}, {high:.4g}] "
        f"({verdict.analysis}); the claim's direction is {'+' if sign > 0 else '-'}"
    )
    return "reproduced" if low_s > 0 else "not-reproduced" if high_s < 0 else "inconclusive"


def _judge_equivalence(verdict: Verdict, claim: Claim, result: Difference) -> None:
    """TOST: equivalent when the (1 - 2 alpha) interval lies inside [-margin, margin]."""
    margin, alpha = claim.equivalence.margin, claim.equivalence.alpha
    low, high = result.interval(1 - 2 * alpha)
    verdict.low, verdict.high, verdict.p_value = low, high, result.tost_p(margin)
    verdict.analysis = f"TOST ({result.analysis}) against ±{margin:g}"
    if -margin < low and high < margin:
        verdict.status = "reproduced"
    elif high <= -margin or low >= margin:
        verdict.status = "not-reproduced"
    else:
        verdict.status = "inconclusive"
    verdict.reason = (
        f"equivalence (TOST, alpha {alpha:g}): {1 - 2 * alpha:.0%} interval of the difference [{low:.4g}, {high:.4g}] "
        f"against the margin ±{margin:g} {claim.unit}"
    )


def _judge_trend(verdict: Verdict, claim: Claim, records: list[RunRecord]) -> None:
    from scipy import stats

    rule = claim.rule
    triples = _trend_xy(claim, records)
    points = [(float(x), float(y)) for x, y, _ in triples]
    unit = "seed"
    if claim.replicate == "condition" or _nested(r for _, _, r in triples):
        points, unit = _condition_means(points), "condition"
        verdict.tags.append("nested")
    if rule.type == "loglog-slope":
        points = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    verdict.n = len(points)
    what = (
        "condition means (one point per x: the runs replicate no upstream run)"
        if unit == "condition"
        else ("points, one per (seed, x, recipe)")
    )
    if len(points) < MIN_TREND_POINTS or len({x for x, _ in points}) < 2:
        verdict.status = "inconclusive"
        verdict.reason = f"{len(points)} usable {what} for {rule.x} vs {rule.y}: at least {MIN_TREND_POINTS} needed"
        return
    xs, ys = zip(*points, strict=True)
    if rule.type == "rank-correlation":
        rho, p_value = spearman(xs, ys)
        verdict.mean, verdict.p_value = float(rho), (None if math.isnan(p_value) else p_value)
        verdict.analysis = f"Spearman over {len(points)} {what}"
        significant = p_value < rule.alpha
        agrees = rho * rule.sign > 0
        verdict.status = "inconclusive" if not significant else "reproduced" if agrees else "not-reproduced"
        verdict.reason = (
            f"Spearman rho={rho:.3f} (p={p_value:.3g}, alpha={rule.alpha}) over {len(points)} {what}, "
            f"expected sign {rule.sign:+d}"
        )
    else:
        fit = stats.linregress(xs, ys)
        if not math.isfinite(fit.stderr) or fit.stderr == 0:
            verdict.mean, verdict.status = float(fit.slope), "inconclusive"
            verdict.reason = ZERO_SPREAD.format(n=len(points), what="points about the line")
            return
        half = t_quantile(CONFIDENCE, len(points) - 2) * fit.stderr
        verdict.mean, verdict.std = float(fit.slope), float(fit.stderr)
        verdict.low, verdict.high, verdict.p_value = fit.slope - half, fit.slope + half, float(fit.pvalue)
        verdict.analysis = f"least-squares log-log slope over {len(points)} {what}"
        centre, width = (rule.min + rule.max) / 2, (rule.max - rule.min) / 2
        verdict.status = against_band(fit.slope - half, fit.slope + half, centre, width)
        verdict.reason = (
            f"log-log slope {fit.slope:.3f}, {CONFIDENCE:.0%} interval [{fit.slope - half:.3f}, "
            f"{fit.slope + half:.3f}] against [{rule.min}, {rule.max}] ({len(points)} {what})"
        )


def _nested(records: Any) -> bool:
    """Several seeds that all start from one and the same upstream run (one pre-training): they replicate the
    fine-tuning only, so the condition is the unit."""
    records = list(records)
    parents = {tuple(r.parents) for r in records if r.parents}
    return len(parents) == 1 and len({r.seed for r in records if r.parents}) > 1


def _condition_means(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    by_x: dict[float, list[float]] = {}
    for x, y in points:
        by_x.setdefault(x, []).append(y)
    return [(x, statistics.fmean(ys)) for x, ys in sorted(by_x.items())]


def _xy(claim: Claim, record: RunRecord) -> tuple[Any, Any] | None:
    x, y = record_value(record, claim.rule.x), record_value(record, claim.rule.y)
    return (x, y) if isinstance(x, int | float) and isinstance(y, int | float) else None


def _latest_by(records: Sequence[RunRecord], key: Any) -> dict[Any, RunRecord]:
    """The latest finished record of each ``key(record)``: a re-run of the same thing replaces, never adds."""
    latest: dict[Any, RunRecord] = {}
    for record in sorted(records, key=lambda r: r.finished_at):
        latest[key(record)] = record
    return latest


def _trend_xy(claim: Claim, records: Sequence[RunRecord]) -> list[tuple[Any, Any, RunRecord]]:
    """``(x, y, record)`` of each point: one per (model, seed, x, recipe), the latest record of each, so re-running a
    seed replaces its point instead of adding one. With a ``baseline``, the points are the claim's own records, each
    paired with the baseline's record of the same seed and x, and y is their difference."""
    with_xy = [r for r in records if _xy(claim, r) is not None]
    if claim.baseline is None:
        latest = _latest_by(with_xy, lambda r: (r.model, r.seed, _xy(claim, r)[0], recipe_hash(r.config)))
        return [(*_xy(claim, r), r) for r in latest.values()]
    key = lambda r: (r.seed, _xy(claim, r)[0])  # noqa: E731
    ours = _latest_by([r for r in with_xy if matches(claim, r)], key)
    theirs = _latest_by([r for r in with_xy if matches(claim, r, baseline=True)], key)
    return [
        (k[1], _xy(claim, record)[1] - _xy(claim, theirs[k])[1], record)
        for k, record in sorted(ours.items(), key=lambda item: (item[0][1], item[0][0]))
        if k in theirs
    ]


def trend_points(claim: Claim, records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """The points of a trend claim's curve: the rule's x and y (as recorded, before any log; with a baseline, y is
    the difference to the paired baseline record) of each point the claim was judged on, with its model, seed and run
    id, sorted by x. Ingest stores them for the leaderboard's trend charts."""
    points = [
        {"x": x, "y": y, "model": record.model, "seed": record.seed, "run_id": record.run_id}
        for x, y, record in _trend_xy(claim, records)
    ]
    return sorted(points, key=lambda p: (p["x"], p["model"], p["seed"]))


def _best_tier(records: Sequence[RunRecord], allowed: Sequence[str]) -> str | None:
    present = {r.tier for r in records}
    return next((tier for tier in TIER_ORDER if tier in present and tier in allowed), None)


def _new_verdict(claim: Claim) -> Verdict:
    verdict = Verdict(
        paper=claim.paper, claim_id=claim.id, kind=claim.kind, model=claim.model, dataset=claim.dataset,
        split=claim.split, metric=claim.metric, reported=claim.value, tolerance=claim.tolerance,
    )  # fmt: skip
    verdict.tags += [name for name in ("derived", "constructed") if getattr(claim, name)]
    return verdict


def judge(
    claim: Claim,
    records: Sequence[RunRecord],
    plan: Plan | None = None,
    results_dir: Path | None = None,
    origins: dict[str, str] | None = None,
) -> Verdict:
    """The verdict for one claim over all records (the matching ones, the baseline's included, are selected
    here); a budget claim is judged only under its paper's ``plan``. With ``results_dir`` (where the records' kept
    predictions lie), a delta claim also gets per-example evidence, and rests on the most conservative analysis.

    When the records come from several machines, the verdict rests on one machine's (:func:`_primary`); each other
    machine's records are judged apart and listed in ``evidence`` (a decided status another machine contradicts tags
    the verdict ``fragile``). ``origins``: run id -> the published set that ships it (harness.published)."""
    verdict = _new_verdict(claim)
    matching = [r for r in records if matches(claim, r)]
    failed = [r for r in matching if r.status != "ok"]
    usable = [r for r in matching if r.status == "ok"]
    tier = _best_tier(usable, JUDGING_TIERS[claim.kind])
    entry = plan.entry(claim.id) if plan else None
    if entry is not None:  # a claim the paper's budget plan designs for is a budget claim, run or not
        verdict.scale = "budget"
    if tier is None and entry is not None and entry.untestable:  # judged untestable whether or not it was run
        verdict.tier = "budget"
        _untestable(verdict, plan, entry, [])
        return verdict
    if tier is None:
        _explain_not_run(verdict, usable, failed)
        return verdict
    verdict.tier, verdict.scale = tier, "budget" if tier == "budget" else "paper"
    ours = [r for r in usable if r.tier == tier]
    base = [r for r in records if claim.baseline and matches(claim, r, baseline=True) and r.tier == tier]
    base = [r for r in base if r.status == "ok"]
    origins = origins or {}
    source = lambda r: (machine_key(r.provenance.hardware), origins.get(r.run_id, "local"))  # noqa: E731
    groups = _by_source(ours + base, source)
    primary = _primary(groups, entry if tier == "budget" else None)
    on = lambda rs, key: [r for r in rs if source(r) == key]  # noqa: E731
    judged = _judge_tier(verdict, claim, on(ours, primary), on(base, primary), records, plan, tier, results_dir)
    if failed:
        verdict.reason += f"; {len(failed)} failed/diverged run(s) not counted"
    others = []
    for key in groups:
        if key != primary:
            other = _new_verdict(claim)
            other.tier, other.scale = verdict.tier, verdict.scale
            _judge_tier(other, claim, on(ours, key), on(base, key), records, plan, tier, results_dir)
            others.append((key, other))
    _record_evidence(verdict, judged, others, origins)
    if others and verdict.machine_ids:
        verdict.machine_ids = sorted({machine for machine, _ in groups})
        verdict.machines = len(verdict.machine_ids)
    return verdict


def _judge_tier(
    verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord], records: Sequence[RunRecord],
    plan: Plan | None, tier: str, results_dir: Path | None,
) -> list[RunRecord]:  # fmt: skip
    """Judge the claim on one machine's records of the chosen tier; returns the records the verdict rests on."""
    if tier == "budget":
        ours, base = _judge_under_plan(verdict, claim, ours, base, records, plan)
    else:
        _evaluate(verdict, claim, ours, base, tier)
        _fragility(verdict, claim, ours, base, tier)
    if results_dir is not None and claim.kind == "delta" and ours and base:
        _per_example(verdict, claim, _per_seed(ours), _per_seed(base), tier, results_dir)
    return ours + base


def _by_source(records: Sequence[RunRecord], source: Any) -> dict[tuple[str, str], list[RunRecord]]:
    """The records of each (machine, origin): a published set, or the runs made here (``local``)."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        groups.setdefault(source(record), []).append(record)
    return groups


def _primary(groups: dict[tuple[str, str], list[RunRecord]], entry: PlannedClaim | None) -> tuple[str, str] | None:
    """The (machine, origin) a verdict rests on when records come from several machines or sets: the one with the
    most seeds (the planned seeds, under a plan), then the one whose records came first. The others' records are
    judged apart (``evidence``): re-runs of the same seeds are neither pooled as more seeds nor let replace them."""
    if not groups:
        return None

    def rank(key: tuple[str, str]) -> tuple[int, Any]:
        seeds = {r.seed for r in groups[key]}
        if entry is not None:
            seeds &= set(entry.seeds)
        return (-len(seeds), min(r.finished_at for r in groups[key]))

    return min(groups, key=rank)


def _record_evidence(
    verdict: Verdict, judged: list[RunRecord], others: list[tuple[tuple[str, str], Verdict]], origins: dict[str, str]
) -> None:
    """What the verdict rests on (machine, commits, whether the records were published), and each other machine's
    (or set's) verdict over its own records: agreement across machines is judged as verdicts, never as bits."""
    if not judged and not others:
        return
    shown = [
        {
            "machine": machine, "status": other.status, "n": other.n, "mean": other.mean, "low": other.low,
            "high": other.high, "p_value": other.p_value, "run_ids": other.run_ids, "origins": [origin],
            "confirms": other.status == verdict.status and other.status in DECIDED,
        }
        for (machine, origin), other in others
    ]  # fmt: skip
    verdict.evidence = {
        "machine": machine_key(judged[0].provenance.hardware) if judged else None,
        "commits": sorted({(r.provenance.git_sha or "unknown")[:12] for r in judged}),
        "dirty": any(r.provenance.git_dirty for r in judged),
        "origins": sorted({origins.get(r.run_id, "local") for r in judged}),
        "others": shown,
        "confirmed_on": list(dict.fromkeys(other["machine"] for other in shown if other["confirms"])),
    }
    for (machine, origin), other in others:
        where = f"{machine} ({origin})"
        if other.status in DECIDED and verdict.status in DECIDED and other.status != verdict.status:
            if "fragile" not in verdict.tags:
                verdict.tags.append("fragile")
            verdict.reason += f"; fragile: the records of {where} alone give {other.status}"
        else:
            verdict.reason += f"; judged apart on {where}: {other.status} over {other.n} seed(s)"


def _evaluate(verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord], tier: str) -> None:
    """The statistics of one claim over the chosen tier's records (``base``: the baseline's, for deltas)."""
    metric = _metric_name(claim)
    if claim.kind == "trend":
        verdict.run_ids = [r.run_id for r in ours + base]
        _judge_trend(verdict, claim, ours + base)
    elif claim.kind == "delta":
        ours, base = _per_seed(ours), _per_seed(base)
        verdict.run_ids = [r.run_id for r in ours + base]
        if not base:
            verdict.status, verdict.tier, verdict.scale = "not-run", None, None
            verdict.reason = f"no {tier} results for the baseline {_baseline_name(claim)}"
            return
        if _nested(ours) or _nested(base) or claim.replicate == "condition":
            _judge_nested_delta(verdict, claim, ours, base)
            return
        values = lambda rs: {r.seed: r.metrics[metric] for r in rs}  # noqa: E731
        _judge_delta(verdict, claim, values(ours), values(base), tier)
    elif claim.kind == "arch":
        chosen = _per_seed(ours)
        verdict.run_ids = [r.run_id for r in chosen]
        _judge_arch(verdict, claim, statistics.fmean(r.metrics[metric] for r in chosen))
    else:
        chosen = _per_seed(ours)
        verdict.run_ids = [r.run_id for r in chosen]
        _judge_scalar(verdict, claim, [r.metrics[metric] for r in chosen], tier)
    verdict.machine_ids = sorted({machine_key(r.provenance.hardware) for r in ours + base})
    verdict.machines = len(verdict.machine_ids)
    _what_is_excluded(verdict, claim)


def _judge_nested_delta(verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord]) -> None:
    """Seeds that share one upstream run replicate the fine-tuning, not the upstream run: one replicate a side."""
    nested = ours if _nested(ours) else base
    diff = statistics.fmean(r.metrics[claim.metric] for r in ours) - statistics.fmean(
        r.metrics[claim.metric] for r in base
    )
    verdict.mean, verdict.n, verdict.status = diff, 1, "inconclusive"
    verdict.tags.append("nested")
    verdict.analysis = "condition means (the seeds replicate no upstream run)"
    shared = ", ".join(nested[0].parents) if nested and nested[0].parents else "declared: replicate condition"
    verdict.reason = (
        f"the {len(nested)} seeds of {nested[0].model if nested else claim.model} all start from one upstream run "
        f"({shared}): they replicate the fine-tuning only, so each arm is one replicate of what the claim varies and "
        "there is no interval; run several upstream (pre-training) seeds"
    )


def _what_is_excluded(verdict: Verdict, claim: Claim) -> None:
    """An inconclusive interval still rules out effects: say which, in the claim's unit."""
    if verdict.status != "inconclusive" or verdict.low is None or verdict.high is None or claim.kind == "arch":
        return
    what = "slopes" if claim.kind == "trend" else "differences" if claim.kind == "delta" else "means"
    unit = "" if claim.kind == "trend" else f" {claim.unit}"
    interval = "the TOST interval" if claim.equivalence else f"the {CONFIDENCE:.0%} interval"
    verdict.excluded = f"{what} below {verdict.low:.3g} and above {verdict.high:.3g}{unit} are excluded ({interval})"


def _judge_under_plan(
    verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord], records: Sequence[RunRecord],
    plan: Plan | None,
) -> tuple[list[RunRecord], list[RunRecord]]:  # fmt: skip
    """A budget claim: judged only on the records its paper's committed plan covers, after its premises pass.
    Returns the records judged (none when the claim is not judged)."""
    entry = plan.entry(claim.id) if plan else None
    if entry is None:
        _evaluate(verdict, claim, ours, base, "budget")
        shown = f"{verdict.status}: {verdict.reason}"
        verdict.status, verdict.off_plan = "off-plan", len(ours) + len(base)
        verdict.tags.append("off-plan")
        verdict.reason = (
            f"no committed plan for this budget claim: its records are shown, not judged (unplanned: {shown})"
        )
        return [], []
    if entry.untestable:
        _untestable(verdict, plan, entry, ours + base)
        return [], []
    verdict.plan = plan.path
    matching = len(ours) + len(base)
    ours, base = ([r for r in rs if on_plan(plan, entry, r) is None] for rs in (ours, base))
    verdict.off_plan = matching - len(ours) - len(base)
    if not ours:
        verdict.status, verdict.tags = "off-plan", [*verdict.tags, "off-plan"]
        verdict.run_ids = []
        verdict.reason = (
            f"none of the {verdict.off_plan} matching record(s) is under the plan ({_why_off(plan, entry)})"
        )
        return [], []
    if entry.analysis is not None and entry.analysis != claim.analysis:
        claim = claim.model_copy(update={"analysis": entry.analysis})
    _evaluate(verdict, claim, ours, base, "budget")
    _fragility(verdict, claim, ours, base, "budget")
    _power(verdict, claim, entry)
    missing = _missing_seeds(claim, entry, ours, base)
    if missing:
        verdict.status = "inconclusive"
        verdict.reason = f"the plan's stopping rule ({entry.stopping}) is not met: {missing}; so far: {verdict.reason}"
    verdict.premises = [check_premise(p, claim, records, ours + base) for p in entry.premises]
    failing = [p for p in verdict.premises if not p["passed"]]
    if failing and verdict.status != "not-run":
        verdict.status, verdict.tags = "premise-failed", [*verdict.tags, "premise-failed"]
        names = "; ".join(f"{p['id']}: {p['detail']}" for p in failing)
        verdict.reason = f"premise check(s) failed, so this regime cannot test the claim ({names}); {verdict.reason}"
    if verdict.off_plan:
        verdict.reason += f"; {verdict.off_plan} record(s) off the plan shown, not judged"
    return (ours, base) if verdict.status in JUDGED else ([], [])


def _untestable(verdict: Verdict, plan: Plan, entry: PlannedClaim, shown: list[RunRecord]) -> None:
    """The plan says no affordable budget design can test this claim (its reason, with the numbers)."""
    verdict.plan = plan.path
    verdict.status, verdict.tags = "untestable", [*verdict.tags, "untestable"]
    verdict.run_ids = [r.run_id for r in shown]
    verdict.reason = f"the plan marks this claim untestable at the budget tier: {entry.untestable}"


RESTING = {"seeds": "the seed-level interval", "paired": "the paired test over examples",
           "hierarchical": "the hierarchical bootstrap over seeds and examples"}  # fmt: skip


def _per_example(
    verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord], tier: str, results_dir: Path
) -> None:
    """Beside the seed-level interval: the paired test over the test examples and the hierarchical bootstrap over
    seeds and examples (harness.evidence). The status is the least decided of the three, and says which it rests
    on; a "no difference" claim keeps its TOST (the bootstraps test a difference)."""
    from harness.evidence import example_evidence  # numpy and the scorers: only for example-level evidence

    paired, nested = example_evidence(ours, base, results_dir, claim.metric, claim.higher_is_better)
    verdict.examples = {"paired": paired.row(), "hierarchical": nested.row(), "rests_on": "seeds"}
    if paired.method == "none" or claim.equivalence is not None or verdict.status not in DECIDED:
        return
    statuses = {"seeds": verdict.status}
    for name, evidence in (("paired", paired), ("hierarchical", nested)):
        scratch = _new_verdict(claim)
        scratch.analysis = evidence.method
        statuses[name] = _decide_delta(scratch, claim, evidence.low, evidence.high, tier)
    if len(set(statuses.values())) == 1:
        verdict.reason += f"; the per-example analyses agree ({paired.method}, hierarchical bootstrap)"
        return
    weakest = next(name for name, status in statuses.items() if status not in DECIDED or status != verdict.status)
    verdict.examples["rests_on"] = weakest
    shown = {"paired": paired, "hierarchical": nested}[weakest]
    verdict.status = "inconclusive"
    verdict.reason += (
        f"; rests on {RESTING[weakest]}, the more conservative: {shown.reason} ({statuses[weakest]} on its own)"
    )


def _why_off(plan: Plan, entry: PlannedClaim) -> str:
    return f"plan {plan.path}: recipes {entry.recipes}, seeds {entry.seeds}, fixed at {plan.fixed_at.isoformat()}"


def _missing_seeds(claim: Claim, entry: PlannedClaim, ours: list[RunRecord], base: list[RunRecord]) -> str:
    """The planned seeds an arm has not recorded yet (the stopping rule is the plan's: all of them)."""
    sides = [("model", ours)] + ([("baseline", base)] if claim.kind == "delta" else [])
    gaps = [(name, sorted(set(entry.seeds) - {r.seed for r in rs})) for name, rs in sides]
    return "; ".join(f"{name} lacks seed(s) {gap}" for name, gap in gaps if gap)


def _power(verdict: Verdict, claim: Claim, entry: PlannedClaim) -> None:
    """Seeds needed for the plan's smallest effect of interest, from the observed spread (else the pilot's)."""
    std = verdict.std if claim.kind == "delta" and verdict.std else (entry.pilot.std if entry.pilot else None)
    if claim.kind != "delta" or not std or not entry.smallest_effect:
        return
    if claim.analysis != "paired" and verdict.std:
        std = verdict.std / math.sqrt(2)  # one arm's spread, from the two arms' combined
    verdict.seeds_needed = seeds_needed(entry.smallest_effect, std, entry.alpha, claim.analysis == "paired")
    if verdict.status == "inconclusive":
        verdict.reason += (
            f"; {verdict.seeds_needed} seeds a side would see the smallest effect of interest "
            f"({entry.smallest_effect:g} {claim.unit}) at 80% power with the observed spread"
        )


def _fragility(verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord], tier: str) -> None:
    """Fragile: one seed fewer would give another status. (The records a verdict rests on come from one machine
    and origin; another machine's own status that contradicts it is :func:`_record_evidence`'s.)"""
    if verdict.status not in DECIDED or tier in DETERMINISTIC_TIERS:
        return
    for seed in sorted({r.seed for r in ours + base}):
        other = _status_of(claim, [r for r in ours if r.seed != seed], [r for r in base if r.seed != seed], tier)
        if other != verdict.status:
            verdict.tags.append("fragile")
            verdict.reason += f"; fragile: without seed {seed} it would be {other}"
            return


def _status_of(claim: Claim, ours: list[RunRecord], base: list[RunRecord], tier: str) -> str:
    scratch = _new_verdict(claim)
    if ours:
        _evaluate(scratch, claim, ours, base, tier)
    return scratch.status


def holm(verdicts: list[Verdict]) -> None:
    """Holm's step-down adjustment over a paper's budget verdicts that have a p-value (in place). A decided verdict
    whose adjusted p no longer reaches its alpha becomes inconclusive, tagged ``holm``; the raw interval stays."""
    tested = [v for v in verdicts if v.scale == "budget" and v.p_value is not None and v.status in JUDGED]
    ordered = sorted(tested, key=lambda v: v.p_value)
    running = 0.0
    for rank, verdict in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * verdict.p_value))
        verdict.p_holm = running
    for verdict in tested:
        if verdict.status in DECIDED and verdict.p_holm >= HOLM_ALPHA:
            verdict.tags.append("holm")
            verdict.reason += (
                f"; {verdict.status} on its own (p = {verdict.p_value:.3g}), but not after Holm's correction over "
                f"the paper's {len(tested)} budget tests (p = {verdict.p_holm:.3g})"
            )
            verdict.status = "inconclusive"


def _baseline_name(claim: Claim) -> str:
    """``'bert-base'``, or ``'bert-base' of paper 'xlnet'`` for another paper's baseline."""
    name = repr(claim.baseline_model)
    return name if claim.baseline_paper == claim.paper else f"{name} of paper {claim.baseline_paper!r}"


def _explain_not_run(verdict: Verdict, usable: list[RunRecord], failed: list[RunRecord]) -> None:
    allowed = ", ".join(JUDGING_TIERS[verdict.kind])
    if usable:
        tiers = sorted({r.tier for r in usable})
        verdict.tier = _best_tier(usable, TIER_ORDER)
        verdict.n = len(usable)
        verdict.run_ids = [r.run_id for r in usable]
        verdict.reason = f"only {', '.join(tiers)} results, which never judge a {verdict.kind} claim (needs {allowed})"
    elif failed:
        verdict.reason = f"{len(failed)} matching run(s), all failed or diverged"
    else:
        verdict.reason = f"no matching results (a {verdict.kind} claim is judged by tier {allowed})"


def judge_all(
    claims: Sequence[Claim], records: Sequence[RunRecord], plans: dict[str, Plan] | None = None
) -> list[Verdict]:
    """Every claim's verdict; each is judged over its own paper's records and, for a baseline of another paper,
    that paper's too; each paper's budget verdicts are then corrected for multiplicity (Holm)."""
    by_paper: dict[str, list[RunRecord]] = {}
    for record in records:
        by_paper.setdefault(record.paper, []).append(record)
    verdicts = []
    for claim in claims:
        papers = dict.fromkeys([claim.paper, claim.baseline_paper])
        chosen = [r for paper in papers for r in by_paper.get(paper, [])]
        verdicts.append(judge(claim, chosen, (plans or {}).get(claim.paper)))
    for paper in dict.fromkeys(v.paper for v in verdicts):
        holm([v for v in verdicts if v.paper == paper])
    return verdicts
