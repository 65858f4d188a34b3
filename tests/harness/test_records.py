"""Run records: schema validation, deterministic ids, atomic never-overwriting writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import records
from harness.errors import HarnessError
from tests.conftest import make_record


def test_run_id_is_deterministic_and_sensitive_to_what_matters() -> None:
    args = ("toy-paper", "toy-mlp", "smoke", "digits", "test", {"lr": 0.5, "epochs": 2}, 0)
    first = records.make_run_id(*args)
    assert first == records.make_run_id("toy-paper", "toy-mlp", "smoke", "digits", "test", {"epochs": 2, "lr": 0.5}, 0)
    assert first.startswith("toy-paper.toy-mlp.smoke.digits.test.s0.")
    assert first != records.make_run_id(*args[:5], {"lr": 0.1, "epochs": 2}, 0)
    assert first != records.make_run_id(*args[:6], 1)
    assert first != records.make_run_id("toy-paper", "toy-mlp", "budget", *args[3:])


def test_write_is_idempotent_and_refuses_a_different_record(tmp_path: Path) -> None:
    record = make_record()
    path = records.write_record(record, tmp_path)
    before = path.read_bytes()
    assert records.write_record(record, tmp_path) == path
    changed = make_record(metrics={"accuracy": 12.0})
    with pytest.raises(HarnessError, match="a different record with run_id .* already exists"):
        records.write_record(changed, tmp_path)
    assert path.read_bytes() == before
    assert records.read_record(path) == record
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp files left behind


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(records.os, "link", crash)
    with pytest.raises(HarnessError, match="cannot write the run record: disk full"):  # one line, not a traceback
        records.write_record(make_record(), tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("seed"), "field 'seed': Field required"),
        (lambda d: d.update(tier="medium"), "field 'tier'"),
        (lambda d: d.update(metrics={"top1": "high"}), "field 'metrics.top1'"),
        (lambda d: d.update(schema="harness.run/0"), "field 'schema': expected 'harness.run/1'"),
        (lambda d: d["provenance"].pop("config_hash"), "field 'provenance.config_hash'"),
        (lambda d: d.update(run_id="Has Spaces"), "field 'run_id'"),
        (lambda d: d.update(surprise=1), "field 'surprise': Extra inputs"),
        (lambda d: d.update(parents=["Not An Id"]), "field 'parents.0'"),
    ],
)
def test_validation_names_the_field(tmp_path: Path, mutate, message: str) -> None:
    data = json.loads(make_record().to_json())
    mutate(data)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(HarnessError) as err:
        records.read_record(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{\n "schema": "harness.run/1",\n oops\n}')
    with pytest.raises(HarnessError, match=r"r.json:3: invalid JSON"):
        records.read_record(path)


def test_record_round_trips_through_json() -> None:
    record = make_record(config={"lr": 0.1}, claim_ids=["mlp-accuracy"], artifacts={"ckpt": "x.ckpt"})
    assert records.parse_record(record.to_json(), "mem") == record


def test_parents_are_optional_and_written_only_when_set() -> None:
    plain = make_record()
    assert plain.parents == [] and "parents" not in json.loads(plain.to_json())  # records read as before chains
    child = make_record(parents=["toy-paper.toy-mlp.smoke.digits.test.s0.abc"])
    assert json.loads(child.to_json())["parents"] == child.parents
    assert records.parse_record(child.to_json(), "mem") == child


def test_the_one_constructor_fills_schema_times_and_provenance() -> None:
    started = records.now()
    provenance = records.run_provenance({"lr": 0.1}, data_hash="d1")
    code = records.code_version()
    assert (provenance.git_sha, provenance.git_dirty) == (code["git_sha"], code["git_dirty"])
    assert provenance.config_hash == records.canonical_hash({"lr": 0.1})[:16] and provenance.data_hash == "d1"
    assert provenance.versions == records.library_versions() and provenance.hardware == records.hardware()
    elsewhere = records.run_provenance({"lr": 0.1}, code={"git_sha": "abc", "git_dirty": False})
    assert (elsewhere.git_sha, elsewhere.git_dirty) == ("abc", False)
    fields = {
        "run_id": "p.m.smoke.d.test.s0", "paper": "p", "model": "m", "tier": "smoke", "dataset": "d", "split": "test",
        "seed": 0, "metrics": {"accuracy": 1.0}, "started_at": started, "provenance": provenance,
    }  # fmt: skip
    record = records.new_record(**fields, protocol="holdout", config={"lr": 0.1})
    assert record.schema_ == records.SCHEMA and started <= record.finished_at <= records.now()
    by_hand = records.RunRecord(
        schema="harness.run/1", **fields, finished_at=record.finished_at, protocol="holdout", config={"lr": 0.1}
    )
    assert record == by_hand and record.to_json() == by_hand.to_json()
    assert (record.status, record.artifacts, record.claim_ids, record.parents) == ("ok", {}, [], [])


def test_provenance_is_the_harness_and_papers_own_code_not_the_current_directorys(
    toy_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from inside another git repository, a record still carries the harness's own commit; a paper whose
    package lies outside git is identified by a hash of its files, which changes when they do."""
    import shutil
    import subprocess
    import sys

    from harness import registry
    from tests.conftest import REPO, TOY_SRC

    other = tmp_path / "other-repo"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(["git", "-C", str(other), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)  # fmt: skip
    src = tmp_path / "plugin"
    shutil.copytree(TOY_SRC, src)
    for name in [m for m in sys.modules if m.split(".")[0] == "toy_paper"]:
        monkeypatch.delitem(sys.modules, name)  # the copy, not the toy plugin an earlier test imported
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.syspath_prepend(str(toy_site))
    monkeypatch.chdir(other)
    registry.reproductions.cache_clear()
    records.code_version.cache_clear()
    records.package_version.cache_clear()
    try:
        own = records.code_version()
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        assert own["git_sha"] == head.strip()
        toy = records.code_version("toy-paper")
        assert toy["git_sha"] == own["git_sha"] and toy["plugin"]["code_hash"].startswith("files-")
        assert records.run_provenance({}, code=toy).model_dump()["plugin"] == toy["plugin"]
        before = records.make_run_id("toy-paper", "toy-mlp", "smoke", "digits", "test", {}, 0)
        (src / "toy_paper" / "model.py").write_text((src / "toy_paper" / "model.py").read_text() + "\n# changed\n")
        records.code_version.cache_clear()
        records.package_version.cache_clear()
        assert records.make_run_id("toy-paper", "toy-mlp", "smoke", "digits", "test", {}, 0) != before
    finally:
        registry.reproductions.cache_clear()
        records.code_version.cache_clear()
        records.package_version.cache_clear()


def test_an_untracked_file_makes_the_checkout_dirty(tmp_path: Path) -> None:
    """A run made with a config not yet committed is not the commit's run: an untracked (and unignored) file in the
    package's folder makes ``git_dirty`` true and changes the code hash with its content; an ignored one, or one
    outside the folder (DVC's dvc.lock), does not."""
    import subprocess

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("ignored.yaml\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)

    def version() -> dict:
        records.package_version.cache_clear()
        return records.package_version(repo / "pkg")

    clean = version()
    assert clean["git_dirty"] is False and clean["code_hash"] == clean["git_sha"]
    (repo / "ignored.yaml").write_text("lr: 1\n")
    (repo / "dvc.lock").write_text("stages: {}\n")  # outside the package's folder: not its code
    assert version() == clean
    (repo / "pkg" / "new.yaml").write_text("lr: 1\n")
    first = version()
    assert first["git_dirty"] is True and first["code_hash"] != clean["code_hash"]
    (repo / "pkg" / "new.yaml").write_text("lr: 2\n")
    assert version()["code_hash"] != first["code_hash"]
    records.package_version.cache_clear()
