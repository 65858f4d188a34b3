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
from harness.records import Provenance, RunRecord, read_record
from harness.verdicts import judge
from reproductions.sgd_width import REPRODUCTION, sweep
from reproductions.sgd_width.summary import SUMMARY, is_summary, optimum
from reproductions.sgd_width.variants import FAMILIES

LR_MAX = 40.0  # the stand-in "diverges" above this learning rate
WIDTHS = [1, 2, 4, 8, 16]  # five: the fewest whose rank correlation can be significant at 0.05 (p = 1/60)
FITS = len(WIDTHS) * 10 * 2 * 2  # widths x lr x batch x seeds
CONFIG = {
    "tier": "budget", "protocol": "late-time-test-accuracy", "dataset": "fashion-mnist", "split": "test",
    "seeds": [0, 1], "data": {"train_size": 1000}, "training": {"epochs": 1, "late_epochs": 1},
    "executor": {"kind": "local", "n_jobs": 1},
    "studies": [{"family": "mlp", "widths": WIDTHS, "grids": {
        "ntk": {"lr": [2.0**k for k in range(-3, 7)], "batch_size": [10, 40]}}}],
}  # fmt: skip


def fake_train(peak_per_width: float = 100.0, exponent: float = 1.0):
    """Accuracy = 80 + 2 log2(width) - ln(g_bar / peak)^2 with peak = peak_per_width * width**exponent * 2**(seed/4)
    (the seed moves each run's peak by a quarter of the factor-2 lattice step; the seed-mean accuracy, whose
    maximum the summary takes as the paper does, still peaks on the lattice point peak_per_width * width**exponent)."""
    calls = []

    def train(run, work_dir):
        calls.append(run["run_id"])
        c = run["config"]
        metrics = sweep._noise_metrics(c, c["train_size"], FAMILIES[c["family"]].fan_in(c["width"], c["base_width"]))
        if c["lr"] > LR_MAX:
            return "diverged", {**metrics, "diverged_at_step": 3.0}, "fake-data"
        peak = peak_per_width * c["width"] ** exponent * 2 ** (run["seed"] / 4)
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
    assert len(runs) == FITS and len({r["run_id"] for r in runs}) == len(runs)
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
    assert len(second.calls) == FITS - 5 and not set(second.calls) & set(first.calls)
    records = [read_record(p) for p in paths]
    summaries = sum(is_summary(r) for r in records)
    assert sum(not is_summary(r) for r in records) == FITS and summaries == len(WIDTHS)  # one summary per width
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
    records = [read_record(p) for p in run(config_file, tmp_path / "runs")]
    statuses = [r.status for r in records if not is_summary(r)]
    # lr 64 diverges at every width, both batch sizes and both seeds
    assert statuses.count("failed") == 2 and statuses.count("diverged") == len(WIDTHS) * 2 * 2
    failed = next(r for r in records if r.status == "failed")
    assert "out of memory" in Path(failed.artifacts["error_log"]).read_text()
    summary = next(r for r in records if is_summary(r) and r.model == "mlp-w2-ntk")
    assert summary.metrics["failed_runs"] == 2 and summary.metrics["diverged_runs"] == 4
    assert summary.metrics["max_stable_lr"] == 32.0 and summary.metrics["lr_censored"] == 0.0


def test_a_narrowed_sweep_waits_for_every_seed(config_file, tmp_path, monkeypatch):
    """The optimum is of the seed-mean accuracy: a sweep of one seed writes no summary until the others are in."""
    monkeypatch.setattr(sweep, "train_run", fake_train())
    runs_dir = tmp_path / "runs"
    first = [read_record(p) for p in run(config_file, runs_dir, model="mlp-w1-ntk", seed=0)]
    assert len(first) == 10 * 2 and not any(is_summary(r) for r in first)
    second = [read_record(p) for p in run(config_file, runs_dir, model="mlp-w1-ntk", seed=1)]
    summaries = [r for r in second if is_summary(r)]
    assert len(summaries) == 1 and summaries[0].config["seeds"] == [0, 1] and summaries[0].seed == 0
    assert len(summaries[0].config["run_ids"]) == 40


def test_summary_values(config_file, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "train_run", fake_train())
    records = [read_record(p) for p in run(config_file, tmp_path / "runs")]
    summary = {r.model: r for r in records if is_summary(r)}["mlp-w4-ntk"]
    # g_bar = lr * 1000 / (B * 2): lattice 6.25 * 2^k (B = 40) and 25 * 2^k (B = 10); the seed-mean peak is 400
    assert summary.metrics["optimal_noise_scale"] == pytest.approx(400.0)
    assert summary.metrics["optimum_at_edge"] == 0.0 and summary.metrics["max_stable_lr"] == 32.0
    # B_max = eps_max N / (g_bar v0) = 32 * 1000 / (400 * 2) = 40
    assert summary.metrics["max_batch_size"] == pytest.approx(40.0)
    assert summary.config["width"] == 4 and summary.config["seeds"] == [0, 1] and len(summary.config["run_ids"]) == 40
    at_best = [r for r in records if r.model == "mlp-w4-ntk" and not is_summary(r)
               and (r.config["lr"], r.config["batch_size"]) == (summary.metrics["best_lr"], 10)]  # fmt: skip
    assert summary.metrics["best_batch_size"] == 10.0 and len(at_best) == 2
    assert summary.metrics["best_accuracy"] == pytest.approx(sum(r.metrics["accuracy"] for r in at_best) / 2)
    assert summary.metrics["best_point_seeds"] == 2.0


