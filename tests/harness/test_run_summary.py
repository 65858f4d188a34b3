"""``harness run`` ends with what it measured and the verdicts; no Lightning tips; ``--json`` for run and ingest."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest

from harness.summary import progress_bar
from tests.conftest import harness_cli


def test_run_ends_with_results_table_and_json(toy_site: Path, tmp_path: Path) -> None:
    done = harness_cli("run", "toy-paper", cwd=tmp_path, site=toy_site)
    assert done.returncode == 0, done.stderr
    assert "💡 Tip" not in done.stderr and "LeafSpec" not in done.stderr  # Lightning's adverts, torch's deprecation
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("model "))
    assert lines[header].split() == ["model", "tier", "dataset", "split", "metric", "value", "claim_id", "reported",
                                     "status"]  # fmt: skip
    rows = [line.split() for line in lines[header + 1 :]]
    assert ["toy-mlp", "smoke", "digits", "test", "accuracy"] == rows[0][:5]
    assert rows[0][6:] == ["mlp-accuracy", "95", "not-run"]  # smoke never judges a paper number
    assert rows[-1][4] == "error" and rows[-1][6:] == ["-", "-", "-"]  # a metric no claim judges

    again = harness_cli("run", "toy-paper", "--json", cwd=tmp_path, site=toy_site)  # already recorded: no training
    doc = json.loads(again.stdout)
    assert doc["ingest"] == {"total": 1, "added": [], "errors": []}
    assert doc["records"] == [f"results/runs/{doc['results'][0]['run_id']}.json"]
    assert {(r["metric"], r["claim_id"]) for r in doc["results"]} >= {("accuracy", "mlp-accuracy"), ("error", None)}
    record = json.loads((tmp_path / doc["records"][0]).read_text())
    log = tmp_path / record["artifacts"]["training_log"]  # Lightning's CSV logger, in the run's own folder
    assert log.parent.name == record["run_id"] and log.parent.parent == tmp_path / "results/lightning/toy-paper/smoke"
    with log.open(newline="") as handle:
        logged = list(csv.DictReader(handle))
    assert float(next(row for row in logged if row["test/accuracy"])["test/accuracy"]) == record["metrics"]["accuracy"]
    ingested = harness_cli("ingest", "--json", cwd=tmp_path, site=toy_site)
    assert json.loads(ingested.stdout) == {"total": 1, "added": [], "errors": []}


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_long_tiers_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    config = {"enable_progress_bar": False, "max_epochs": 3}
    assert progress_bar("budget", config) == config  # stderr is captured by pytest: not a terminal
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        assert progress_bar("budget", config) == {"enable_progress_bar": True, "max_epochs": 3}
        assert progress_bar("smoke", config) == config  # seconds of work: no bar
    os.close(leader)
