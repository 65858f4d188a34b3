"""The decision rules of docs/verdicts.md, case by case."""

from __future__ import annotations

import itertools

import pytest

from harness.claims import Claim
from harness.verdicts import judge, judge_all
from tests.conftest import make_plan, make_record

BASE = {"paper": "toy-paper", "arxiv": "2001.00001v2", "source": "Table 2", "dataset": "digits", "split": "test",
        "unit": "%", "higher_is_better": True}  # fmt: skip


def claim(**fields) -> Claim:
    defaults = {"id": "c", "kind": "scalar", "model": "toy-mlp", "metric": "accuracy", "value": 95.0, "tolerance": 1.0}
    return Claim.model_validate({**BASE, **defaults, **fields})


def runs(values, tier="full", model="toy-mlp", **fields):
    fields.setdefault("config", {"model": model})
    return [
        make_record(seed=i, tier=tier, model=model, metrics={"accuracy": v}, **fields) for i, v in enumerate(values)
    ]


def planned(claim_, records, **entry):
    """The claim judged under a plan that covers exactly these records."""
    return judge(claim_, records, make_plan(records, claims=(claim_.id,), **entry))


@pytest.mark.parametrize(
    ("values", "status"),
    [
        ([94.9, 95.0, 95.1], "reproduced"),  # interval well inside 95 ± 1
        ([90.0, 90.1, 89.9], "not-reproduced"),  # interval entirely below the band
        ([95.5, 96.5, 96.0], "inconclusive"),  # interval straddles the upper edge 96
        ([95.0], "inconclusive"),  # one seed at a training tier: no interval
        ([80.0], "inconclusive"),  # ... even when far off: the noise is unknown
    ],
)
def test_scalar_t_interval(values, status) -> None:
    verdict = judge(claim(), runs(values))
    assert (verdict.status, verdict.tier, verdict.n) == (status, "full", len(values))
    assert verdict.delta == pytest.approx(sum(values) / len(values) - 95.0)


def test_weights_tier_is_deterministic_so_one_evaluation_decides() -> None:
    assert judge(claim(), runs([95.8], tier="weights")).status == "reproduced"
    assert judge(claim(), runs([96.2], tier="weights")).status == "not-reproduced"


def test_full_outranks_weights_and_smoke_never_judges() -> None:
    records = runs([95.0, 95.1], tier="full") + runs([80.0], tier="weights")
    assert judge(claim(), records).tier == "full"
    smoke = judge(claim(), runs([95.0, 95.0, 95.0], tier="smoke"))
    assert (smoke.status, smoke.tier, smoke.n) == ("not-run", "smoke", 3)
    assert "never judge a scalar claim" in smoke.reason
    budget = judge(claim(), runs([95.0, 95.0, 95.0], tier="budget"))
    assert budget.status == "not-run"


def test_latest_record_per_seed_counts_once() -> None:
    old = make_record(seed=0, metrics={"accuracy": 50.0}, run_id="old", finished_at="2026-01-01T00:00:00Z")
    new = make_record(seed=0, metrics={"accuracy": 95.0}, run_id="new", finished_at="2026-02-01T00:00:00Z")
    verdict = judge(claim(), [old, new, make_record(seed=1, metrics={"accuracy": 95.1}, run_id="other")])
    assert verdict.n == 2 and verdict.mean == pytest.approx(95.05) and "old" not in verdict.run_ids


def test_matching_respects_protocol_conditions_dataset_and_status() -> None:
    records = runs([95.0, 95.1], protocol="other-protocol")
    assert judge(claim(protocol="toy-holdout"), records).status == "not-run"
    assert judge(claim(), records).status == "reproduced"  # no protocol on the claim: any protocol matches
    with_config = runs([95.0, 95.1], config={"data": {"labels": 4000}})
    assert judge(claim(conditions={"data.labels": 4000}), with_config).n == 2
    assert judge(claim(conditions={"data.labels": 250}), with_config).status == "not-run"
    assert judge(claim(dataset="cifar-10"), runs([95.0, 95.0])).status == "not-run"
    failed = runs([95.0, 95.1]) + [make_record(seed=9, status="failed", metrics={"accuracy": 0.0}, run_id="f")]
    verdict = judge(claim(), failed)
    assert verdict.n == 2 and "1 failed/diverged run(s) not counted" in verdict.reason


