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
from typing import Any

from harness.claims import Claim
from harness.records import RunRecord
from harness.tiers import DETERMINISTIC_TIERS, JUDGING_TIERS, TIER_ORDER

# premise-failed: the budget regime cannot test the claim (a premise check failed); untestable: the plan says the
# tier cannot afford the seeds the claim needs; off-plan: records exist but none under the paper's committed plan;
# deviation: an arch count that differs from the paper's for a reviewed reason (never counted as reproduced)
STATUSES = (
    "reproduced", "not-reproduced", "inconclusive", "not-run", "premise-failed", "untestable", "off-plan", "deviation",
)  # fmt: skip
MIN_SEEDS = 2
MIN_TREND_POINTS = 3
CONFIDENCE = 0.95
EXACT_SPEARMAN_MAX = 8  # 8! = 40,320 pairings
EPS = 1e-9
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

    def row(self) -> dict[str, Any]:
        return asdict(self)

    def report(self) -> dict[str, Any]:
        """The ``harness report --json`` object: DESIGN.md's keys, plus ``reason``."""
        data = {key: getattr(self, key) for key in REPORT_KEYS}
        data["reason"] = self.reason
        return data


def _lookup(record: RunRecord, dotted: str) -> Any:
    """The record's value at ``metrics.<name>`` or ``config.<dotted.path>``; None when absent."""
    head, _, rest = dotted.partition(".")
    node: Any = record.metrics if head == "metrics" else (record.config or {})
    for part in rest.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


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
        and claim.metric in record.metrics
        and (claim.protocol is None or record.protocol == claim.protocol)
        and all(_lookup(record, f"config.{key}") == value for key, value in conditions.items())
    )


def _per_seed(records: Sequence[RunRecord]) -> list[RunRecord]:
    """One record per seed: the latest finished, so a re-run with newer code supersedes the old one."""
    latest: dict[int, RunRecord] = {}
    for record in records:
        if record.seed not in latest or record.finished_at > latest[record.seed].finished_at:
            latest[record.seed] = record
    return [latest[seed] for seed in sorted(latest)]


def _t_halfwidth(std: float, n: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * std / math.sqrt(n))


def _against_band(low: float, high: float, reported: float, tolerance: float) -> str:
    """Compare an interval [low, high] with the band reported ± tolerance."""
    band_low, band_high = reported - tolerance - EPS, reported + tolerance + EPS
    if band_low <= low and high <= band_high:
        return "reproduced"
    if high < band_low or low > band_high:
        return "not-reproduced"
    return "inconclusive"


