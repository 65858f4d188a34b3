"""Errors promised as one line (issue 20): each bad input below is one ``harness: error:`` line (or a HarnessError
naming the file and field) before any training starts, never a traceback or a silent wrong number."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from harness import configfile, records, registry, runner
from harness.errors import HarnessError
from tests.conftest import harness_cli, make_record


def strict_json(text: str):
    """JSON as the standard has it: NaN and Infinity are not JSON."""
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"invalid JSON constant {name}"))


# --- records that cannot be read -----------------------------------------------------------------------------------


def test_a_fifo_or_a_device_is_not_read_as_a_record(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(HarnessError, match=r"fifo.json: not a regular file"):
        records.read_record(fifo)  # before the fix: blocks for ever
    with pytest.raises(HarnessError, match=r"/dev/zero: not a regular file"):
        records.read_record(Path("/dev/zero"))  # before the fix: reads until memory runs out


def test_ingest_reports_a_fifo_and_still_loads_the_good_record(tmp_path: Path) -> None:
    runs = tmp_path / "results" / "runs"
    runs.mkdir(parents=True)
    good = tmp_path / "good.json"
    good.write_text(make_record().to_json())
    os.mkfifo(tmp_path / "fifo.json")
    done = harness_cli("ingest", str(good), str(tmp_path / "fifo.json"), cwd=tmp_path)
    assert done.returncode == 1
    assert "fifo.json: not a regular file" in done.stderr and "the database holds 1 run(s)" in done.stderr


def test_score_refuses_a_fifo_or_a_device(tmp_path: Path) -> None:
    """``harness score`` on a FIFO blocked for ever, on /dev/zero read until memory ran out (a traceback)."""
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "refs.csv").write_text("id,label\na,n01440764\n")
    for references, predictions, bad in [
        ("fifo.csv", "refs.csv", "--references"),
        ("refs.csv", "/dev/zero", "--predictions"),
    ]:
        done = harness_cli(
            "score", "imagenet-1k", "--references", references, "--predictions", predictions, cwd=tmp_path
        )
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
        assert f"given to {bad} but not a regular file or folder (a FIFO or device)" in done.stderr


def test_deeply_nested_json_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(HarnessError, match=r"deep.json: JSON nested deeper than 64 levels"):
        records.read_record(path)
    nested: dict = {}
    for _ in range(70):  # valid JSON, too deep to be a config anyone wrote
        nested = {"a": nested}
    path.write_text(json.dumps({**json.loads(make_record().to_json()), "config": nested}))
    with pytest.raises(HarnessError, match=r"deep.json: JSON nested deeper than 64 levels"):
        records.read_record(path)


# --- writing results -----------------------------------------------------------------------------------------------


def test_results_that_cannot_be_written_are_found_before_training(toy: Path) -> None:
    (toy / "results").write_text("a file where the results folder should be")
    with pytest.raises(HarnessError, match=r"results/runs: cannot write results there: results is not a folder"):
        runner.run(registry.reproduction("toy-paper"), "smoke", runs_dir=Path("results/runs"))
    assert not (toy / "data").exists()  # the config's prepare step (before the fit) never ran


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_results_folder_is_found_before_training(toy: Path) -> None:
    (toy / "results" / "runs").mkdir(parents=True)
    (toy / "results" / "runs").chmod(0o555)
    with pytest.raises(HarnessError, match=r"results/runs: cannot write results there .*Permission denied"):
        runner.run(registry.reproduction("toy-paper"), "smoke", runs_dir=Path("results/runs"))


def test_a_full_disk_is_found_before_training(toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe writes a real file; the disk filling up is injected at the write (ENOSPC)."""

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(records.os, "write", full)
    with pytest.raises(HarnessError, match=r"results/runs: cannot write results there: No space left on device"):
        runner.run(registry.reproduction("toy-paper"), "smoke", runs_dir=Path("results/runs"))
    assert not list(toy.rglob(".write-probe-*")) and not (toy / "results").exists()  # nothing left behind