def test_arch_claims_use_the_arch_tier_only() -> None:
    arch = claim(kind="arch", metric="params_m", value=1.21, tolerance=0.005, split="none", higher_is_better=False)
    record = make_record(tier="arch", split="none", metrics={"params_m": 1.214})
    assert judge(arch, [record]).status == "reproduced"
    assert judge(arch, [make_record(tier="arch", split="none", metrics={"params_m": 1.3})]).status == "not-reproduced"


def delta_claim(value=2.0, tolerance=1.0):
    return claim(kind="delta", model="toy-mlp-wide", baseline="toy-mlp", value=value, tolerance=tolerance)


def test_delta_at_budget_judges_the_sign_only() -> None:
    base = runs([90.0, 90.2, 89.8], tier="budget")
    better = runs([90.6, 90.8, 90.7], tier="budget", model="toy-mlp-wide")
    worse = runs([88.0, 88.2, 87.9], tier="budget", model="toy-mlp-wide")
    same = runs([90.5, 89.5, 90.0], tier="budget", model="toy-mlp-wide")
    assert planned(delta_claim(), base + better).status == "reproduced"  # +0.7, not +2: the size is not judged here
    assert planned(delta_claim(), base + worse).status == "not-reproduced"
    assert planned(delta_claim(), base + same).status == "inconclusive"
    assert planned(delta_claim(value=-1.0), base + worse).status == "reproduced"


def test_delta_at_full_scale_judges_the_size() -> None:
    base = runs([90.0, 90.1, 89.9])
    assert judge(delta_claim(), base + runs([92.0, 92.1, 91.9], model="toy-mlp-wide")).status == "reproduced"
    assert judge(delta_claim(), base + runs([95.0, 95.1, 94.9], model="toy-mlp-wide")).status == "not-reproduced"
    lonely = judge(delta_claim(), runs([92.0, 92.1], model="toy-mlp-wide"))
    assert lonely.status == "not-run" and "baseline" in lonely.reason


def test_a_baseline_of_another_paper_is_judged_from_that_papers_records() -> None:
    """UDA against a BERT baseline that XLNet's reproduction ran: the baseline's records are the other paper's, and
    its conditions (config keys of that paper) may differ from the claim's."""
    uda = claim(
        paper="uda", kind="delta", model="uda-bert", value=2.0, tolerance=1.0, conditions={"data.labels": 20},
        baseline={"paper": "xlnet", "model": "bert-base", "conditions": {"labelled": 20}},
    )  # fmt: skip
    ours = runs([92.0, 92.1, 91.9], model="uda-bert", paper="uda", config={"data": {"labels": 20}})
    theirs = runs([90.0, 90.1, 89.9], model="bert-base", paper="xlnet", config={"labelled": 20})
    other_count = runs([85.0, 85.1, 84.9], model="bert-base", paper="xlnet", config={"labelled": 4000})
    same_model_here = runs([10.0, 10.0, 10.0], model="bert-base", paper="uda", config={"labelled": 20})
    (verdict,) = judge_all([uda], ours + theirs + other_count + same_model_here)
    assert (verdict.status, verdict.tier, verdict.n) == ("reproduced", "full", 3)
    assert verdict.mean == pytest.approx(2.0) and len(verdict.run_ids) == 6
    (alone,) = judge_all([uda], ours + same_model_here)
    assert alone.status == "not-run" and alone.reason == "no full results for the baseline 'bert-base' of paper 'xlnet'"


def trend_claim(rule):
    return claim(id="t", kind="trend", model="toy-mlp*", value=None, tolerance=None, statement="grows", rule=rule)