def _record(seed: int, lr: float, accuracy: float | None, status: str = "ok") -> RunRecord:
    """A hand-made run record of mlp-w1-ntk (N = 1000, B = 10, fan_in 32): g_bar = lr * 1000 / (10 * 2)."""
    metrics = {"normalized_noise_scale": lr * 50.0, "train_examples": 1000.0, "fan_in": 32.0}
    if accuracy is not None:
        metrics["accuracy"] = accuracy
    return RunRecord(
        schema="harness.run/1", run_id=f"r.s{seed}.lr{lr}".replace(".", "-"), paper="sgd-width", model="mlp-w1-ntk",
        tier="budget", dataset="fashion-mnist", split="test", seed=seed, metrics=metrics,
        started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:01:00Z", status=status,
        provenance=Provenance(git_sha=None, git_dirty=None, config_hash="x"),
        config={"lr": lr, "batch_size": 10, "parameterization": "ntk", "sigma_w": 2**0.5},
    )  # fmt: skip


def test_the_optimum_is_of_the_seed_mean_accuracy():
    """Section 1 of the paper: the optimal hyper-parameters maximise the test accuracy averaged over runs. Seed 0 alone
    would pick lr 1, seed 1 alone lr 4; their mean (75, 84.5, 80) peaks at lr 2."""
    records = [_record(0, 1.0, 90.0), _record(0, 2.0, 85.0), _record(0, 4.0, 70.0), _record(0, 8.0, 60.0),
               _record(1, 1.0, 60.0), _record(1, 2.0, 84.0), _record(1, 4.0, 90.0), _record(1, 8.0, 50.0)]  # fmt: skip
    metrics = optimum(records)
    assert metrics["best_lr"] == 2.0 and metrics["optimal_noise_scale"] == pytest.approx(100.0)
    assert metrics["best_accuracy"] == pytest.approx(84.5) and metrics["best_accuracy_std"] == pytest.approx(0.5**0.5)


def test_a_point_where_a_seed_diverged_is_never_the_optimum():
    """lr 2 has the best mean over the seeds that finished, but seed 1 diverged there: the point is unstable."""
    records = [_record(0, 1.0, 70.0), _record(0, 2.0, 95.0), _record(0, 4.0, 60.0),
               _record(1, 1.0, 70.0), _record(1, 2.0, None, "diverged"), _record(1, 4.0, 60.0)]  # fmt: skip
    metrics = optimum(records)
    assert metrics["best_lr"] == 1.0 and metrics["optimum_at_edge"] == 1.0 and "optimal_noise_scale" not in metrics
    assert metrics["max_stable_lr"] == 1.0 and metrics["diverged_runs"] == 1.0
    crashed = [*records[:3], _record(1, 1.0, None, "failed"), _record(1, 2.0, 93.0), _record(1, 4.0, 60.0)]
    metrics = optimum(crashed)  # a crash says nothing about lr 1: its point averages the seed that finished
    assert metrics["best_lr"] == 2.0 and metrics["best_accuracy"] == pytest.approx(94.0)


def _planned(claim, records):
    """Budget claims are judged under a plan: here one covering exactly these records."""
    from harness.verdicts import matches
    from tests.conftest import make_plan

    seeds = sorted({r.seed for r in records if matches(claim, r)})
    return judge(claim, records, make_plan(records, claims=(claim.id,), paper="sgd-width", seeds=seeds))


def _claim(claim_id: str):
    from harness.claims import load_claims

    return next(c for c in load_claims(REPRODUCTION.claims_path, "sgd-width") if c.id == claim_id)


@pytest.mark.parametrize("exponent", [1.0, 0.0])
def test_proportionality_claim_on_a_lattice_has_no_interval(config_file, tmp_path, monkeypatch, exponent):
    """The summary's optimal noise scale sits on the sweep's factor-2 lattice, so with this noiseless fake the points
    lie exactly on a line of slope ``exponent``: the slope is right, but the residuals are 0 and say nothing of the
    noise (the lattice hides it), so the verdict is inconclusive, not decided (docs/verdicts.md, "Zero spread")."""
    monkeypatch.setattr(sweep, "train_run", fake_train(peak_per_width=50.0 * (1 if exponent else 4), exponent=exponent))
    records = [read_record(p) for p in run(config_file, tmp_path / "runs")]
    verdict = _planned(_claim("fashion-mnist-mlp-ntk-optimal-noise-proportional-to-width"), records)
    # one point per width
    assert (verdict.status, verdict.n, verdict.tier) == ("inconclusive", len(WIDTHS), "budget"), verdict.reason
    assert verdict.mean == pytest.approx(exponent) and "zero spread" in verdict.reason
    batch = _planned(_claim("fashion-mnist-mlp-ntk-max-batch-shrinks-with-width"), records)
    assert batch.status == ("reproduced" if exponent else "not-run" if batch.n == 0 else "inconclusive")
    accuracy = _planned(_claim("fashion-mnist-mlp-ntk-accuracy-grows-with-width"), records)
    assert accuracy.status == "reproduced", accuracy.reason


