"""The statistics the verdicts rest on (docs/verdicts.md): Student-t intervals, paired and Welch differences of means,
Spearman's rank correlation with an exact p for few points, and the comparison of an interval with a band.
Pure functions of numbers; scipy is imported on use."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_SEEDS = 2
CONFIDENCE = 0.95
EXACT_SPEARMAN_MAX = 8  # 8! = 40,320 pairings
EPS = 1e-9


def t_quantile(confidence: float, dof: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + confidence / 2, dof))


def against_band(low: float, high: float, reported: float, tolerance: float) -> str:
    """Compare an interval [low, high] with the band reported ± tolerance."""
    band_low, band_high = reported - tolerance - EPS, reported + tolerance + EPS
    if band_low <= low and high <= band_high:
        return "reproduced"
    if high < band_low or low > band_high:
        return "not-reproduced"
    return "inconclusive"


def summarise(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


ZERO_SPREAD = (
    "zero spread between the {n} {what}: no estimate of the run-to-run noise, so no interval (bit-deterministic "
    "arms, or too few distinct outcomes); vary what a seed changes, or run the claim at a tier with noise"
)


@dataclass(frozen=True)
class Difference:
    """A difference of means with its standard error and degrees of freedom (``se`` 0: no spread at all)."""

    diff: float
    se: float
    dof: float
    n: int
    std: float | None
    analysis: str

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        half = t_quantile(confidence, self.dof) * self.se
        return self.diff - half, self.diff + half

    def p_value(self) -> float:
        from scipy import stats

        return float(2 * stats.t.sf(abs(self.diff) / self.se, self.dof))

    def tost_p(self, margin: float) -> float:
        """The p-value of two one-sided tests against ``[-margin, margin]``: the larger of the two one-sided p."""
        from scipy import stats

        p_low = float(stats.t.sf((self.diff + margin) / self.se, self.dof))
        p_high = float(stats.t.cdf((self.diff - margin) / self.se, self.dof))
        return max(p_low, p_high)


def difference(ours: dict[int, float], theirs: dict[int, float], paired: bool) -> Difference | str:
    """Model minus baseline over seeds: the paired t of the per-seed differences (seeds on both sides) or Welch's
    unpaired t; a string says why there is none (too few seeds, or zero spread)."""
    if paired:
        seeds = sorted(set(ours) & set(theirs))
        diffs = [ours[s] - theirs[s] for s in seeds]
        if len(diffs) < MIN_SEEDS:
            return f"{len(diffs)} seed(s) on both sides: at least {MIN_SEEDS} pairs needed for a paired interval"
        mean, std = summarise(diffs)
        if std == 0:
            return ZERO_SPREAD.format(n=len(diffs), what="per-seed differences")
        return Difference(mean, std / math.sqrt(len(diffs)), len(diffs) - 1, len(diffs), std, _paired(len(diffs)))
    a, b = list(ours.values()), list(theirs.values())
    if min(len(a), len(b)) < MIN_SEEDS:
        return f"{len(a)} and {len(b)} seed(s): at least {MIN_SEEDS} each needed"
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(a) - statistics.fmean(b)
    if va + vb == 0:
        return ZERO_SPREAD.format(n=len(a) + len(b), what="seeds of the two arms")
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    std = math.sqrt(statistics.variance(a) + statistics.variance(b))
    return Difference(
        diff, math.sqrt(va + vb), dof, min(len(a), len(b)), std, f"Welch t over {len(a)} + {len(b)} seeds"
    )


def _paired(n: int) -> str:
    return f"paired t over {n} seeds (differences within each seed)"


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
