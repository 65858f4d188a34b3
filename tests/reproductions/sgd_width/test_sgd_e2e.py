"""A tiny sweep end to end: the smoke config's real Lightning fits on the digits written as Fashion-MNIST IDX files,
records for every run (diverged ones included), the summaries, the figures' data; and (slow) the same through the
``harness`` command (the installed sgd-width entry point) and joblib's two-process pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness import configfile
from harness.plans import paper_plan
from harness.records import read_record
from reproductions.sgd_width import REPRODUCTION, figures
from reproductions.sgd_width.summary import is_summary
from reproductions.sgd_width.sweep import run_sweep


def test_smoke_sweep_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    paths = run_sweep(REPRODUCTION, REPRODUCTION.config_path("smoke"), tier="smoke", runs_dir=tmp_path / "runs")
    records = [read_record(p) for p in paths]
    runs, summaries = [r for r in records if not is_summary(r)], [r for r in records if is_summary(r)]
    assert len(runs) == 8 and len(summaries) == 4
    assert {r.status for r in runs} == {"ok", "diverged"}  # the far too large learning rates blow up
    ok = [r for r in runs if r.status == "ok"]
    assert all(0 <= r.metrics["accuracy"] <= 100 and r.provenance.data_hash for r in ok)
    assert all(r.tier == "smoke" and r.dataset == "digits" and r.protocol == "late-time-test-accuracy" for r in runs)
    assert all(s.metrics["diverged_runs"] == 1 and s.metrics["max_stable_lr"] in (0.05, 1.0) for s in summaries)
    curves, optima = figures.accuracy_curves(records), figures.optimum_vs_width(records)
    assert len(curves) == 4 and {row["width"] for row in optima} == {1, 2}
    assert figures.accuracy_spec(curves)["data"]["values"] == curves
    assert figures.optimum_spec(optima)["encoding"]["y"]["field"] == "best_noise_scale"
    again = run_sweep(REPRODUCTION, REPRODUCTION.config_path("smoke"), tier="smoke", runs_dir=tmp_path / "runs")
    assert again == paths  # everything recorded: nothing runs again


@pytest.mark.slow
def test_harness_run_and_report_through_the_entry_point(tmp_path: Path):
    from tests.conftest import harness_cli

    config = configfile.read(REPRODUCTION.config_path("smoke")).tree
    config["executor"] = {"kind": "local", "n_jobs": 2}
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(config))
    done = harness_cli("run", "sgd-width", "--tier", "smoke", "--config", str(tmp_path / "smoke.yaml"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = harness_cli("report", "--paper", "sgd-width", "--json", cwd=tmp_path)
    verdicts = json.loads(report.stdout)
    untestable = {entry.claim for entry in paper_plan(REPRODUCTION).claims if entry.untestable}
    # the claims the plan marks untestable are so whether or not anything ran; smoke judges none of the others
    assert {v["claim_id"] for v in verdicts if v["status"] == "untestable"} == untestable
    assert {v["status"] for v in verdicts if v["claim_id"] not in untestable} == {"not-run"}