def test_claims_judge_only_the_current_summaries():
    """Summaries of an older derivation stay in results/runs (records are immutable); the claims' condition on
    ``config.summary`` keeps them out, so it must name the derivation summary.py writes now."""
    from harness.claims import load_claims

    claims = load_claims(REPRODUCTION.claims_path, "sgd-width")
    assert claims and all(c.conditions == {"summary": SUMMARY} for c in claims)


def test_edge_optima_do_not_count(config_file, tmp_path, monkeypatch):
    """A peak beyond the grid: the best run sits at the largest stable noise scale, which bounds the optimum."""
    monkeypatch.setattr(sweep, "train_run", fake_train(peak_per_width=1e6))
    records = [read_record(p) for p in run(config_file, tmp_path / "runs")]
    summaries = [r for r in records if is_summary(r)]
    assert len(summaries) == len(WIDTHS) and all(
        r.metrics["optimum_at_edge"] == 1.0 and "optimal_noise_scale" not in r.metrics for r in summaries
    )
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


def test_slurm_executor_without_slurm_is_an_error_not_a_local_storm(tmp_path, monkeypatch):
    """``kind: slurm`` where there is no srun: one error before anything is submitted, not every task run here."""
    import submitit.slurm.slurm as slurm

    monkeypatch.setattr(slurm.shutil, "which", lambda name: None)
    with pytest.raises(HarnessError, match="no SLURM on this machine"):
        sweep.make_submitit_executor({"parameters": {"timeout_min": 5}}, tmp_path / "logs")
    assert not (tmp_path / "logs").exists()


def test_sweep_through_submitit(config_file, tmp_path, monkeypatch):
    """The same sweep through submitit's in-process debug executor, three grid points per array task."""
    monkeypatch.setattr(sweep, "train_run", fake_train())
    executor = {"kind": "slurm", "cluster": "debug", "runs_per_job": 3, "folder": str(tmp_path / "submitit"),
                "parameters": {"timeout_min": 5, "slurm_partition": "ignored-off-slurm"}}  # fmt: skip
    paths = run(config_file, tmp_path / "runs", model="mlp-w1-ntk", executor=executor)
    records = [read_record(p) for p in paths]
    assert sum(not is_summary(r) for r in records) == 40 and sum(is_summary(r) for r in records) == 1


def test_accuracy_curves_take_the_best_seed_mean_pair():
    """Two (lr, B) pairs give g_bar 50: (1, 10) with seed means 71 and (4, 40) with 75, but at (2, 20) a seed diverged
    (left out, as in the summary); the curve's point is the best stable pair's seed mean."""
    from reproductions.sgd_width.figures import accuracy_curves

    def row(seed, lr, batch, accuracy, status="ok"):
        metrics = {"normalized_noise_scale": 50.0} | ({"accuracy": accuracy} if accuracy is not None else {})
        return {"model": "mlp-w1-ntk", "seed": seed, "status": status, "metrics": metrics,
                "config": {"lr": lr, "batch_size": batch}}  # fmt: skip

    rows = [row(0, 1.0, 10, 70.0), row(1, 1.0, 10, 72.0), row(0, 4.0, 40, 74.0), row(1, 4.0, 40, 76.0),
            row(0, 2.0, 20, 99.0), row(1, 2.0, 20, None, "diverged")]  # fmt: skip
    (curve,) = accuracy_curves(rows)
    assert curve["accuracy"] == pytest.approx(75.0) and curve["seeds"] == 2 and curve["width"] == 1


def test_rederive_from_records_on_disk(config_file, tmp_path, monkeypatch):
    """The summaries of stored records without the sweep's plan equal the sweep's own; two sweeps mixed are refused."""
    from reproductions.sgd_width.summary import rederive

    monkeypatch.setattr(sweep, "train_run", fake_train())
    records = [read_record(p) for p in run(config_file, tmp_path / "runs")]
    again = [read_record(p) for p in rederive("sgd-width", records, tmp_path / "rederived")]
    assert {r.run_id: r.metrics for r in again} == {r.run_id: r.metrics for r in records if is_summary(r)}
    runs = [r for r in records if not is_summary(r)]
    twice = runs[0].model_copy(update={"run_id": runs[0].run_id + "-again"})
    with pytest.raises(HarnessError, match="recorded twice"):
        rederive("sgd-width", [*runs, twice], tmp_path / "mixed")
