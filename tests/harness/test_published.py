"""Published record sets (harness.published): made from results/, installed as they are, refused when changed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.errors import HarnessError
from harness.published import MANIFEST, install, install_all, origins, paper_sets, publish, read_set, set_digest
from harness.records import write_record
from harness.store import ingest, query
from tests.conftest import make_record

PREDICTIONS = "id,label\n0,3\n1,7\n"
REFERENCES = "id,label\n0,3\n1,1\n"
CURVE = "step,train_loss\n0,2.3\n10,1.1\n"


def repro(tmp_path: Path) -> SimpleNamespace:
    root = tmp_path / "paper"
    root.mkdir(exist_ok=True)
    return SimpleNamespace(id="toy-paper", root=root, plan_path=root / "plan.yaml")


def a_run(results: Path, seed: int, parents: list[str] | None = None, cpu: str = "AMD EPYC") -> str:
    """A budget record of seed ``seed`` with kept predictions and a training log, written the way runs write them."""
    run_id = f"toy-paper.toy-mlp.budget.digits.test.s{seed}.abc"
    folder = f"artifacts/{run_id}/e0"
    (results / folder).mkdir(parents=True)
    (results / folder / "predictions.csv").write_text(PREDICTIONS)
    (results / folder / "references.csv").write_text(REFERENCES)  # the same file for every run: one blob
    log = results / "lightning" / run_id / "metrics.csv"
    log.parent.mkdir(parents=True)
    log.write_text(CURVE)
    record = make_record(
        run_id=run_id, tier="budget", seed=seed, parents=parents or [],
        artifacts={"predictions": f"{folder}/predictions.csv", "references": f"{folder}/references.csv",
                   "task": "digits", "training_log": f"{results.name}/lightning/{run_id}/metrics.csv"},
        provenance={"git_sha": "abc123", "git_dirty": False, "config_hash": "cfg",
                    "hardware": {"cpu_model": cpu, "isa": "avx512"}},
    )  # fmt: skip
    write_record(record, results / "runs")
    return run_id


@pytest.fixture
def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SimpleNamespace, list[str]]:
    """Two runs (the second started from the first) in ``<tmp>/results``, published as the set ``budget``."""
    monkeypatch.chdir(tmp_path)  # a training log is named relative to the working folder (results/lightning/...)
    results = tmp_path / "results"
    first = a_run(results, 0)
    second = a_run(results, 1, parents=[first])
    paper = repro(tmp_path)
    publish(paper, [second], "budget", runs_dir=results / "runs")  # its parent comes with it
    return paper, [first, second]


def test_a_set_holds_the_records_as_written_and_each_cited_file_once(made, tmp_path: Path) -> None:
    paper, run_ids = made
    (record_set,) = paper_sets(paper)
    assert record_set.run_ids() == sorted(run_ids)
    for run_id in run_ids:
        assert (record_set.path / "runs" / f"{run_id}.json").read_bytes() == (
            tmp_path / "results" / "runs" / f"{run_id}.json"
        ).read_bytes()
    blobs = sorted((record_set.path / "blobs").iterdir())
    assert len(blobs) == 3  # predictions, references, the curve: the same content in both runs is stored once
    assert {gzip.decompress(b.read_bytes()).decode() for b in blobs} == {PREDICTIONS, REFERENCES, CURVE}
    entry = record_set.manifest["runs"][0]
    assert entry["machine"] == "AMD EPYC / avx512" and entry["commit"] == "abc123"
    assert set(entry["files"]) == {
        f"artifacts/{entry['run_id']}/e0/predictions.csv", f"artifacts/{entry['run_id']}/e0/references.csv",
        f"lightning/{entry['run_id']}/metrics.csv",
    }  # fmt: skip
    assert record_set.manifest["machines"] == ["AMD EPYC / avx512"]


def test_a_fresh_results_folder_gets_the_records_and_files_and_ingests_them(made, tmp_path: Path) -> None:
    paper, run_ids = made
    fresh = tmp_path / "clone" / "results"
    done = install_all([paper], fresh / "runs")
    assert not done.errors and done.added == 2
    for run_id in run_ids:
        assert (fresh / "artifacts" / run_id / "e0" / "predictions.csv").read_text() == PREDICTIONS
        assert (fresh / "lightning" / run_id / "metrics.csv").read_text() == CURVE
    again = install_all([paper], fresh / "runs")
    assert not again.errors and again.added == 0  # idempotent
    result = ingest(runs_dir=fresh / "runs", db_path=fresh / "harness.duckdb")
    assert result.total == 2
    assert origins([paper]) == dict.fromkeys(
        run_ids, f"published toy-paper/budget ({paper_sets(paper)[0].digest[:12]})"
    )
    rows = query("SELECT run_id FROM runs ORDER BY run_id", db_path=fresh / "harness.duckdb")
    assert [row["run_id"] for row in rows] == sorted(run_ids)


def test_a_set_only_grows(made, tmp_path: Path) -> None:
    paper, run_ids = made
    third = a_run(tmp_path / "results", 2)
    grown = publish(paper, [third], "budget", runs_dir=tmp_path / "results" / "runs")
    assert grown.run_ids() == sorted([*run_ids, third])


@pytest.mark.parametrize("damage", ["record", "blob", "manifest", "missing"])
def test_a_changed_set_is_refused_whole_naming_the_file(made, tmp_path: Path, damage: str) -> None:
    paper, run_ids = made
    folder = paper.root / "records" / "budget"
    if damage == "record":
        path = folder / "runs" / f"{run_ids[0]}.json"
        path.write_text(path.read_text().replace('"accuracy": 95.0', '"accuracy": 99.0'))
        expected = f"{run_ids[0]}.json: the record does not match"
    elif damage == "blob":
        path = next((folder / "blobs").iterdir())
        path.write_bytes(gzip.compress(b"id,label\n0,9\n"))
        expected = f"{path.name}: its content does not match its name"
    elif damage == "manifest":
        manifest = json.loads((folder / MANIFEST).read_text())
        manifest["runs"][0]["seed"] = 7
        (folder / MANIFEST).write_text(json.dumps(manifest))
        expected = "the manifest was edited after it was made"
    else:
        (folder / "runs" / f"{run_ids[1]}.json").unlink()
        expected = "the published record is missing"
    fresh = tmp_path / "clone" / "results"
    done = install_all([paper], fresh / "runs")
    assert len(done.errors) == 1 and expected in done.errors[0], done.errors
    assert not fresh.exists() or not any(fresh.rglob("*.*"))  # nothing of the set was written


def test_an_existing_file_with_other_content_is_never_overwritten(made, tmp_path: Path) -> None:
    paper, run_ids = made
    fresh = tmp_path / "clone" / "results"
    mine = fresh / "artifacts" / run_ids[0] / "e0" / "predictions.csv"
    mine.parent.mkdir(parents=True)
    mine.write_text("id,label\n0,0\n")
    with pytest.raises(HarnessError, match="exists with other content"):
        install(read_set(paper.root / "records" / "budget"), fresh / "runs")
    assert mine.read_text() == "id,label\n0,0\n"
    assert not (fresh / "runs").exists()


def test_publishing_a_run_that_is_not_there_is_an_error(tmp_path: Path) -> None:
    paper = repro(tmp_path)
    (tmp_path / "results" / "runs").mkdir(parents=True)
    with pytest.raises(HarnessError, match="no such run record"):
        publish(paper, ["toy-paper.nope.s0"], "budget", runs_dir=tmp_path / "results" / "runs")
    with pytest.raises(HarnessError, match="record set name"):
        publish(paper, ["x"], "Budget Set", runs_dir=tmp_path / "results" / "runs")


def test_a_run_whose_kept_predictions_are_gone_is_not_published(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run_id = a_run(tmp_path / "results", 0)
    (tmp_path / "results" / "artifacts" / run_id / "e0" / "predictions.csv").unlink()
    with pytest.raises(HarnessError, match="its kept 'artifacts/.*predictions.csv' is not under"):
        publish(repro(tmp_path), [run_id], "budget", runs_dir=tmp_path / "results" / "runs")


def test_a_refused_publish_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    """The first run is fine, the second lacks its predictions: the set is not made at all (not half made)."""
    monkeypatch.chdir(tmp_path)
    good, bad = a_run(tmp_path / "results", 0), a_run(tmp_path / "results", 1)
    (tmp_path / "results" / "artifacts" / bad / "e0" / "predictions.csv").unlink()
    paper = repro(tmp_path)
    with pytest.raises(HarnessError, match="its kept"):
        publish(paper, [good, bad], "budget", runs_dir=tmp_path / "results" / "runs")
    assert not (paper.root / "records").exists()


def test_references_that_are_a_dataset_folder_ship_and_install_into_data(tmp_path: Path, monkeypatch) -> None:
    """A text run's references are the dataset folder the harness built under data/ (outside results/): the set
    carries every file of it, and a fresh clone gets them back at the same place, so its per-example evidence and
    rescore read what the run was scored against."""
    from harness.records import references_sha256

    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    run_id = a_run(results, 0)
    corpus = tmp_path / "data" / "budget" / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "test.csv").write_text(REFERENCES)
    (corpus / "classes.txt").write_text("a\nb\n")
    record_file = results / "runs" / f"{run_id}.json"
    doc = json.loads(record_file.read_text())
    doc["artifacts"]["references"] = "../data/budget/corpus"
    doc["artifacts"]["references_sha256"] = references_sha256(corpus)
    record_file.write_text(json.dumps(doc))
    paper = repro(tmp_path)
    (record_set,) = [publish(paper, [run_id], "budget", runs_dir=Path("results") / "runs")]  # as the CLI names it
    assert sorted(record_set.manifest["runs"][0]["files"]) == [
        "../data/budget/corpus/classes.txt", "../data/budget/corpus/test.csv",
        f"artifacts/{run_id}/e0/predictions.csv", f"lightning/{run_id}/metrics.csv",
    ]  # fmt: skip
    clone = tmp_path / "clone"
    install(read_set(record_set.path), runs_dir=clone / "results" / "runs")
    assert references_sha256(clone / "data" / "budget" / "corpus") == doc["artifacts"]["references_sha256"]
    manifest = json.loads((record_set.path / MANIFEST).read_text())
    manifest["runs"][0]["files"]["../../escape.txt"] = manifest["runs"][0]["files"]["../data/budget/corpus/test.csv"]
    manifest["set_sha256"] = set_digest(manifest)  # a consistent set that would write outside results/ and data/
    (record_set.path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(HarnessError, match="would be written outside"):
        install(read_set(record_set.path), runs_dir=tmp_path / "other" / "results" / "runs")
    assert not (tmp_path / "other").exists() and not (tmp_path / "escape.txt").exists()


def test_a_papers_stage_installs_its_sets_and_names_a_refused_one(made, tmp_path: Path, monkeypatch, capsys) -> None:
    """dvc repro's stage of a paper installs the paper's published sets before its ingest (harness.pipeline_stage)."""
    from harness import pipeline_stage

    paper, run_ids = made
    clone = tmp_path / "clone"
    clone.mkdir()
    monkeypatch.chdir(clone)
    assert pipeline_stage._install_published(paper) == 2
    assert sorted(p.stem for p in (clone / "results" / "runs").glob("*.json")) == sorted(run_ids)
    assert "published: 2 record(s) (2 new) from published toy-paper/budget" in capsys.readouterr().err
    (paper.root / "records" / "budget" / "runs" / f"{run_ids[0]}.json").write_text("{}")
    assert pipeline_stage._install_published(paper) == 0
    assert "not installed" in capsys.readouterr().err