def _summarise(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def _judge_scalar(verdict: Verdict, claim: Claim, values: list[float], tier: str) -> None:
    mean, std = _summarise(values)
    verdict.mean, verdict.std, verdict.n, verdict.delta = mean, std, len(values), mean - claim.value
    band = f"{claim.value} ± {claim.tolerance}"
    if tier in DETERMINISTIC_TIERS:
        verdict.status = _against_band(mean, mean, claim.value, claim.tolerance)
        verdict.reason = f"{tier} result {mean:.6g} against {band} (deterministic: no interval)"
    elif len(values) < MIN_SEEDS:
        verdict.status = "inconclusive"
        verdict.reason = f"{len(values)} seed(s) at tier {tier}: at least {MIN_SEEDS} needed for an interval"
    else:
        half = _t_halfwidth(std, len(values))
        verdict.status = _against_band(mean - half, mean + half, claim.value, claim.tolerance)
        verdict.reason = f"{CONFIDENCE:.0%} t-interval [{mean - half:.4g}, {mean + half:.4g}] against {band}"


def _judge_delta(verdict: Verdict, claim: Claim, ours: list[float], theirs: list[float], tier: str) -> None:
    diff = statistics.fmean(ours) - statistics.fmean(theirs)
    verdict.mean, verdict.n, verdict.delta = diff, min(len(ours), len(theirs)), diff - claim.value
    verdict.std = math.sqrt(statistics.variance(ours) + statistics.variance(theirs)) if verdict.n > 1 else None
    if tier in DETERMINISTIC_TIERS:
        low = high = diff
    elif verdict.n < MIN_SEEDS:
        verdict.status = "inconclusive"
        verdict.reason = f"{len(ours)} and {len(theirs)} seed(s) at tier {tier}: at least {MIN_SEEDS} each needed"
        return
    else:
        low, high = _welch_interval(ours, theirs)
    if tier == "budget":  # small scale: only the direction of the difference is judged
        sign = 1 if claim.value >= 0 else -1
        low, high = sorted((sign * low, sign * high))
        verdict.status = "reproduced" if low > 0 else "not-reproduced" if high < 0 else "inconclusive"
        verdict.reason = f"budget tier judges the sign only: difference interval [{low:.4g}, {high:.4g}] (signed)"
    else:
        verdict.status = _against_band(low, high, claim.value, claim.tolerance)
        verdict.reason = f"difference interval [{low:.4g}, {high:.4g}] against {claim.value} ± {claim.tolerance}"


def _welch_interval(ours: list[float], theirs: list[float]) -> tuple[float, float]:
    from scipy import stats

    diff = statistics.fmean(ours) - statistics.fmean(theirs)
    va, vb = statistics.variance(ours) / len(ours), statistics.variance(theirs) / len(theirs)
    se = math.sqrt(va + vb)
    if se == 0:
        return diff, diff
    dof = (va + vb) ** 2 / (va**2 / (len(ours) - 1) + vb**2 / (len(theirs) - 1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof)) * se
    return diff - half, diff + half


def spearman(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value. Up to ``EXACT_SPEARMAN_MAX`` points the p-value is exact: the
    share of all n! pairings of the y ranks with the x ranks whose |rho| reaches the observed one. The usual
    t-approximation gives p = 0 for any perfect ranking, however few the points (4 points: exact p = 1/12)."""
    import itertools

    import numpy as np
    from scipy import stats

    result = stats.spearmanr(xs, ys)
    rho = float(result.statistic)
    if len(xs) > EXACT_SPEARMAN_MAX:
        return rho, float(result.pvalue)
    rx, ry = stats.rankdata(xs), stats.rankdata(ys)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return rho, float("nan")
    pairings = np.array(list(itertools.permutations(ry)))
    cx = rx - rx.mean()
    cy = pairings - pairings.mean(axis=1, keepdims=True)
    rhos = (cy @ cx) / (np.linalg.norm(cx) * np.linalg.norm(cy, axis=1))
    return rho, float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


def _judge_trend(verdict: Verdict, claim: Claim, records: list[RunRecord]) -> None:
    from scipy import stats

    rule = claim.rule
    points = [(float(x), float(y)) for x, y, _ in _trend_xy(claim, records)]
    if rule.type == "loglog-slope":
        points = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    verdict.n = len(points)
    if len(points) < MIN_TREND_POINTS or len({x for x, _ in points}) < 2:
        verdict.status = "inconclusive"
        verdict.reason = f"{len(points)} usable point(s) for {rule.x} vs {rule.y}: at least {MIN_TREND_POINTS} needed"
        return
    xs, ys = zip(*points, strict=True)
    if rule.type == "rank-correlation":
        rho, p_value = spearman(xs, ys)
        verdict.mean = float(rho)
        significant = p_value < rule.alpha
        agrees = rho * rule.sign > 0
        verdict.status = "inconclusive" if not significant else "reproduced" if agrees else "not-reproduced"
        verdict.reason = f"Spearman rho={rho:.3f} (p={p_value:.3g}, alpha={rule.alpha}), expected sign {rule.sign:+d}"
    else:
        fit = stats.linregress(xs, ys)
        stderr = fit.stderr if math.isfinite(fit.stderr) else 0.0  # y constant: a flat line, known exactly
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(points) - 2)) * stderr
        verdict.mean, verdict.std = float(fit.slope), float(stderr)
        centre, width = (rule.min + rule.max) / 2, (rule.max - rule.min) / 2
        verdict.status = _against_band(fit.slope - half, fit.slope + half, centre, width)
        verdict.reason = (
            f"log-log slope {fit.slope:.3f}, {CONFIDENCE:.0%} interval [{fit.slope - half:.3f}, "
            f"{fit.slope + half:.3f}] against [{rule.min}, {rule.max}]"
        )


def _xy(claim: Claim, record: RunRecord) -> tuple[Any, Any] | None:
    x, y = _lookup(record, claim.rule.x), _lookup(record, claim.rule.y)
    return (x, y) if isinstance(x, int | float) and isinstance(y, int | float) else None


def _trend_xy(claim: Claim, records: Sequence[RunRecord]) -> list[tuple[Any, Any, RunRecord]]:
    """``(x, y, record)`` of each record that has both. With a ``baseline``, the points are the claim's own records,
    each paired with the baseline's record of the same seed and x (the latest of each), and y is their difference."""
    if claim.baseline is None:
        return [(*xy, r) for r in records if (xy := _xy(claim, r)) is not None]
    ours: dict[tuple[int, Any], RunRecord] = {}
    theirs: dict[tuple[int, Any], RunRecord] = {}
    for record in sorted(records, key=lambda r: r.finished_at):
        side = ours if matches(claim, record) else theirs if matches(claim, record, baseline=True) else None
        if side is not None and (xy := _xy(claim, record)) is not None:
            side[(record.seed, xy[0])] = record
    return [
        (key[1], _xy(claim, record)[1] - _xy(claim, theirs[key])[1], record)
        for key, record in sorted(ours.items(), key=lambda item: (item[0][1], item[0][0]))
        if key in theirs
    ]


def trend_points(claim: Claim, records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """The points of a trend claim's curve: the rule's x and y (as recorded, before any log; with a baseline, y is
    the difference to the paired baseline record) of each record that has both, with its model, seed and run id,
    sorted by x. Ingest stores them for the leaderboard's trend charts."""
    points = [
        {"x": x, "y": y, "model": record.model, "seed": record.seed, "run_id": record.run_id}
        for x, y, record in _trend_xy(claim, records)
    ]
    return sorted(points, key=lambda p: (p["x"], p["model"], p["seed"]))


def _best_tier(records: Sequence[RunRecord], allowed: Sequence[str]) -> str | None:
    present = {r.tier for r in records}
    return next((tier for tier in TIER_ORDER if tier in present and tier in allowed), None)


def judge(claim: Claim, records: Sequence[RunRecord]) -> Verdict:
    """The verdict for one claim over all records (the matching ones, the baseline's included, are selected
    here)."""
    verdict = Verdict(
        paper=claim.paper, claim_id=claim.id, kind=claim.kind, model=claim.model, dataset=claim.dataset,
        split=claim.split, metric=claim.metric, reported=claim.value, tolerance=claim.tolerance,
    )  # fmt: skip
    matching = [r for r in records if matches(claim, r)]
    failed = [r for r in matching if r.status != "ok"]
    usable = [r for r in matching if r.status == "ok"]
    tier = _best_tier(usable, JUDGING_TIERS[claim.kind])
    if tier is None:
        _explain_not_run(verdict, usable, failed)
        return verdict
    chosen = [r for r in usable if r.tier == tier]
    verdict.tier = tier
    if claim.kind == "trend":
        if claim.baseline is not None:  # the paired baseline records of the same tier
            chosen += [r for r in records if matches(claim, r, baseline=True) and r.tier == tier and r.status == "ok"]
        verdict.run_ids = [r.run_id for r in chosen]
        _judge_trend(verdict, claim, chosen)
    elif claim.kind == "delta":
        _judge_delta_records(verdict, claim, chosen, [r for r in records if matches(claim, r, baseline=True)], tier)
    else:
        chosen = _per_seed(chosen)
        verdict.run_ids = [r.run_id for r in chosen]
        _judge_scalar(verdict, claim, [r.metrics[claim.metric] for r in chosen], tier)
    if failed:
        verdict.reason += f"; {len(failed)} failed/diverged run(s) not counted"
    return verdict


def _judge_delta_records(verdict: Verdict, claim: Claim, ours: list[RunRecord], base: list[RunRecord], tier: str):
    ours = _per_seed(ours)
    theirs = _per_seed([r for r in base if r.tier == tier and r.status == "ok"])
    verdict.run_ids = [r.run_id for r in ours + theirs]
    if not theirs:
        verdict.status, verdict.tier = "not-run", None
        verdict.reason = f"no {tier} results for the baseline {_baseline_name(claim)}"
        return
    metric = claim.metric
    _judge_delta(verdict, claim, [r.metrics[metric] for r in ours], [r.metrics[metric] for r in theirs], tier)


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


def judge_all(claims: Sequence[Claim], records: Sequence[RunRecord]) -> list[Verdict]:
    """Every claim's verdict; each is judged over its own paper's records and, for a baseline of another paper,
    that paper's too."""
    by_paper: dict[str, list[RunRecord]] = {}
    for record in records:
        by_paper.setdefault(record.paper, []).append(record)
    verdicts = []
    for claim in claims:
        papers = dict.fromkeys([claim.paper, claim.baseline_paper])
        verdicts.append(judge(claim, [r for paper in papers for r in by_paper.get(paper, [])]))
    return verdicts