def width_runs(pairs):
    return [
        make_record(
            seed=i, tier="budget", model=f"toy-mlp-{w}", run_id=f"r{i}", metrics={"accuracy": acc}, config={"width": w}
        )  # fmt: skip
        for i, (w, acc) in enumerate(pairs)
    ]


def test_trend_rank_correlation_can_come_out_either_way() -> None:
    rule = {"type": "rank-correlation", "x": "config.width", "y": "metrics.accuracy", "sign": 1}
    rising = width_runs([(w, 80 + w / 10 + s) for w in (8, 16, 32, 64, 128) for s in (0, 0.1)])
    falling = width_runs([(w, 95 - w / 10 + s) for w in (8, 16, 32, 64, 128) for s in (0, 0.1)])
    flat = width_runs([(8, 90), (16, 91), (32, 89), (64, 90.5)])
    assert planned(trend_claim(rule), rising).status == "reproduced"
    assert planned(trend_claim(rule), falling).status == "not-reproduced"
    assert planned(trend_claim(rule), flat).status == "inconclusive"
    assert planned(trend_claim(rule), flat[:2]).status == "inconclusive"


def test_trend_loglog_slope_interval() -> None:
    rule = {"type": "loglog-slope", "x": "config.width", "y": "metrics.accuracy", "min": 0.8, "max": 1.2}
    proportional = width_runs([(w, 2.0 * w * f) for w in (4, 8, 16, 32, 64) for f in (0.98, 1.02)])
    sqrt_law = width_runs([(w, 2.0 * w**0.5 * f) for w in (4, 8, 16, 32, 64) for f in (0.98, 1.02)])
    verdict = planned(trend_claim(rule), proportional)
    assert verdict.status == "reproduced" and verdict.mean == pytest.approx(1.0, abs=0.01)
    assert planned(trend_claim(rule), sqrt_law).status == "not-reproduced"


def test_a_loglog_trend_without_any_scatter_has_no_interval() -> None:
    """Points exactly on a line (a flat one here) give a slope with a standard error of 0: no estimate of the noise,
    so no interval, which is inconclusive (docs/verdicts.md, "Zero spread"); it was judged as known exactly."""
    rule = {"type": "loglog-slope", "x": "config.width", "y": "metrics.accuracy", "min": 0.8, "max": 1.2}
    flat = width_runs([(w, 50.0) for w in (4, 8, 16, 32)])
    verdict = planned(trend_claim(rule), flat)
    assert (verdict.status, verdict.mean) == ("inconclusive", 0.0) and "zero spread" in verdict.reason


def test_spearman_p_value_is_exact_for_few_points() -> None:
    from harness.stats import spearman

    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == (pytest.approx(1.0), pytest.approx(2 / 24))
    assert spearman([1, 2, 3], [3, 2, 1]) == (pytest.approx(-1.0), pytest.approx(2 / 6))
    rho, p = spearman([1, 2, 3, 4, 5, 6], [1, 3, 2, 4, 6, 5])
    brute = [
        sum((a - b) ** 2 for a, b in zip(range(6), perm, strict=True)) for perm in itertools.permutations(range(6))
    ]
    observed = sum((a - b) ** 2 for a, b in zip(range(6), [0, 2, 1, 3, 5, 4], strict=True))
    assert rho == pytest.approx(1 - 6 * observed / (6 * 35))
    assert p == pytest.approx(sum(abs(35 - d) >= abs(35 - observed) for d in brute) / 720)


def test_a_perfect_ranking_of_four_widths_is_not_significant() -> None:
    rule = {"type": "rank-correlation", "x": "config.width", "y": "metrics.accuracy", "sign": 1}
    verdict = planned(trend_claim(rule), width_runs([(8, 90), (16, 91), (32, 92), (64, 93)]))
    assert verdict.status == "inconclusive" and "p=0.0833" in verdict.reason
