"""``harness rescore``: a record's kept predictions scored again by the task's official-format scorer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import registry
from harness.errors import HarnessError
from harness.records import references_sha256, write_record
from harness.rescore import find_record, rescore
from tests.conftest import harness_cli, make_record

TASK = "cifar-10"


def kept_run(results: Path, **metric_overrides: float) -> Path:
    """A record whose artifacts are a CIFAR-10 example pair copied under ``results/artifacts``, with the scorer's
    own numbers as its metrics (``metric_overrides`` change some)."""
    task = registry.task(TASK)
    files = registry.load_object(task.example)(results / "made", TASK)
    folder = results / "artifacts" / "run"
    folder.mkdir(parents=True)
    for name in ("references", "predictions"):
        shutil.copy(files[name], folder / files[name].name)
    scored = task.scorer()(files["references"], files["predictions"])
    artifacts = {
        "task": TASK,
        "references": f"artifacts/run/{files['references'].name}",
        "predictions": f"artifacts/run/{files['predictions'].name}",
        "references_sha256": references_sha256(files["references"]),
    }
    metrics = {"top1": scored["top1"], "error": scored["error"], **metric_overrides}
    record = make_record(dataset=TASK, metrics=metrics, artifacts=artifacts)
    return write_record(record, results / "runs")


def test_rescore_agrees_with_the_record_it_came_from(tmp_path: Path) -> None:
    rows = rescore(kept_run(tmp_path / "results"))
    assert [row["metric"] for row in rows] == ["error", "top1"] and all(row["agrees"] for row in rows)
    assert rows[0]["rescored"] == pytest.approx(rows[0]["recorded"])


def test_a_record_whose_numbers_differ_from_its_predictions_is_shown_and_exits_1(tmp_path: Path) -> None:
    path = kept_run(tmp_path / "results", top1=99.5, train_loss=0.1)
    rows = {row["metric"]: row for row in rescore(path)}
    assert rows["top1"]["agrees"] is False and rows["train_loss"]["rescored"] is None
    done = harness_cli("rescore", path.stem, "--json", cwd=tmp_path)
    assert done.returncode == 1 and "disagrees with the record on top1" in done.stderr
    assert {row["metric"] for row in json.loads(done.stdout)} == {"error", "top1", "train_loss"}


def test_changed_references_are_named_with_both_hashes(tmp_path: Path) -> None:
    path = kept_run(tmp_path / "results")
    references = tmp_path / "results" / json.loads(path.read_text())["artifacts"]["references"]
    references.write_text(references.read_text() + "\n")
    with pytest.raises(HarnessError, match="references changed since run .* scored .*the record says"):
        rescore(path)


def test_missing_predictions_and_unknown_runs_are_one_line_errors(tmp_path: Path) -> None:
    path = kept_run(tmp_path / "results")
    predictions = tmp_path / "results" / json.loads(path.read_text())["artifacts"]["predictions"]
    predictions.unlink()
    with pytest.raises(HarnessError, match=r"its predictions .* are missing \(artifacts.predictions\)"):
        rescore(path)
    bare = write_record(make_record(run_id="toy-paper.bare.s0"), tmp_path / "results" / "runs")
    with pytest.raises(HarnessError, match="field 'artifacts': the run kept no predictions"):
        rescore(bare)
    with pytest.raises(HarnessError, match="neither a record file nor a run id"):
        find_record("no-such-run", tmp_path / "results" / "runs")


def test_rescore_published_scores_the_shipped_runs_from_their_shipped_predictions(tmp_path: Path) -> None:
    """A fresh clone re-scores the published records from the predictions the set ships, not from the files of the
    machine that made them (those are gone here)."""
    from types import SimpleNamespace

    from harness.published import publish
    from harness.rescore import rescore_published

    made = tmp_path / "elsewhere" / "results"
    path = kept_run(made)
    paper = SimpleNamespace(id="toy-paper", root=tmp_path / "paper", plan_path=tmp_path / "paper" / "plan.yaml")
    publish(paper, [path.stem], "budget", runs_dir=made / "runs")
    shutil.rmtree(made)
    rows = rescore_published(paper, tmp_path / "clone" / "results" / "runs")
    assert {row["metric"] for row in rows} == {"top1", "error"} and all(row["agrees"] for row in rows)
    assert {row["run_id"] for row in rows} == {path.stem}
