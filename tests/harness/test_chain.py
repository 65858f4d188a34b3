"""Runs that build on runs: the toy plugin's two-stage chain (configs/smoke-pretrain.yaml, then smoke-finetune.yaml)
run from nothing, reused, checked against tampering, and the child's weights compared with its parent's."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from harness import configfile, registry, runner, training
from harness.errors import HarnessError
from harness.records import file_sha256, read_record, write_record
from tests.conftest import TOY_SRC, harness_cli, make_record

CONFIGS = TOY_SRC / "toy_paper" / "configs"
PRETRAIN, FINETUNE = CONFIGS / "smoke-pretrain.yaml", CONFIGS / "smoke-finetune.yaml"


def _run(config: Path, runs: Path, **kwargs) -> list[Path]:
    return runner.run(registry.reproduction("toy-paper"), "smoke", config_path=config, runs_dir=runs, **kwargs)


def _variant(folder: Path, name: str, base: Path = FINETUNE, **changes) -> Path:
    """A copy of a toy config with top-level keys changed; its init_from names the toy's stage 1 by absolute path."""
    config = configfile.read(base).tree
    config.update(changes)
    if isinstance(config.get("init_from"), dict) and config["init_from"].get("config") == PRETRAIN.name:
        config["init_from"]["config"] = str(PRETRAIN)
    path = folder / name
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_chain_runs_from_nothing_then_reuses_both_stages(toy: Path, capsys: pytest.CaptureFixture) -> None:
    runs = toy / "results" / "runs"
    (child_path,) = _run(FINETUNE, runs)
    assert (
        f"running it first: harness run toy-paper --tier smoke --config {PRETRAIN} --seed 0" in capsys.readouterr().err
    )
    child = read_record(child_path)
    (parent_path,) = [p for p in runs.glob("*.json") if p != child_path]
    parent = read_record(parent_path)
    sha = parent.artifacts["checkpoint_sha256"]
    stored = toy / "results" / "checkpoints" / f"{sha}.safetensors"
    assert parent.artifacts["checkpoint"] == str(stored) and file_sha256(stored) == sha  # content-addressed
    assert child.parents == [parent.run_id] and parent.parents == []
    assert child.config["init_from"] == {
        "config": "smoke-pretrain.yaml", "prefixes": ["net.0."], "run": parent.run_id, "checkpoint_sha256": sha,
    }  # fmt: skip
    assert child.metrics["accuracy"] > 50 and "checkpoint" not in child.artifacts  # stage 2 saves nothing
    mtimes = {p: p.stat().st_mtime_ns for p in (child_path, parent_path, stored)}
    assert _run(FINETUNE, runs) == [child_path]
    assert "running it first" not in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes and len(list(runs.glob("*.json"))) == 2
    # the parent's run id and weights are part of the child's identity
    repro = registry.reproduction("toy-paper")
    other = copy.deepcopy(child.config)
    other["init_from"]["checkpoint_sha256"] = "0" * 64
    assert runner.plan(repro, other)[0].run_id != child.run_id == runner.plan(repro, child.config)[0].run_id


def test_the_child_starts_from_the_parents_weights_and_a_tampered_checkpoint_fails(toy: Path) -> None:
    runs = toy / "results" / "runs"
    (parent_path,) = _run(PRETRAIN, runs)
    parent = read_record(parent_path)
    stored = Path(parent.artifacts["checkpoint"])
    weights = load_file(stored)
    # evaluate-only children that keep what they loaded: the hidden layer only, then every tensor
    head = _variant(toy, "head.yaml", fit=False, save_checkpoint=True)
    whole = _variant(toy, "whole.yaml", fit=False, save_checkpoint=True, init_from={"config": str(PRETRAIN)})
    (head_path,) = _run(head, runs)
    loaded = load_file(read_record(head_path).artifacts["checkpoint"])
    assert all(loaded[name].equal(weights[name]) for name in ("net.0.weight", "net.0.bias"))
    assert not loaded["net.2.weight"].equal(weights["net.2.weight"])  # a fresh output layer
    (whole_path,) = _run(whole, runs)
    assert read_record(whole_path).artifacts["checkpoint_sha256"] == parent.artifacts["checkpoint_sha256"]
    assert read_record(whole_path).metrics == parent.metrics  # the very same network

    stored.write_bytes(stored.read_bytes()[:-4] + b"\0\0\0\0")
    actual = file_sha256(stored)
    with pytest.raises(HarnessError) as err:
        _run(FINETUNE, runs)
    expected = parent.artifacts["checkpoint_sha256"]
    assert str(err.value).startswith(f"{stored}: checkpoint sha256 does not match: expected {expected}")
    assert str(err.value).endswith(f"actual {actual}") and "\n" not in str(err.value)
    stored.unlink()
    with pytest.raises(HarnessError, match=f"{stored}: checkpoint missing \\(expected sha256 {expected}: the check"):
        _run(FINETUNE, runs)
    assert len(list(runs.glob("*.json"))) == 3  # no record of a child that could not load its weights


