"""Shared fixtures: the throwaway toy plugin made visible through entry-point metadata, and a CLI runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import registry

TOY_SRC = Path(__file__).parent / "toy_plugin"
REPO = Path(__file__).resolve().parents[1]


def write_dist_info(site: Path, name: str, entry_points: dict[str, dict[str, str]]) -> Path:
    """Make ``site`` look like a folder with an installed distribution ``name`` declaring ``entry_points``."""
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = []
    for group, eps in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{ep_name} = {value}" for ep_name, value in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return info


TOY_ENTRY_POINTS = {
    "harness.reproductions": {"toy-paper": "toy_paper:REPRODUCTION"},
    "harness.tasks": {"toy-digits": "toy_paper:TOY_TASK"},
}


@pytest.fixture
def toy_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    write_dist_info(site, "toy-plugin", TOY_ENTRY_POINTS)
    return site


@pytest.fixture
def toy(toy_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy plugin registered in this process, with the cwd in a fresh folder; returns that folder."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.syspath_prepend(str(TOY_SRC))
    monkeypatch.syspath_prepend(str(toy_site))
    monkeypatch.chdir(work)
    registry.reproductions.cache_clear()
    registry.tasks.cache_clear()
    yield work
    registry.reproductions.cache_clear()
    registry.tasks.cache_clear()


def harness_cli(*args: str, cwd: Path, site: Path | None = None, src: Path = TOY_SRC) -> subprocess.CompletedProcess:
    """Run the real ``harness`` console script in a subprocess, with ``site`` (and the toy source) on its path."""
    env = dict(os.environ)
    extra = [str(site), str(src)] if site else []
    env["PYTHONPATH"] = os.pathsep.join(extra + [env.get("PYTHONPATH", "")]).strip(os.pathsep)
    exe = Path(sys.executable).parent / "harness"
    return subprocess.run([str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def cli_json(*args: str, cwd: Path, site: Path | None = None):
    done = harness_cli(*args, "--json", cwd=cwd, site=site)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def make_record(**fields):
    """A valid ``harness.run/1`` record; ``fields`` override any top-level field."""
    from harness.records import RunRecord

    data = {
        "schema": "harness.run/1", "run_id": "toy-paper.toy-mlp.full.digits.test.s0.abc", "paper": "toy-paper",
        "model": "toy-mlp", "tier": "full", "dataset": "digits", "split": "test", "seed": 0,
        "metrics": {"accuracy": 95.0}, "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:00Z",
        "provenance": {"git_sha": "abc", "git_dirty": False, "config_hash": "cfg"}, "protocol": "toy-holdout",
    }  # fmt: skip
    data.update(fields)
    if "run_id" not in fields:
        data["run_id"] = (
            f"{data['paper']}.{data['model']}.{data['tier']}.{data['dataset']}.{data['split']}.s{data['seed']}"
        )
    return RunRecord.model_validate(data)


def make_plan(records, claims=("c",), seeds=None, fixed_at="2025-12-01T00:00:00Z", paper="toy-paper", **fields):
    """A budget plan covering ``claims`` with the recipes and seeds of ``records`` (fixed before them)."""
    from harness.plans import Plan, recipe_hash

    hashes = sorted({recipe_hash(r.config) for r in records} - {None})
    entry = {
        "recipes": {f"recipe-{i}": h for i, h in enumerate(hashes)},
        "seeds": sorted({r.seed for r in records}) if seeds is None else seeds,
        "smallest_effect": 1.0, "stopping": "fixed n: every planned seed, no interim look", **fields,
    }  # fmt: skip
    return Plan.model_validate(
        {"paper": paper, "fixed_at": fixed_at, "claims": [{"claim": c, **entry} for c in claims]}
    )
