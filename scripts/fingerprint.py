"""Fingerprint of the numbers a refactor must not move, to compare two checkouts.

    python scripts/fingerprint.py arch   OUT.json   # params, MACs and input shape of every registered model
    python scripts/fingerprint.py budget OUT.json   # each budget model of params.yaml, 40 steps at seed 0

Run it from each checkout's root (with that checkout first on PYTHONPATH) and compare the two JSON files: every
value must be equal. The budget entries train each model of a paper's ``models`` list in params.yaml for 40 steps
and test on 4 batches (records go to a temporary folder, never to results/). Multi-threaded CPU kernels can
reorder float sums from run to run on a loaded machine, so compare budget fingerprints made with
OMP_NUM_THREADS=1 on both sides.
"""

from __future__ import annotations

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


def budget() -> dict[str, Any]:
    from harness.runner import run

    papers = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))["papers"]
    tmp = Path(tempfile.mkdtemp(prefix="fingerprint-"))
    result = {}
    for paper, section in papers.items():
        if "budget" not in section["tiers"]:
            continue
        config = yaml.safe_load(registry.reproduction(paper).config_path("budget").read_text(encoding="utf-8"))
        config["trainer"].update(max_steps=STEPS, limit_test_batches=TEST_BATCHES)
        path = tmp / f"{paper}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        for model in section.get("models") or [config["model"]]:
            (record,) = run(paper, tier="budget", model=model, seed=0, config_path=path, runs_dir=tmp / "runs")
            result[f"{paper}/{model}"] = json.loads(record.read_text(encoding="utf-8"))["metrics"]
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("arch", "budget"):
        print(__doc__, file=sys.stderr)
        return 2
    result = arch() if argv[0] == "arch" else budget()
    Path(argv[1]).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
