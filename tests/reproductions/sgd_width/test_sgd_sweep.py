"""The sweep without training: planning and run ids, resume of an interrupted sweep, failed and diverged runs, the
summaries and the claims' rules coming out either way, and the submitit executor's construction and use.

Training is replaced by a stand-in (``fake_train``) whose accuracy peaks at a chosen normalized noise scale per
width; the real Lightning fits are exercised by test_sgd_e2e.py.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessError
from harness.records import read_record
from harness.verdicts import judge
from reproductions.sgd_width import REPRODUCTION, sweep
from reproductions.sgd_width.summary import is_summary
from reproductions.sgd_width.variants import FAMILIES

LR_MAX = 40.0  # the stand-in "diverges" above this learning rate
CONFIG = {
    "tier": "budget", "protocol": "late-time-test-accuracy", "dataset": "fashion-mnist", "split": "test",
    "seeds": [0, 1], "data": {"train_size": 1000}, "training": {"epochs": 1, "late_epochs": 1},
    "executor": {"kind": "local", "n_jobs": 1},
    "studies": [{"family": "mlp", "widths": [1, 2, 4, 8], "grids": {
        "ntk": {"lr": [2.0**k for k in range(-3, 7)], "batch_size": [10, 40]}}}],
}  # fmt: skip


def fake_train(peak_per_width: float = 100.0, exponent: float = 1.0):
    """Accuracy = 80 + 2 log2(width) - ln(g_bar / peak)^2 with peak = peak_per_width * width**exponent * 2**seed
    (the seed moves the optimum by one lattice step, so that a fitted slope has noise to estimate)."""
    calls = []

    def train(run, work_dir):
        calls.append(run["run_id"])
        c = run["config"]
        metrics = sweep._noise_metrics(c, c["train_size"], FAMILIES[c["family"]].fan_in(c["width"], c["base_width"]))
        if c["lr"] > LR_MAX:
            return "diverged", {**metrics, "diverged_at_step": 3.0}, "fake-data"
        peak = peak_per_width * c["width"] ** exponent * 2 ** run["seed"]
        accuracy = 80 + 2 * math.log2(c["width"]) - math.log(metrics["normalized_noise_scale"] / peak) ** 2
        return "ok", {**metrics, "accuracy": accuracy + 0.01 * run["seed"]}, "fake-data"

    train.calls = calls
    return train


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "budget.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    return path


def run(config_file: Path, runs: Path, **kwargs) -> list[Path]:
    return sweep.run_sweep(REPRODUCTION, config_file, tier="budget", runs_dir=runs, **kwargs)


def test_plan_ids_are_deterministic_and_filterable(config_file: Path):
    config = sweep.load_sweep_config(config_file, "budget")
    runs = sweep.plan_runs("sgd-width", config, "budget")
    assert len(runs) == 4 * 10 * 2 * 2 and len({r["run_id"] for r in runs}) == len(runs)
    assert [r["run_id"] for r in runs] == [r["run_id"] for r in sweep.plan_runs("sgd-width", config, "budget")]
    one = sweep.plan_runs("sgd-width", config, "budget", model="mlp-w4-ntk", seed=7)
    assert len(one) == 20 and {r["model"] for r in one} == {"mlp-w4-ntk"} and {r["seed"] for r in one} == {7}
    moved = sweep.plan_runs("sgd-width", config, "budget", data_root="/elsewhere")
    assert [r["run_id"] for r in moved] == [r["run_id"] for r in runs]  # where the data lies is not the run


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"studies": [{"family": "vit", "widths": [1], "grids": {}}]}, "unknown family 'vit'"),
        ({"studies": [{"family": "mlp", "widths": [1], "grids": {"mup": {"lr": [1], "batch_size": [1]}}}]}, "mup"),
        ({"sweep": 1}, "unknown key"),
        ({"tier": "full"}, "run asked for tier 'budget'"),
    ],
)
def test_config_errors_name_the_key(tmp_path: Path, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, **change}))
    with pytest.raises(HarnessError, match=message):
        sweep.load_sweep_config(path, "budget")


def test_interrupted_sweep_resumes_with_only_what_is_missing(config_file, tmp_path, monkeypatch):
    runs_dir = tmp_path / "runs"
    first = fake_train()

    def interrupted(run, work_dir):
        if len(first.calls) == 5:
            raise KeyboardInterrupt  # the user (or the scheduler) stops the sweep: no record for this run
        return first(run, work_dir)

    monkeypatch.setattr(sweep, "train_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(config_file, runs_dir)
    assert len(list(runs_dir.glob("*.json"))) == 5
    second = fake_train()
    monkeypatch.setattr(sweep, "train_run", second)
    paths = run(config_file, runs_dir)
    assert len(second.calls) == 160 - 5 and not set(second.calls) & set(first.calls)
    records = [read_record(p) for p in paths]
    assert sum(not is_summary(r) for r in records) == 160 and sum(is_summary(r) for r in records) == 8
    third = fake_train()
    monkeypatch.setattr(sweep, "train_run", third)
    assert run(config_file, runs_dir) == paths and third.calls == []  # complete: nothing runs, nothing is rewritten


def test_diverged_and_failed_runs_are_recorded(config_file, tmp_path, monkeypatch):
    train = fake_train()

    def flaky(run, work_dir):
        if run["config"]["lr"] == 1.0 and run["config"]["batch_size"] == 40 and run["model"] == "mlp-w2-ntk":
            raise ValueError("out of memory, say")
        return train(run, work_dir)

    monkeypatch.setattr(sweep, "train_run", flaky)
    records = [read_record(p) for p in run(config_file, tmp_path / "runs", seed=0)]
    statuses = [r.status for r in records if not is_summary(r)]
    assert statuses.count("failed") == 1 and statuses.count("diverged") == 4 * 2  # lr 64 at both batch sizes
    failed = next(r for r in records if r.status == "failed")
    assert "out of memory" in Path(failed.artifacts["error_log"]).read_text()
    summary = next(r for r in records if is_summary(r) and r.model == "mlp-w2-ntk")
    assert summary.metrics["failed_runs"] == 1 and summary.metrics["diverged_runs"] == 2
    assert summary.metrics["max_stable_lr"] == 32.0 and summary.metrics["lr_censored"] == 0.0


def test_summary_values(config_file, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "train_run", fake_train())
    records = [read_record(p) for p in run(config_file, tmp_path / "runs", seed=0)]
    summary = {r.model: r for r in records if is_summary(r)}["mlp-w4-ntk"]
    # g_bar = lr * 1000 / (B * 2): lattice 6.25 * 2^k (B = 40) and 25 * 2^k (B = 10); the peak is 400
    assert summary.metrics["optimal_noise_scale"] == pytest.approx(400.0)
    assert summary.metrics["optimum_at_edge"] == 0.0 and summary.metrics["max_stable_lr"] == 32.0
    # B_max = eps_max N / (g_bar v0) = 32 * 1000 / (400 * 2) = 40
    assert summary.metrics["max_batch_size"] == pytest.approx(40.0)
    assert summary.config["width"] == 4 and len(summary.config["run_ids"]) == 20


def _claim(claim_id: str):
    from harness.claims import load_claims

    return next(c for c in load_claims(REPRODUCTION.claims_path, "sgd-width") if c.id == claim_id)


@pytest.mark.parametrize(
    ("exponent", "expected"),
    [(1.0, "reproduced"), (0.0, "not-reproduced")],
)
def test_proportionality_claim_can_go_either_way(config_file, tmp_path, monkeypatch, exponent, expected):
    monkeypatch.setattr(sweep, "train_run", fake_train(peak_per_width=50.0 * (1 if exponent else 4), exponent=exponent))
    records = [read_record(p) for p in run(config_file, tmp_path / "runs")]
    verdict = judge(_claim("fashion-mnist-mlp-ntk-optimal-noise-proportional-to-width"), records)
    assert (verdict.status, verdict.n, verdict.tier) == (expected, 8, "budget"), verdict.reason
    batch = judge(_claim("fashion-mnist-mlp-ntk-max-batch-shrinks-with-width"), records)
    assert batch.status == ("reproduced" if exponent else "not-run" if batch.n == 0 else "inconclusive")
    accuracy = judge(_claim("fashion-mnist-mlp-ntk-accuracy-grows-with-width"), records)
    assert accuracy.status == "reproduced"


def test_edge_optima_do_not_count(config_file, tmp_path, monkeypatch):
    """A peak beyond the grid: the best run sits at the largest stable noise scale, which bounds the optimum."""
    monkeypatch.setattr(sweep, "train_run", fake_train(peak_per_width=1e6))
    records = [read_record(p) for p in run(config_file, tmp_path / "runs", seed=0)]
    summaries = [r for r in records if is_summary(r)]
    assert all(r.metrics["optimum_at_edge"] == 1.0 and "optimal_noise_scale" not in r.metrics for r in summaries)
    verdict = judge(_claim("fashion-mnist-mlp-ntk-optimal-noise-proportional-to-width"), records)
    assert verdict.status == "not-run" and verdict.n == 0  # no summary carries an optimum to judge


def test_submitit_executor_parameters_for_slurm(tmp_path, monkeypatch):
    """The SLURM executor gets the config's parameters (srun's presence faked: no cluster here)."""
    import submitit.slurm.slurm as slurm

    monkeypatch.setattr(slurm.shutil, "which", lambda name: f"/usr/bin/{name}")
    executor = {"cluster": "slurm", "parameters": {"timeout_min": 30, "slurm_partition": "gpu", "cpus_per_task": 2,
                                                   "gpus_per_node": 1, "slurm_array_parallelism": 16}}  # fmt: skip
    auto = sweep.make_submitit_executor(executor, tmp_path / "logs")
    text = auto._executor._make_submission_file_text("python -m something", "uid")
    for line in (
        "#SBATCH --partition=gpu",
        "#SBATCH --time=30",
        "#SBATCH --cpus-per-task=2",
        "#SBATCH --gpus-per-node=1",
    ):
        assert line in text
    assert auto._executor.parameters["array_parallelism"] == 16


def test_sweep_through_submitit(config_file, tmp_path, monkeypatch):
    """The same sweep through submitit's in-process debug executor, three grid points per array task."""
    monkeypatch.setattr(sweep, "train_run", fake_train())
    executor = {"kind": "slurm", "cluster": "debug", "runs_per_job": 3, "folder": str(tmp_path / "submitit"),
                "parameters": {"timeout_min": 5, "slurm_partition": "ignored-off-slurm"}}  # fmt: skip
    paths = run(config_file, tmp_path / "runs", model="mlp-w1-ntk", seed=0, executor=executor)
    records = [read_record(p) for p in paths]
    assert sum(not is_summary(r) for r in records) == 20 and sum(is_summary(r) for r in records) == 1
