"""``harness run``: the arch tier by profiling, a real Lightning fit on the toy plugin, idempotent re-runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import arch, registry, runner
from harness.errors import HarnessError
from harness.records import read_record


def test_arch_tier_profiles_every_model(toy: Path) -> None:
    paths = runner.run(registry.reproduction("toy-paper"), "arch", runs_dir=toy / "runs")
    records = sorted((read_record(p) for p in paths), key=lambda r: r.model)
    assert [(r.model, r.tier, r.split, r.dataset) for r in records] == [
        ("toy-bow", "arch", "none", "toy-text"),
        ("toy-mlp", "arch", "none", "digits"),
        ("toy-mlp-wide", "arch", "none", "digits"),
    ]
    # 64·16 + 16 + 16·10 + 10 parameters; 64·16 + 16·10 multiply-adds
    assert records[1].metrics == {"params": 1210, "params_m": 0.00121, "macs": 1184, "macs_m": 0.001184}
    assert records[0].config["inputs"] == {"token_ids": [1, 32], "attention_mask": [1, 32]}
    assert (
        runner.run(registry.reproduction("toy-paper"), "arch", runs_dir=toy / "runs") == paths
    )  # same code, same ids: nothing new


def test_smoke_tier_fits_and_records(toy: Path) -> None:
    (path,) = runner.run(registry.reproduction("toy-paper"), "smoke", runs_dir=toy / "runs")
    record = read_record(path)
    assert (record.tier, record.model, record.dataset, record.split, record.seed) == (
        "smoke",
        "toy-mlp",
        "digits",
        "test",
        0,
    )
    assert set(record.metrics) == {"accuracy", "error"} and record.metrics["accuracy"] > 50
    assert record.provenance.data_hash == "toy-digits-v1" and record.protocol == "toy-holdout"
    assert record.config["data"]["init_args"]["data_root"] == "data/toy-digits"
    assert (toy / "data/toy-digits/digits.npz").exists()  # made by the config's prepare step
    mtime = path.stat().st_mtime_ns
    assert runner.run(registry.reproduction("toy-paper"), "smoke", runs_dir=toy / "runs") == [path]
    assert path.stat().st_mtime_ns == mtime


def test_overrides_change_the_run_id(toy: Path) -> None:
    config = runner.load_config(runner.registry_config("toy-paper", "smoke"), "smoke")
    repro = registry.reproduction("toy-paper")
    base = runner.plan(repro, runner.resolve_config(config, "smoke", None, None, None))
    seed = runner.plan(repro, runner.resolve_config(config, "smoke", None, 3, None))
    model = runner.plan(repro, runner.resolve_config(config, "smoke", "toy-mlp-wide", None, None))
    moved = runner.plan(repro, runner.resolve_config(config, "smoke", None, None, "/elsewhere/digits"))
    assert len({base[0].run_id, seed[0].run_id, model[0].run_id}) == 3
    assert moved == base  # where the data lives is not part of the identity (its hash is recorded)


def test_missing_data_root_is_named_before_training(toy: Path) -> None:
    with pytest.raises(HarnessError, match="nowhere/digits.npz: missing"):
        runner.run(registry.reproduction("toy-paper"), "smoke", data_root=str(toy / "nowhere"), runs_dir=toy / "runs")
    assert not (toy / "runs").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tier: smoke\n", ": key 'model': missing"),
        (
            "model: m\nsystem: {}\ndata: {class_path: x}\nevaluate: [{dataset: d, split: s}]\n",
            ":2: key 'system.class_path': missing",
        ),
        (
            "model: m\nsystem: {class_path: x}\ndata: {class_path: x}\nevaluate: []\n",
            ":4: key 'evaluate': a non-empty list of {dataset, split} mappings, not []",
        ),
        (
            "tier: full\nmodel: m\nsystem: {class_path: x}\ndata: {class_path: x}\nevaluate: [{dataset: d, split: s}]\n",
            ":1: key 'tier': 'full', but the run asked for tier 'smoke'",
        ),
        ("model: m\nsurprise: 1\n", ":2: key 'surprise': unknown key; the keys of a tier config are tier, model,"),
        ("model: m\nsede: 1\n", ":2: key 'sede': unknown key (did you mean 'seed'?)"),
        ("[1, 2\n", "invalid YAML"),
    ],
)
def test_bad_configs_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "smoke.yaml"
    path.write_text(text)
    with pytest.raises(HarnessError) as err:
        runner.load_config(path, "smoke")
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_unknown_tier_config_and_model(toy: Path) -> None:
    with pytest.raises(HarnessError, match="no 'full' config for 'toy-paper'; tiers available: arch, smoke, budget"):
        runner.run(registry.reproduction("toy-paper"), "full", runs_dir=toy / "runs")
    with pytest.raises(HarnessError, match="has no model 'toy-cnn'"):
        runner.run(registry.reproduction("toy-paper"), "smoke", model="toy-cnn", runs_dir=toy / "runs")


def test_model_overrides_and_weights_checkpoint(toy: Path, tmp_path: Path) -> None:
    config = runner.load_config(runner.registry_config("toy-paper", "smoke"), "smoke")
    config["overrides"] = {"toy-mlp-wide": {"system.init_args.lr": 0.05, "data.init_args.batch_size": 8}}
    wide = runner.resolve_config(config, "smoke", "toy-mlp-wide", None, None)
    assert (wide["system"]["init_args"]["lr"], wide["data"]["init_args"]["batch_size"]) == (0.05, 8)
    assert "overrides" not in wide
    narrow = runner.resolve_config(config, "smoke", None, None, None)
    assert narrow["system"]["init_args"]["lr"] == 0.5
    config["overrides"] = {"toy-mlp": {"nowhere.lr": 1}}
    with pytest.raises(HarnessError, match="override 'nowhere.lr': the config has no mapping 'nowhere'"):
        runner.resolve_config(config, "smoke", None, None, None)
    config.pop("overrides")
    config["fit"] = False
    with pytest.raises(HarnessError, match="evaluates given weights: pass --checkpoint"):
        runner.resolve_config(config, "smoke", None, None, None)
    weights_a, weights_b = tmp_path / "a.safetensors", tmp_path / "b.safetensors"
    weights_a.write_bytes(b"weights A")
    weights_b.write_bytes(b"weights B")
    repro = registry.reproduction("toy-paper")
    plan_a = runner.plan(repro, runner.resolve_config(config, "smoke", None, None, None, str(weights_a)))
    plan_b = runner.plan(repro, runner.resolve_config(config, "smoke", None, None, None, str(weights_b)))
    weights_a.rename(tmp_path / "moved.safetensors")
    moved = runner.plan(
        repro, runner.resolve_config(config, "smoke", None, None, None, str(tmp_path / "moved.safetensors"))
    )
    assert plan_a != plan_b and plan_a == moved  # identified by the weights' hash, not their path


def test_a_reproduction_may_run_its_own_tiers(toy: Path) -> None:
    import dataclasses

    studied = dataclasses.replace(registry.reproduction("toy-paper"), runner="toy_paper.sweep:run")
    paths = runner.run(studied, "budget", runs_dir=toy / "runs")
    assert sorted(read_record(p).config["width"] for p in paths) == [8, 16, 32]
    assert {read_record(p).config["config_file"] for p in paths} == {"budget.yaml"}
    assert read_record(runner.run(studied, "arch", runs_dir=toy / "runs")[0]).tier == "arch"  # arch stays the harness's


def test_stale_partial_data_folders_are_removed_and_a_live_writers_kept(toy: Path) -> None:
    """Data preparation killed mid-way leaves ``.<root>.partial-<pid>-*`` beside the data root: the next run removes
    those of dead processes (and old ones without a pid) and keeps a live process's."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    data = toy / "data"
    names = [
        f".toy-digits.partial-{dead.stdout.strip()}-ab12",
        ".toy-digits.partial-x1y2z3",
        f".toy-digits.partial-{live.pid}-cd34",
    ]
    try:
        for name in names:
            (data / name).mkdir(parents=True)
            (data / name / "half.npz").write_bytes(b"\0" * 100)
        runner.run(registry.reproduction("toy-paper"), "smoke", runs_dir=toy / "runs")
        assert sorted(p.name for p in data.iterdir()) == sorted([names[2], "toy-digits"])
    finally:
        live.kill()
        live.wait()


def test_arch_tier_profiles_one_network_once(toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ids of the same network (a sweep's ids differ only in training) get one profile and equal figures."""
    import dataclasses

    from harness import profile

    repro = registry.reproduction("toy-paper")
    twin = dataclasses.replace(repro.model("toy-mlp"), id="toy-mlp-twin")
    repro = dataclasses.replace(repro, models=(*repro.models, twin))
    calls = []

    def counted(spec):
        calls.append(spec.id)
        return real(spec)

    real = profile.profile_model
    monkeypatch.setattr(profile, "profile_model", counted)
    records = {r.model: r for r in map(read_record, arch.run_arch(repro, runs_dir=toy / "runs"))}
    assert sorted(calls) == ["toy-bow", "toy-mlp", "toy-mlp-wide"]
    assert records["toy-mlp-twin"].metrics == records["toy-mlp"].metrics == {
        "params": 1210, "params_m": 0.00121, "macs": 1184, "macs_m": 0.001184
    }  # fmt: skip
    assert records["toy-mlp-twin"].run_id != records["toy-mlp"].run_id
