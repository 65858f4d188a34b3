"""A trend claim with a baseline is judged on paired differences: each record minus the baseline's record of the same
seed and x (ULMFiT's "the gain of pre-training shrinks as labels grow")."""

from __future__ import annotations

import pytest

from harness.claims import Claim
from harness.verdicts import judge, trend_points
from tests.conftest import make_plan, make_record

BASE = {"id": "gain", "paper": "toy-paper", "arxiv": "2001.00001v2", "source": "Figure 3", "dataset": "digits",
        "split": "test", "unit": "%", "higher_is_better": False, "kind": "trend", "model": "toy-mlp",
        "metric": "error", "statement": "the gain shrinks", "conditions": {"recipe": "tuned"},
        "rule": {"type": "rank-correlation", "x": "config.labels", "y": "metrics.error", "sign": 1},
        "baseline": {"paper": "toy-paper", "model": "toy-mlp", "conditions": {"recipe": "scratch"}}}  # fmt: skip


def _runs(recipe: str, error) -> list:
    return [
        make_record(
            run_id=f"{recipe}-{labels}-{seed}",
            seed=seed,
            tier="budget",
            metrics={"error": error(labels, seed)},
            config={"recipe": recipe, "labels": labels},
            finished_at=f"2026-01-01T00:0{seed}:00Z",
        )  # fmt: skip
        for labels in (2, 8, 32)
        for seed in range(4)
    ]


def judge_planned(claim, records):
    return judge(claim, records, make_plan(records, claims=(claim.id,)))


def test_paired_differences_decide_the_trend_either_way() -> None:
    claim = Claim.model_validate(BASE)
    scratch = _runs("scratch", lambda n, s: 90 - n + s)  # both fall with labels ...
    shrinking = _runs("tuned", lambda n, s: 90 - n + s - 40 / n)  # ... the tuned gain 20, 5, 1.25: shrinks
    growing = _runs("tuned", lambda n, s: 90 - n + s - n / 4)  # gain 0.5, 2, 8: grows
    verdict = judge_planned(claim, shrinking + scratch)
    assert (verdict.status, verdict.n, verdict.mean) == ("reproduced", 12, pytest.approx(1.0))
    assert judge_planned(claim, growing + scratch).status == "not-reproduced"
    # read as a plain trend (no baseline), the baseline's own errors fall with labels: the opposite sign
    plain = Claim.model_validate({**BASE, "baseline": None, "conditions": {"recipe": "scratch"}})
    assert judge_planned(plain, shrinking + scratch).status == "not-reproduced"


def test_points_are_the_differences_and_unpaired_records_drop_out() -> None:
    claim = Claim.model_validate(BASE)
    tuned = _runs("tuned", lambda n, s: 50.0)
    scratch = [r for r in _runs("scratch", lambda n, s: 60.0) if r.seed != 3]  # seed 3 has no baseline
    points = trend_points(claim, tuned + scratch)
    assert len(points) == 9 and {p["y"] for p in points} == {-10.0} and {p["seed"] for p in points} == {0, 1, 2}
    assert judge_planned(claim, tuned).status == "inconclusive"  # no baseline records: no points


def test_a_baseline_is_still_refused_on_scalar_claims() -> None:
    with pytest.raises(ValueError, match="only for delta and trend claims"):
        Claim.model_validate({**BASE, "kind": "scalar", "value": 1.0, "tolerance": 1.0, "rule": None})