def test_a_record_that_cannot_be_written_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(records.os, "fsync", full)
    with pytest.raises(HarnessError, match=r"\.json: cannot write the run record: No space left on device"):
        records.write_record(make_record(), tmp_path)


# --- configs checked before training -------------------------------------------------------------------------------


def _config(toy: Path, **changes) -> Path:
    import yaml

    config = configfile.read(runner.registry_config("toy-paper", "smoke")).tree
    for dotted, value in changes.items():
        node = config
        *parents, last = dotted.split("__")
        for part in parents:
            node = node[part]
        node[last] = value
    path = toy / "smoke-changed.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"seed": -1}, r"smoke-changed.yaml:\d+: key 'seed': -1 is not a seed \(an integer from 0 to 4294967295\)"),
        ({"seed": 2**40}, r"key 'seed': 1099511627776 is not a seed"),
        ({"seed": "one"}, r"key 'seed': 'one' is not a seed"),
        ({"seed": True}, r"key 'seed': True is not a seed"),
        ({"system__init_args__learning_rate": 0.1},
         r"smoke-changed.yaml: key 'system.init_args': toy_paper.system:ToySystem takes no argument 'learning_rate'"),
        ({"data__init_args__batchsize": 8},
         r"key 'data.init_args': toy_paper.system:DigitsData takes no argument 'batchsize' \(did you mean 'batch_size'\?\)"),
        ({"trainer__max_epoch": 1}, r"key 'trainer': pytorch_lightning.Trainer takes no argument 'max_epoch' \(did you mean 'max_epochs'\?\)"),
        ({"evaluate": [{"dataset": "digits/v2", "split": "test"}]},
         r"smoke-changed.yaml:\d+: key 'evaluate\[0\].dataset': 'digits/v2' cannot be part of a run id"),
        ({"evaluate": [{"dataset": "digits", "split": "x" * 200}]}, r"key 'evaluate\[0\]': its run id would be 2\d\d characters"),
        ({"system__init_args": [1]}, r"smoke-changed.yaml:\d+: key 'system.init_args': a mapping of argument names to values, not \[1\]"),
        ({"data__init_args__data_root": 5}, r"key 'data.init_args.data_root': a path, not 5"),
        ({"overrides": {"toy-mlp": [1]}}, r"key 'overrides.toy-mlp': a mapping of dotted key to value"),
        ({"model": 5}, r"key 'model': a model id, not 5"),
        ({"fit": "yes"}, r"key 'fit': true or false, not 'yes'"),
        ({"prepare__args": [1]}, r"key 'prepare.args': a mapping of keyword arguments, not \[1\]"),
        ({"protocol": ["a"]}, r"key 'protocol': a registered protocol id, not \['a'\]"),
        ({"protocol": "toy-hold-out"}, r"key 'protocol': unknown protocol 'toy-hold-out' \(did you mean 'toy-holdout'\?\)"),
    ],
)  # fmt: skip
def test_bad_configs_fail_before_training(toy: Path, changes: dict, message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        runner.run(
            registry.reproduction("toy-paper"),
            "smoke",
            config_path=_config(toy, **changes),
            runs_dir=Path("results/runs"),
        )
    assert not (toy / "data").exists()  # nothing was prepared, nothing trained


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            b"tier: smoke\n  bad: [\n",
            r"bad.yaml:2: invalid YAML: mapping values are not allowed (here|in this context)$",
        ),
        (b"tier: smoke # caf\xe9\n", r"bad.yaml: not UTF-8 text \(byte 17: invalid continuation byte\)$"),
    ],
)
def test_a_config_that_is_not_yaml_is_one_line(toy: Path, text: bytes, message: str) -> None:
    (toy / "bad.yaml").write_bytes(text)
    with pytest.raises(HarnessError, match=message):
        runner.run(
            registry.reproduction("toy-paper"), "smoke", config_path=toy / "bad.yaml", runs_dir=Path("results/runs")
        )


