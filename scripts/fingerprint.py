"""Fingerprint of the numbers a refactor must not move, to compare two checkouts.

    python scripts/fingerprint.py arch   OUT.json   # params, MACs and input shape of every registered model
    python scripts/fingerprint.py budget OUT.json   # each budget model of params.yaml, 40 steps at seed 0
    python scripts/fingerprint.py budget-all OUT.json  # and every other paper's unchained budget.yaml, 40 steps
    python scripts/fingerprint.py runs   OUT.json   # every tier config: its file as read, and what each run id hashes

Run it from each checkout's root (with that checkout first on PYTHONPATH) and compare the two JSON files: every
value must be equal. The budget entries train each model of a paper's ``models`` list in params.yaml for 40 steps
and test on 4 batches (records go to a temporary folder, never to results/). Multi-threaded CPU kernels can
reorder float sums from run to run on a loaded machine, so compare budget fingerprints made with
OMP_NUM_THREADS=1 on both sides.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness import registry

STEPS, TEST_BATCHES = 40, 4


def arch() -> dict[str, Any]:
    from harness.profile import profile_model

    result = {}
    for model_id, (repro, spec) in registry.models().items():
        profile = profile_model(spec)
        shape = list(profile.input_shape)
        result[model_id] = {"paper": repro.id, "params": profile.params, "macs": profile.macs, "input_shape": shape}
    return result


def budget(every: bool = False) -> dict[str, Any]:
    """The budget models of params.yaml's budget papers; with ``every``, also every other ``budget*.yaml`` whose
    stage needs no earlier stage (its default model; an error, e.g. data it cannot make, is kept as the value)."""

    papers = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))["papers"]
    tmp = Path(tempfile.mkdtemp(prefix="fingerprint-"))
    result: dict[str, Any] = {}
    for paper, section in papers.items():
        repro = registry.reproduction(paper)
        in_pipeline = "budget" in section["tiers"]
        paths = [repro.config_path("budget")] if in_pipeline else []
        if every and repro.runner is None:
            paths = sorted((repro.root / "configs").glob("budget*.yaml"))
        for path in paths:
            config = read_tree(path)
            if "init_from" in config:
                continue  # a chain's later stage: not a 40-step run of its own
            config["trainer"].update(max_steps=STEPS, limit_test_batches=TEST_BATCHES)
            copy_path = tmp / f"{paper}-{path.name}"
            copy_path.write_text(yaml.safe_dump(config), encoding="utf-8")
            name = f"{paper}/{path.stem}" if path.stem != "budget" else paper
            for model in (section.get("models") if path.stem == "budget" and in_pipeline else None) or [
                config["model"]
            ]:
                result.update(_budget_run(paper, model, copy_path, tmp / "runs", f"{name}/{model}"))
    return result


def _budget_run(paper: str, model: str, path: Path, runs_dir: Path, name: str) -> dict[str, Any]:
    from harness import registry
    from harness.runner import run

    try:
        repro = registry.reproduction(paper)
        records = run(repro, tier="budget", model=model, seed=0, config_path=path, runs_dir=runs_dir)
    except Exception as exc:  # noqa: BLE001 -- an error is part of the fingerprint
        return {name: f"error: {type(exc).__name__}: {exc}"[:300]}
    result = {}
    for record in records:
        data = json.loads(record.read_text(encoding="utf-8"))
        result[name if len(records) == 1 else f"{name}/{data['dataset']}.{data['split']}"] = data["metrics"]
    return result


def read_tree(path: Path) -> dict[str, Any]:
    """A config file as the runner reads it, before any checking (with its bases merged, where it names any)."""
    try:
        from harness import configfile
    except ImportError:  # a checkout from before config bases
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    return configfile.read(path).tree


def _identity_key(repro: Any, resolved: dict[str, Any], dataset: str, split: str) -> str:
    """What a run id hashes besides the code's git state (which every commit changes): paper, model, tier, data,
    seed and the run's identity config, with weight files named by path and init_from as the config gives it."""
    from harness.records import canonical_hash
    from harness.training import WEIGHT_ARGS

    key = copy.deepcopy(resolved)
    key["data"]["init_args"].pop("data_root", None)
    key.pop("prepare", None)
    for name in WEIGHT_ARGS:
        path = key["system"]["init_args"].pop(name, None)
        if path:
            key[f"{name}_path"] = path
    parts = {"paper": repro.id, "model": resolved["model"], "tier": resolved["tier"], "dataset": dataset}
    return canonical_hash({**parts, "split": split, "config": key, "seed": resolved["seed"]})


def runs() -> dict[str, Any]:
    """Per config file: the file as read (``tree``) and, for the harness's own runner, per model (the default, each
    ``overrides`` row and params.yaml's models) the hash of each run id's key, or the error resolving it gave."""
    from harness.runner import load_config, resolve_config

    papers = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))["papers"]
    result: dict[str, Any] = {}
    for repro in registry.reproductions().values():
        for path in sorted((repro.root / "configs").glob("*.yaml")):
            tree = read_tree(path)
            entry: dict[str, Any] = {"tree": tree}
            tier = path.stem.split("-", 1)[0]
            if repro.runner is None and tier != "arch":
                try:
                    config = load_config(path, tier)
                    models = {config["model"], *(config.get("overrides") or {})}
                    models |= set((papers.get(repro.id) or {}).get("models") or [])
                    ids = {}
                    for model in sorted(models):
                        try:
                            resolved = resolve_config(config, tier, model, None, None, "CHECKPOINT")
                            ids[model] = [_identity_key(repro, resolved, e["dataset"], e["split"])
                                          for e in resolved["evaluate"]]  # fmt: skip
                        except Exception as exc:  # noqa: BLE001 -- an error is part of the fingerprint
                            ids[model] = f"error: {type(exc).__name__}"
                    entry["runs"] = ids
                except Exception as exc:  # noqa: BLE001
                    entry["runs"] = f"error: {type(exc).__name__}"
            result[f"{repro.id}/{path.name}"] = entry
    return result


def main(argv: list[str]) -> int:
    modes = {"arch": arch, "budget": budget, "budget-all": lambda: budget(every=True), "runs": runs}
    if len(argv) != 2 or argv[0] not in modes:
        print(__doc__, file=sys.stderr)
        return 2
    result = modes[argv[0]]()
    Path(argv[1]).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