def test_a_chain_naming_a_missing_run_fails_naming_file_and_key(toy: Path) -> None:
    config = _variant(toy, "by-id.yaml", init_from={"run": "toy-paper.no-weights"})
    with pytest.raises(HarnessError) as err:
        _run(config, toy / "runs")
    assert str(err.value).startswith(f"{config}: key 'init_from.run': no run record 'toy-paper.no-weights' in ")
    write_record(make_record(paper="toy-paper", tier="smoke", run_id="toy-paper.no-weights"), toy / "runs")
    with pytest.raises(HarnessError, match="init_from.run': run 'toy-paper.no-weights' saved no checkpoint"):
        _run(config, toy / "runs")
    done = harness_cli("run", "toy-paper", "--config", str(config), cwd=toy, site=toy.parent / "site")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"harness: error: {config}: key 'init_from.run': no run record 'toy-paper.no-weights' in results/runs/ "
        "(name a recorded run, or its config)"
    )


@pytest.mark.parametrize(
    ("init_from", "message"),
    [
        ({"run": "a", "config": "b.yaml"}, "by exactly one of 'run' (a run id) and 'config'"),
        ({}, "by exactly one of"),
        ({"run": "Not An Id"}, "key 'init_from.run': 'Not An Id' is not a run id"),
        ({"run": "x", "seed": 1}, "describe a parent named by 'config', not by 'run'"),
        ({"config": "smoke-pretrain.yaml", "prefixes": []}, "key 'init_from.prefixes': a non-empty list"),
        (
            {"config": "smoke-pretrain.yaml", "lr": 1},
            "key 'init_from.lr': unknown key; the keys of 'init_from' are run, config,",
        ),
        ({"config": "smoke-pretrain.yaml", "tier": "medium"}, "key 'init_from.tier': 'medium' is not one of smoke,"),
        ({"config": "smoke-pretrain.yaml", "seed": "0"}, "key 'init_from.seed': '0' is not a seed"),
        ({"config": "smoke-pretrain.yaml", "model": "toy-cnn"}, "key 'init_from.config': 'toy-paper' has no model"),
        ({"config": "nowhere.yaml"}, "key 'init_from.config': {folder}/nowhere.yaml does not exist"),
        ({"config": "smoke.yaml"}, "smoke.yaml saves no checkpoint: add `save_checkpoint: true` to it"),
        ({"config": "cycle.yaml"}, "cycle.yaml starts a cycle of init_from"),
        ([], "key 'init_from': a mapping naming the parent stage, or a non-empty list"),
        ([{"config": "smoke.yaml"}, {"run": "Not An Id"}], "key 'init_from[1].run': 'Not An Id' is not a run id"),
        ([{"config": "smoke-pretrain.yaml", "into": "a."}], "key 'init_from[0].into': a prefix that replaces the"),
    ],
)
def test_bad_init_from_is_named_before_anything_runs(toy: Path, init_from: dict | list, message: str) -> None:
    folder = toy / "configs"
    folder.mkdir()
    (folder / "smoke.yaml").write_text((CONFIGS / "smoke.yaml").read_text())
    config = _variant(folder, "cycle.yaml", save_checkpoint=True, init_from=init_from)
    with pytest.raises(HarnessError) as err:
        _run(config, toy / "runs")
    assert str(err.value).startswith(str(config)) and message.format(folder=folder) in str(err.value)
    assert not (toy / "runs").exists() and not (toy / "data").exists()


def test_a_run_from_two_parents_loads_each_ones_tensors_and_lists_both(toy: Path) -> None:
    """``init_from`` as a list (an ensemble's members): each parent loads its ``prefixes`` (``into`` renames them;
    here into the same names), later ones over earlier ones; the record lists both parents, in order."""
    runs = toy / "results" / "runs"
    both = [{"config": str(PRETRAIN)}, {"config": str(PRETRAIN), "seed": 1, "prefixes": ["net.2."], "into": "net.2."}]
    (child_path,) = _run(_variant(toy, "both.yaml", fit=False, save_checkpoint=True, init_from=both), runs)
    child = read_record(child_path)
    parents = [read_record(runs / f"{run_id}.json") for run_id in child.parents]
    assert [parent.seed for parent in parents] == [0, 1] and all(p.config.get("init_from") is None for p in parents)
    first, second = (load_file(parent.artifacts["checkpoint"]) for parent in parents)
    loaded = load_file(child.artifacts["checkpoint"])
    assert loaded["net.0.weight"].equal(first["net.0.weight"]) and loaded["net.2.weight"].equal(second["net.2.weight"])
    assert not first["net.2.weight"].equal(second["net.2.weight"])
    assert [spec["run"] for spec in child.config["init_from"]] == child.parents