def test_a_seed_out_of_range_on_the_command_line(toy: Path) -> None:
    with pytest.raises(HarnessError, match=r"--seed: 4294967296 is not a seed \(an integer from 0 to 4294967295\)"):
        runner.run(registry.reproduction("toy-paper"), "smoke", seed=2**32, runs_dir=Path("results/runs"))


# --- the database and --json ---------------------------------------------------------------------------------------


def test_report_without_or_with_a_corrupt_database_says_to_ingest(tmp_path: Path) -> None:
    done = harness_cli("report", cwd=tmp_path)
    assert done.returncode == 2 and "run `harness ingest`" in done.stderr.replace("create it with", "run")
    assert len(done.stderr.strip().splitlines()) == 1
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "harness.duckdb").write_bytes(os.urandom(5000))
    done = harness_cli("report", cwd=tmp_path)
    assert done.returncode == 2 and "run `harness ingest`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_damaged_database_says_to_rebuild_it(tmp_path: Path) -> None:
    """A truncated database file still opens (its header is there) but its tables cannot be read: one line saying to
    rebuild (``ingest --rebuild``: tests/harness/test_store.py), not a DuckDB traceback."""
    from harness.store import ingest

    runs, db = tmp_path / "results" / "runs", tmp_path / "results" / "harness.duckdb"
    records.write_record(make_record(), runs)
    assert ingest(runs_dir=runs, db_path=db).total == 1
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 4)
    done = harness_cli("report", cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "harness.duckdb: cannot read the database (IO Error: " in done.stderr
    assert "run `harness ingest --rebuild` to build it again from results/runs/" in done.stderr


def test_nan_metrics_give_valid_json(toy_site: Path, tmp_path: Path) -> None:
    """A record whose metric is NaN (a diverged run) is judged; ``report --json`` stays JSON (null, not NaN)."""
    record = tmp_path / "nan.json"
    record.write_text(make_record(metrics={"accuracy": float("nan")}, tier="budget").to_json())
    done = harness_cli("ingest", str(record), cwd=tmp_path, site=toy_site)
    assert done.returncode == 0, done.stderr
    done = harness_cli("report", "--paper", "toy-paper", "--json", cwd=tmp_path, site=toy_site)
    assert done.returncode == 0, done.stderr
    rows = {row["claim_id"]: row for row in strict_json(done.stdout)}
    assert rows["mlp-accuracy"]["mean"] is None


# --- scorers that find none of the predicted labels among the references ------------------------------------------


def test_class_indices_against_synset_ids_are_an_error_not_zero(tmp_path: Path) -> None:
    from tasks.imagenet.score import score

    references = tmp_path / "refs.csv"
    references.write_text("id,label\na,n01440764\nb,n01443537\n")
    predictions = tmp_path / "preds.csv"
    predictions.write_text("id,prediction,p2\na,0,1\nb,1,0\n")
    with pytest.raises(HarnessError, match=r"preds.csv: none of the predicted labels \('0', '1'\) is a label of"):
        score(references, predictions)
    predictions.write_text("id,prediction\na,n01440764\nb,n01440764\n")  # wrong but comparable: scored
    assert score(references, predictions)["top1"] == 50.0


def test_train_ids_against_label_ids_are_an_error_not_zero(tmp_path: Path) -> None:
    from tasks.cityscapes.score import score

    city = tmp_path / "gtFine" / "val" / "aachen"
    city.mkdir(parents=True)
    gt = np.full((4, 4), 26, dtype=np.uint8)  # car (label id 26, train id 13)
    gt[:2] = 23  # sky (label id 23, train id 10)
    Image.fromarray(gt).save(city / "aachen_000000_000019_gtFine_labelIds.png")
    predictions = tmp_path / "pred"
    predictions.mkdir()
    train_ids = np.where(gt == 26, 13, 10).astype(np.uint8)  # the right answer, written as train ids
    Image.fromarray(train_ids).save(predictions / "aachen_000000_000019.png")
    with pytest.raises(
        HarnessError, match=r"pred: none of the predicted label ids \(10, 13\) is an evaluated label id"
    ):
        score(tmp_path / "gtFine" / "val", predictions)
    Image.fromarray(gt).save(predictions / "aachen_000000_000019.png")
    assert score(tmp_path / "gtFine" / "val", predictions)["miou"] == 100.0


# --- a disk that fills up during an ingest ------------------------------------------------------------------------

FULL_DISK_INGEST = """
import json, shutil, subprocess, sys
from pathlib import Path
from harness.errors import HarnessError
from harness.store import ingest

results, records = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(results)], check=True)
runs, db, filler = results / "runs", results / "harness.duckdb", results / "filler"
runs.mkdir()

def fill():  # a real filesystem with no space left
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)

def attempt():
    try:
        return ingest(runs_dir=runs, db_path=db).total
    except HarnessError as exc:
        return str(exc)

shutil.copy(records[0], runs)
fill()
outcomes = [attempt()]  # the first ingest builds the database in a temp file
filler.unlink()
outcomes.append(attempt())
shutil.copy(records[1], runs)
fill()
outcomes.append(attempt())  # a later ingest updates it in one transaction
filler.unlink()
outcomes.append(attempt())
print(json.dumps(outcomes))
"""


def _can_mount_a_tmpfs() -> bool:
    import shutil
    import subprocess

    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-r", "-m", "mount", "-t", "tmpfs", "tmpfs", "/mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _can_mount_a_tmpfs(), reason="needs `unshare -r -m` (user and mount namespaces)")
