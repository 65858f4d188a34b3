"""``harness report`` over verdicts with the evidence fields of store version 6: the paper's numbers apart from the
direction at budget scale, a summary per scale and status, and ``--json`` with DESIGN.md's keys plus the new ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli_json, harness_cli
from tests.leaderboard.conftest import MCNEMAR, PLAN, build_evidence

DESIGN_KEYS = {"paper", "claim_id", "kind", "model", "dataset", "split", "metric", "reported", "tolerance", "status",
               "tier", "mean", "std", "n", "delta"}  # fmt: skip
EVIDENCE_KEYS = {"reason", "scale", "analysis", "low", "high", "p_value", "p_holm", "excluded", "seeds_needed",
                 "machines", "machine_ids", "tags", "premises", "plan", "examples", "off_plan", "evidence"}  # fmt: skip


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    build_evidence(work)
    return work


def test_report_json_keeps_designs_keys_and_adds_the_evidence(work: Path, toy_site: Path) -> None:
    rows = {row["claim_id"]: row for row in cli_json("report", cwd=work, site=toy_site)}
    assert all(set(row) == DESIGN_KEYS | EVIDENCE_KEYS for row in rows.values())
    wide = rows["wide-beats-narrow"]
    assert (wide["scale"], wide["status"], wide["low"], wide["high"], wide["p_value"], wide["p_holm"]) == (
        "budget", "reproduced", 0.9, 2.3, 0.021, 0.084,
    )  # fmt: skip
    assert wide["delta"] is None and wide["examples"] == MCNEMAR and wide["plan"] == PLAN  # sign only: no Δ
    assert wide["premises"] == [
        {"id": "baseline-learns", "check": "baseline accuracy > 50", "passed": True, "detail": "61.3 > 50"}
    ]
    assert (wide["machines"], wide["machine_ids"]) == (2, ["x86_64-avx2", "x86_64-avx512"])
    assert rows["mlp-accuracy"]["delta"] == 0.0 and rows["mlp-accuracy"]["scale"] == "paper"
    assert rows["mlp-params"]["tags"] == ["derived"]
    assert rows["bow-beats-mlp"]["tags"] == ["premise-failed", "constructed"]
    assert (rows["wide-beats-bow"]["excluded"], rows["wide-beats-bow"]["seeds_needed"]) == (
        "a loss of more than 0.7 points", 12,
    )  # fmt: skip
    old = rows["bow-old-judge"]  # written before the evidence fields: nulls are tolerated, the scale is its tier's
    assert (old["scale"], old["tags"], old["premises"], old["examples"], old["delta"]) == ("budget", [], [], None, None)


def test_report_shows_the_budget_direction_apart(work: Path, toy_site: Path) -> None:
    done = harness_cli("report", cwd=work, site=toy_site)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    numbers, budget, summary = out.strip().split("\n\n")
    assert numbers.startswith("The paper's numbers\n") and budget.startswith("Direction at budget scale")
    header = numbers.splitlines()[1].split()
    assert {"reported", "tolerance", "delta", "tags", "machines"} <= set(header)  # on how many machines it rests
    assert "wide-beats-narrow" not in numbers and "mlp-accuracy" in numbers
    budget_header = budget.splitlines()[1].split()
    assert {"status", "interval", "p", "p_holm", "analysis", "tags", "machines"} <= set(budget_header)
    assert not {"reported", "tolerance", "delta"} & set(budget_header)  # the sign is judged, not the size
    wide = next(line for line in budget.splitlines() if line.startswith("toy-paper  wide-beats-narrow"))
    assert "[0.9, 2.3]" in wide and "0.021" in wide and "0.084" in wide and "paired t over 3 seeds" in wide
    failed = next(line for line in budget.splitlines() if "bow-beats-mlp" in line)
    assert "premise-failed" in failed and "constructed" in failed
    assert summary == (
        "8 claim(s). Paper's numbers (3): 1 reproduced, 0 not-reproduced, 0 inconclusive, 0 not-run, "
        "1 deviation, 1 derived (no evidence). Direction at budget scale (5): 1 reproduced, 0 not-reproduced, "
        "2 inconclusive, 0 not-run, 1 premise-failed, 1 off-plan."
    )


def test_report_of_one_paper_without_budget_verdicts(work: Path, toy_site: Path) -> None:
    done = harness_cli("report", "--paper", "efficientnet", cwd=work, site=toy_site)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        "0 claim(s). Paper's numbers (0): none. Direction at budget scale (0): none."
    )
