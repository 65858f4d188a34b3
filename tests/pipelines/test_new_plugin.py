"""``harness new`` scaffolds a plugin that works as written, outside this repository: pip builds and installs it from
its own pyproject.toml, ``harness list`` shows it with its claim, and its own repository gets a DVC pipeline
(``harness pipeline generate``) that ``dvc repro`` runs to a verdict, with no file of this repository involved."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError
from harness.scaffold import default_dest, scaffold
from tests.conftest import REPO, harness_cli

VENV = Path(sys.executable).parent.parent
DVC = VENV / "bin" / "dvc"
PAPER, PACKAGE, MODEL = "demo-paper", "demo_paper", "demo-paper-net"


def pip_install(plugin: Path, target: Path, editable: bool) -> None:
    """pip builds the package from its pyproject.toml and installs it into ``target`` (its code, or with ``editable``
    a pointer to the source, plus the dist-info with its entry points), without network or other packages."""
    argv = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
    done = subprocess.run([*argv, *(["-e"] if editable else []), str(plugin)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)  # fmt: skip


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scaffold, installed editable (as its README says): its folder and the site folder pip installed into."""
    root = tmp_path_factory.mktemp("new-plugin")
    done = harness_cli("new", PAPER, "--dest", str(root / "harness-demo-paper"), "--title", "A Demo Paper", cwd=root)
    assert done.returncode == 0, done.stderr
    plugin = root / "harness-demo-paper"
    pip_install(plugin, root / "site", editable=True)
    return plugin, root / "site"


def test_the_scaffold_is_listed_with_its_claim(plugin: tuple[Path, Path], tmp_path: Path) -> None:
    folder, site = plugin
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and "egg-info" not in str(p)} \
        >= {"pyproject.toml", "README.md", ".gitignore", f"{PACKAGE}/__init__.py", f"{PACKAGE}/model.py",
            f"{PACKAGE}/system.py", f"{PACKAGE}/claims.yaml", f"{PACKAGE}/configs/smoke.yaml",
            f"tests/test_{PACKAGE}.py"}  # fmt: skip
    done = harness_cli("list", "--json", cwd=tmp_path, site=site, src=folder)
    assert done.returncode == 0 and PAPER not in done.stderr, done.stderr  # its claims file validated: no warning
    (row,) = [row for row in json.loads(done.stdout) if row["id"] == PAPER]
    assert row["title"] == "A Demo Paper" and row["tiers"] == ["arch", "smoke"] and row["claims"] == 1
    assert row["models"] == [MODEL] and row["tasks"] == ["imagenet-1k"]


@pytest.mark.skipif(not DVC.exists(), reason="needs dvc in the virtual environment (setup.sh)")
def test_the_plugins_own_repository_gets_a_dvc_pipeline(plugin: tuple[Path, Path]) -> None:
    folder, site = plugin
    (folder / ".venv").symlink_to(VENV)  # the plugin's environment, as the stages call it: .venv/bin/harness
    git(folder, "init", "-q")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(folder), os.environ.get("PYTHONPATH", "")])}
    assert subprocess.run([DVC, "init", "-q"], cwd=folder, env=env).returncode == 0
    done = harness_cli("pipeline", "generate", cwd=folder, site=site, src=folder)
    assert done.returncode == 0, done.stderr
    stages = yaml.safe_load((folder / "dvc.yaml").read_text())["stages"]
    assert list(stages) == [PAPER, "report"]  # its papers only, not this repository's
    assert stages[PAPER]["cmd"] == f".venv/bin/harness pipeline stage {PAPER}" and stages[PAPER]["deps"] == [PACKAGE]
    assert stages["report"]["cmd"] == [".venv/bin/harness ingest", f".venv/bin/harness report --paper {PAPER}"]
    params = yaml.safe_load((folder / "params.yaml").read_text())
    assert params["papers"] == {PAPER: {"tiers": ["arch", "smoke"], "data_root": None, "seeds": None}}
    params["papers"][PAPER]["tiers"] = ["arch"]
    (folder / "params.yaml").write_text(yaml.safe_dump(params))
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "a new plugin")
    repro = subprocess.run([DVC, "repro"], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert repro.returncode == 0, repro.stdout + repro.stderr
    report = repro.stdout[repro.stdout.index("Running stage 'report'") :]
    assert re.search(rf"{PAPER} +{MODEL}-params +arch +params_m +0.005466 +1e-06 +reproduced +- +arch", report), report
    assert len(list((folder / "results" / "runs").glob(f"{PAPER}.{MODEL}.arch.*.json"))) == 1
    again = harness_cli("pipeline", "generate", "--check", cwd=folder, site=site, src=folder)
    assert again.returncode == 0, again.stderr


def test_new_refuses_what_would_not_work(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file").write_text("x")
    for args, message in [
        (("My_Paper", tmp_path / "a"), r"paper id 'My_Paper': lowercase letters and digits in words joined by '-'"),
        (("efficientnet", tmp_path / "b"), r"paper id 'efficientnet' is taken"),
        (("report", tmp_path / "c"), r"paper id 'report' is taken"),
        (("nets", tmp_path / "d"), r"paper id 'nets': a module named 'nets' is importable already"),
        (("fine", tmp_path / "full"), r"full: exists and is not an empty folder; pass --dest"),
    ]:
        with pytest.raises(HarnessError, match=message):
            scaffold(*args)
    with pytest.raises(HarnessError, match=r"--arxiv '1905.11946': an arXiv id with its version"):
        scaffold("fine", tmp_path / "e", arxiv="1905.11946")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # nothing written, no partial folder left


def test_the_default_folder_lies_outside_the_harness_checkout(tmp_path: Path) -> None:
    assert default_dest("my-paper", cwd=tmp_path) == tmp_path.resolve() / "harness-my-paper"
    assert default_dest("my-paper", cwd=REPO / "docs") == REPO.parent / "harness-my-paper"


@pytest.mark.slow
def test_the_installed_scaffold_runs_its_smoke_tier_and_its_own_tests(tmp_path: Path) -> None:
    """Installed as a wheel (its package data: claims.yaml, configs/), the smoke tier trains, tests and writes a
    record with the task's metrics; the scaffold's own tests pass."""
    assert harness_cli("new", PAPER, "--dest", str(tmp_path / "plugin"), cwd=tmp_path).returncode == 0
    pip_install(tmp_path / "plugin", tmp_path / "site", editable=False)
    assert (tmp_path / "site" / PACKAGE / "configs" / "smoke.yaml").is_file()
    done = harness_cli("run", PAPER, "--tier", "smoke", "--json", cwd=tmp_path, site=tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert {row["metric"] for row in json.loads(done.stdout)["results"]} == {"top1", "top5", "error"}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                           cwd=tmp_path / "plugin", env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "3 passed" in tests.stdout