def test_a_disk_that_fills_up_during_ingest_is_one_error_and_loses_nothing(tmp_path: Path) -> None:
    """On a real, small tmpfs (mounted in a private namespace): the database write fails with one error naming the
    database, the records stay, and once space is back the next ingest holds them all."""
    import subprocess
    import sys

    (tmp_path / "results").mkdir()
    paths = []
    for seed in (0, 1):
        record = make_record(seed=seed)
        paths.append(tmp_path / f"{record.run_id}.json")
        paths[-1].write_text(record.to_json())
    argv = ["unshare", "-r", "-m", sys.executable, "-c", FULL_DISK_INGEST, str(tmp_path / "results"), *map(str, paths)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    first, recovered, later, again = json.loads(done.stdout)
    for error in (first, later):
        assert error.startswith(f"{tmp_path}/results/harness.duckdb: cannot write the database: ") and "\n" not in error
        assert "No space left on device" in error and "the records stay in" in error
    assert (recovered, again) == (1, 2)


def test_coco_category_indices_against_coco_ids_are_an_error_not_zero(tmp_path: Path) -> None:
    """Detections whose category ids look like contiguous class indices (0..n-1 against the references' ids) scored
    AP 0 with a warning; now an error. Other ids of which none is the references' (an untrained detector's COCO ids
    against a three-category fixture) score 0 with a warning that says so; some unknown ids among known ones stay a
    warning (pycocotools ignores those detections)."""
    from tasks.coco.fixtures import example
    from tasks.coco.score import score

    files = example(tmp_path, "coco-detection")
    detections = json.loads(files["predictions"].read_text())
    known = {cat["id"] for cat in json.loads(files["references"].read_text())["categories"]}
    predictions = tmp_path / "indices.json"
    for index in (0, max(set(range(len(known))) - known)):  # an index the references do not use as an id
        predictions.write_text(json.dumps([{**det, "category_id": index} for det in detections]))
        with pytest.raises(HarnessError, match=r"indices.json: none of the detections' category ids .*class indices"):
            score(files["references"], predictions)
    predictions.write_text(json.dumps([{**det, "category_id": det["category_id"] + 1000} for det in detections]))
    with pytest.warns(UserWarning, match=r"none of the detections' category ids \(10\d\d.*every AP is 0"):
        assert score(files["references"], predictions)["AP"] == 0
    some = [{**det, "category_id": det["category_id"] + 1000 * (index == 0)} for index, det in enumerate(detections)]
    predictions.write_text(json.dumps(some))
    with pytest.warns(UserWarning, match="that .* does not define; pycocotools ignores them"):
        assert set(score(files["references"], predictions)) >= {"AP", "AP50"}