def test_resolving_needs_a_recorded_parent() -> None:
    with pytest.raises(HarnessError, match="init_from is not resolved"):
        training.parents_identity({"config": "smoke-pretrain.yaml"})


def test_a_three_stage_chain_runs_its_stages_in_order(toy: Path, capsys: pytest.CaptureFixture) -> None:
    """ULMFiT's shape: pre-train, fine-tune the language model, then the classifier; only the last one is asked for."""
    middle = _variant(toy, "middle.yaml", save_checkpoint=True, trainer={"max_epochs": 1, "logger": False})
    last = _variant(toy, "last.yaml", fit=False, init_from={"config": "middle.yaml"})
    (last_path,) = _run(last, toy / "runs")
    said = [line for line in capsys.readouterr().err.splitlines() if "running it first" in line]
    assert [line.split(": ", 1)[1].split(" starts")[0] for line in said] == ["middle.yaml", "last.yaml"]
    assert said[0].endswith(f"--config {PRETRAIN} --seed 0") and said[1].endswith(f"--config {middle} --seed 0")
    child = read_record(last_path)
    parent = read_record(toy / "runs" / f"{child.parents[0]}.json")
    grandparent = read_record(toy / "runs" / f"{parent.parents[0]}.json")
    assert grandparent.config["save_checkpoint"] and grandparent.parents == [] and len(list(toy.glob("runs/*"))) == 3
    assert child.config["init_from"]["checkpoint_sha256"] == parent.artifacts["checkpoint_sha256"]
    assert child.metrics == parent.metrics  # evaluated with the middle stage's weights, every tensor loaded


def test_two_children_of_a_parent_that_has_not_run_train_it_once(toy: Path, toy_site: Path) -> None:
    """Two processes start two different children of the same unrun parent at once: one runs the parent while the
    other waits for its record, then both load it (before: both trained it, and the second failed to record it)."""
    import os
    import subprocess
    import sys

    other = _variant(toy, "other.yaml", system={"class_path": "toy_paper.system:ToySystem", "init_args": {"lr": 0.05}})
    first = _variant(toy, "first.yaml")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toy_site), str(TOY_SRC), os.environ.get("PYTHONPATH", "")])}
    exe = str(Path(sys.executable).parent / "harness")
    procs = [
        subprocess.Popen([exe, "run", "toy-paper", "--tier", "smoke", "--config", str(config)], cwd=toy, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for config in (first, other)
    ]  # fmt: skip
    done = [(proc.wait(timeout=600), *proc.communicate()) for proc in procs]
    assert [code for code, _, _ in done] == [0, 0], [err for _, _, err in done]
    assert sum(err.count("running it first") for _, _, err in done) == 1
    records = [read_record(path) for path in (toy / "results" / "runs").glob("*.json")]
    parents = [r for r in records if not r.parents]
    children = [r for r in records if r.parents]
    assert len(parents) == 1 and len(children) == 2
    assert all(child.parents == [parents[0].run_id] for child in children)


def test_a_model_whose_override_sets_init_from_null_runs_from_nothing(toy: Path) -> None:
    """A chain config's row ``{init_from: null}`` runs that model without a parent stage (a baseline from scratch);
    the config's other models still start from the parent."""
    model = registry.reproduction("toy-paper").model_ids()[0]
    config = configfile.read(FINETUNE).tree
    config["overrides"] = {**(config.get("overrides") or {}), model: {"init_from": None}}
    path = _variant(toy, "scratch.yaml", **{k: v for k, v in config.items() if k == "overrides"})
    resolved = runner.resolve_config(runner.load_config(path, "smoke"), "smoke", model, None, None)
    assert "init_from" not in resolved
    runs = toy / "results" / "runs"
    (scratch_path,) = _run(path, runs, model=model)
    assert read_record(scratch_path).parents == [] and len(list(runs.glob("*.json"))) == 1  # no parent ran
    assert "init_from" not in read_record(scratch_path).config


def test_harness_run_ingests_only_the_records_of_its_own_command(toy: Path, tmp_path: Path) -> None:
    """A process that ran other runs before (a test session) does not copy their records into this command's store."""
    from harness.cli import main

    (elsewhere,) = _run(PRETRAIN, tmp_path / "elsewhere" / "runs", seed=5)
    assert main(["run", "toy-paper", "--tier", "smoke", "--config", str(PRETRAIN), "--seed", "0"]) == 0
    names = [path.name for path in (toy / "results" / "runs").glob("*.json")]
    assert len(names) == 1 and ".s0." in names[0] and elsewhere.name not in names
