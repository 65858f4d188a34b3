"""The pipeline under real DVC, in a fresh git repository with no remote: two toy papers (the toy plugin and a
second, arch-only one) registered as installed plugins, dvc.yaml generated from the registry.

Checked: `dvc repro` runs every paper and ends with the report; an unchanged pipeline skips the papers; changing one
paper's params re-runs only that paper; `dvc repro <paper>` runs one paper; a failing re-run loses no record (DVC
deletes only the stage's summary) and leaves the database as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.records import read_record, write_record
from tests.conftest import REPO, TOY_ENTRY_POINTS, TOY_SRC, make_record, write_dist_info

VENV = Path(sys.executable).parent.parent
DVC = VENV / "bin" / "dvc"
TOYS = ("toy-paper", "toy-other")
OTHER_INIT = """from harness.registry import ModelSpec, Reproduction

REPRODUCTION = Reproduction(
    id="toy-other", title="Another Toy Paper", arxiv="2001.00002v1", package="toy_other",
    models=(ModelSpec(id="other-mlp", build="toy_paper.model:ToyMLP", kwargs={"hidden": 8}, input_shape=(1, 64),
                      dataset="digits"),),
)
"""
OTHER_CLAIMS = """defaults: {paper: toy-other, arxiv: 2001.00002v1, dataset: digits}
claims:
  - {id: params, source: Table 1, kind: arch, model: other-mlp, split: none, metric: params_m, value: 0.000610,
     unit: M, higher_is_better: false, tolerance: 0.000005}
"""

pytestmark = pytest.mark.skipif(not DVC.exists(), reason="needs dvc in the virtual environment (setup.sh)")


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)  # fmt: skip


def run(repo: Path, *argv: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(repo / "site"), str(repo / "plugins"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path.rstrip(os.pathsep), "DVC_NO_ANALYTICS": "1"}  # (a checkout on the path)
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return run(repo, str(DVC), *args)


def set_params(repo: Path, paper: str, **values) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["papers"][paper].update(values)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh clone-like repository: scripts/pipeline.py, two plugin papers, .venv, `dvc init`, one commit."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "pipeline.py", repo / "scripts")
    shutil.copy(REPO / ".dvcignore", repo)
    shutil.copytree(TOY_SRC / "toy_paper", repo / "plugins" / "toy_paper", ignore=shutil.ignore_patterns("__pycache__"))
    other = repo / "plugins" / "toy_other"
    other.mkdir()
    (other / "__init__.py").write_text(OTHER_INIT)
    (other / "claims.yaml").write_text(OTHER_CLAIMS)
    points = {group: dict(eps) for group, eps in TOY_ENTRY_POINTS.items()}
    points["harness.reproductions"]["toy-other"] = "toy_other:REPRODUCTION"
    write_dist_info(repo / "site", "toy-plugins", points)
    (repo / ".venv").symlink_to(VENV)
    (repo / ".gitignore").write_text(".venv\n/results/\n/data/\n/site/\n__pycache__/\n")  # dvc.lock: untracked
    git(repo, "init", "-q")
    assert dvc(repo, "init", "-q").returncode == 0
    assert dvc(repo, "config", "core.analytics", "false").returncode == 0
    done = run(repo, sys.executable, "scripts/pipeline.py", "generate")
    assert done.returncode == 0, done.stderr
    papers = yaml.safe_load((repo / "params.yaml").read_text())["papers"]
    assert papers["toy-paper"]["tiers"] == ["arch", "smoke", "budget"] and papers["toy-other"]["tiers"] == ["arch"]
    for paper in set(papers) - set(TOYS):
        set_params(repo, paper, tiers=[])  # the repository's own papers: only their report, no training here
    set_params(repo, "toy-paper", tiers=["arch", "smoke"])  # (budget is the same toy config again)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fresh clone")
    return repo


def records(repo: Path) -> set[str]:
    return {p.name for p in (repo / "results" / "runs").glob("*.json")}


@pytest.mark.slow
def test_dvc_repro_from_a_fresh_clone(repo: Path) -> None:
    done = dvc(repo, "repro")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for stage in (*TOYS, "report"):
        assert f"Running stage '{stage}'" in out
    assert "+ .venv/bin/harness run toy-paper --tier smoke" in out
    assert out.index("Running stage 'report'") > out.index("Running stage 'toy-other'")
    report = out[out.index("Running stage 'report'") :]
    assert "> .venv/bin/harness report" in report and " claim(s). Paper's numbers (" in report
    assert re.search(r"toy-other +params +arch +params_m +0.00061 +5e-06 +reproduced +- +arch", report), report
    made = records(repo)
    assert len([r for r in made if r.startswith("toy-paper.")]) == 4 and len(made) >= 5  # 3 arch + smoke; other arch
    summary = yaml.safe_load((repo / "results" / "stages" / "toy-paper.json").read_text())
    tiers = [run["tier"] for run in summary["runs"]]
    # with a pool of workers (more than one CPU) profiling is one command per model: toy-paper has 3
    assert tiers == ["arch"] * (3 if (os.cpu_count() or 1) > 1 else 1) + ["smoke"]
    assert (repo / "results" / "harness.duckdb").exists()

    again = dvc(repo, "repro")
    assert again.returncode == 0
    assert "Stage 'toy-paper' didn't change, skipping" in again.stdout
    assert "Running stage 'toy-paper'" not in again.stdout and "Running stage 'report'" in again.stdout

    set_params(repo, "toy-other", seeds=[0])  # one paper's params: only that paper re-runs
    changed = dvc(repo, "repro")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    assert "Running stage 'toy-other'" in changed.stdout and "Running stage 'toy-paper'" not in changed.stdout

    set_params(repo, "toy-other", seeds=[1])
    one = dvc(repo, "repro", "toy-other")  # one paper, by its id
    assert one.returncode == 0
    assert "Running stage 'toy-other'" in one.stdout and "Running stage 'report'" not in one.stdout

    experiment = dvc(repo, "exp", "run", "toy-other", "-S", "papers.toy-other.tiers=[]")  # a parameter change away
    assert experiment.returncode == 0, experiment.stdout + experiment.stderr
    assert "Running stage 'toy-other'" in experiment.stdout
    assert yaml.safe_load((repo / "params.yaml").read_text())["papers"]["toy-other"]["tiers"] == []


def test_dvc_metrics_and_plots_show_the_stage_outputs(repo: Path) -> None:
    """`dvc metrics show` lists each model's measured metrics; `dvc plots show` has a reported-vs-measured point per
    claim that has a measured mean (toy-other's params claim, at tier arch)."""
    set_params(repo, "toy-paper", tiers=[])
    assert dvc(repo, "repro", "toy-other").returncode == 0
    metrics = dvc(repo, "metrics", "show", "--json")
    assert metrics.returncode == 0, metrics.stderr
    found = json.loads(metrics.stdout)[""]["data"]["results/stages/toy-other.metrics.json"]["data"]
    assert found["other-mlp"]["arch"]["digits/none"]["params"] == 610
    plots = dvc(repo, "plots", "show", "--json", "--split")
    assert plots.returncode == 0, plots.stderr
    [point] = json.loads((repo / "results" / "stages" / "toy-other.claims.json").read_text())
    assert point == {"claim": "params", "metric": "params_m", "tier": "arch", "reported": 0.00061, "measured": 0.00061}
    assert "results/stages/toy-other.claims.json" in plots.stdout


def test_a_failed_rerun_keeps_records_and_database(repo: Path) -> None:
    for seed in (0, 1):
        write_record(make_record(seed=seed), repo / "results" / "runs")
    set_params(repo, "toy-paper", tiers=[])
    assert dvc(repo, "repro", "toy-paper").returncode == 0  # its stage: no tier to run, then its report
    assert run(repo, str(VENV / "bin" / "harness"), "ingest").returncode == 0
    db = repo / "results" / "harness.duckdb"
    before, digest = records(repo), hashlib.sha256(db.read_bytes()).hexdigest()
    assert len(before) == 2 and (repo / "results" / "stages" / "toy-paper.json").exists()

    set_params(repo, "toy-paper", tiers=["full"], data_root=str(repo / "no-such-data"))  # the toy has no full tier
    failed = dvc(repo, "repro", "toy-paper")
    assert failed.returncode != 0
    assert "no 'full' config for 'toy-paper'" in failed.stderr
    assert "the records already written stay in results/runs/" in failed.stderr
    assert records(repo) == before  # records are not DVC outputs: nothing was deleted
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest  # and the database was not touched
    assert not (repo / "results" / "stages" / "toy-paper.json").exists()  # DVC deleted only the stage's summary


@pytest.mark.slow
def test_dvc_repro_runs_a_chain_in_order_and_reuses_its_stages(repo: Path) -> None:
    """The toy chain (configs/smoke-pretrain.yaml, then smoke-finetune.yaml) under `dvc repro`: listing only the last
    stage runs the first one before it; listing both in order, forced, trains nothing again."""
    set_params(repo, "toy-paper", tiers=["smoke-finetune"])
    done = dvc(repo, "repro", "toy-paper")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "starts from a stage that has not run; running it first: harness run toy-paper --tier smoke --config " \
           "plugins/toy_paper/configs/smoke-pretrain.yaml --seed 0" in done.stdout + done.stderr  # fmt: skip
    made = records(repo)
    assert len(made) == 2
    summary = yaml.safe_load((repo / "results" / "stages" / "toy-paper.json").read_text())
    (child,) = summary["runs"][0]["run_ids"]
    parent = read_record(repo / "results" / "runs" / f"{child}.json").parents[0]
    assert made == {f"{child}.json", f"{parent}.json"}
    sha = read_record(repo / "results" / "runs" / f"{parent}.json").artifacts["checkpoint_sha256"]
    assert (repo / "results" / "checkpoints" / f"{sha}.safetensors").is_file()

    set_params(repo, "toy-paper", tiers=["smoke-pretrain", "smoke-finetune"])
    again = dvc(repo, "repro", "-f", "toy-paper")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "running it first" not in again.stdout + again.stderr and records(repo) == made
    summary = yaml.safe_load((repo / "results" / "stages" / "toy-paper.json").read_text())
    assert [run["run_ids"] for run in summary["runs"]] == [[parent], [child]]
