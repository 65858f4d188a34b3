"""Derive the study's per-width summaries from the sweep's run records (arXiv 1905.03776v1's three quantities).

For each model (family x width x parameterization) and seed, over its grid of learning rates and batch sizes:

- ``best_noise_scale``, ``best_accuracy``: the normalized noise scale and late-time test accuracy of the run with the
  highest accuracy (the paper defines the optimum on the test set).
- ``optimal_noise_scale``: the same noise scale, recorded only when it is an interior optimum: some finished run of
  the group has a smaller and some a larger noise scale (both with lower accuracy). A best run at the smallest or
  largest noise scale that finished (``optimum_at_edge`` = 1) bounds the optimum, it does not locate it; counting it
  would let the grid's edges, not the networks, set the trend (e.g. an edge at the largest stable learning rate and
  smallest batch grows with width through the definition alone).
- ``max_stable_lr``: the largest learning rate of the grid such that no run at it or at any smaller learning rate
  diverged (``lr_censored`` is 1 when nothing diverged: the bound lies above the grid).
- ``max_batch_size``: the largest batch size consistent with the optimal noise scale, ``B = eps_max N / (g_bar v0)``
  (variants.batch_for_noise_scale): with a learning rate no larger than ``max_stable_lr``, a larger batch gives a
  smaller noise scale than the optimum. Recorded only with an interior optimum and an observed instability
  (``lr_censored`` = 0); otherwise it is only a bound.

Each summary is itself a run record (same paper, model, tier, dataset, split and seed as its runs; ``config.summary``
names this derivation, ``config.run_ids`` the records it rests on), so the core's trend rules judge it. A summary
is written only when all runs of its group have records, and never rewritten: its id hashes its run ids.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.records import Provenance, RunRecord, canonical_hash, make_run_id, record_path, write_record
from reproductions.sgd_width.variants import batch_for_noise_scale

SUMMARY = "sgd-width-optimum/1"


def is_summary(record: RunRecord) -> bool:
    return bool(record.config and record.config.get("summary"))


def optimum(records: list[RunRecord]) -> dict[str, float]:
    """The summary metrics of one (model, seed) group of run records (see the module docstring)."""
    ok = [r for r in records if r.status == "ok" and "accuracy" in r.metrics]
    if not ok:
        return {}
    best = max(ok, key=lambda r: (r.metrics["accuracy"], -r.metrics["normalized_noise_scale"]))
    scales = [r.metrics["normalized_noise_scale"] for r in ok]
    g_bar = best.metrics["normalized_noise_scale"]
    interior = min(scales) < g_bar < max(scales)
    metrics = {
        "best_noise_scale": g_bar, "best_accuracy": best.metrics["accuracy"],
        "best_lr": best.config["lr"], "best_batch_size": float(best.config["batch_size"]),
        "optimum_at_edge": float(not interior),
        "runs": float(len(records)), "diverged_runs": float(sum(r.status == "diverged" for r in records)),
        "failed_runs": float(sum(r.status == "failed" for r in records)),
    }  # fmt: skip
    stability = _stability(records, best)
    if interior:
        metrics["optimal_noise_scale"] = g_bar
    if not interior or stability.get("lr_censored", 1.0):
        stability.pop("max_batch_size", None)
    return metrics | stability


def _stability(records: list[RunRecord], best: RunRecord) -> dict[str, float]:
    """``max_stable_lr``, ``lr_censored`` and ``max_batch_size`` (absent when even the smallest rate diverged)."""
    by_lr: dict[float, list[str]] = defaultdict(list)
    for record in records:
        if record.status != "failed":  # a crash says nothing about stability
            by_lr[record.config["lr"]].append(record.status)
    stable = None
    for lr in sorted(by_lr):
        if "diverged" in by_lr[lr]:
            break
        stable = lr
    if stable is None:
        return {}
    c, m = best.config, best.metrics
    batch = batch_for_noise_scale(
        m["normalized_noise_scale"], stable, int(m["train_examples"]), c["parameterization"], c["sigma_w"],
        int(m["fan_in"]),
    )  # fmt: skip
    return {"max_stable_lr": stable, "lr_censored": float(stable == max(by_lr)), "max_batch_size": batch}


def summary_record(paper: str, group: list[RunRecord]) -> RunRecord:
    """The summary record of one complete (model, seed) group."""
    first = group[0]
    run_ids = sorted(r.run_id for r in group)
    c = first.config
    config = {
        "summary": SUMMARY, "family": c["family"], "width": c["width"], "parameterization": c["parameterization"],
        "batch_norm": c["batch_norm"], "base_width": c["base_width"], "sigma_w": c["sigma_w"],
        "train_size": c["train_size"], "epochs": c["epochs"], "run_ids": run_ids,
    }  # fmt: skip
    metrics = optimum(group)
    run_id = make_run_id(paper, first.model, first.tier, first.dataset, first.split, {"summary": SUMMARY,
                         "runs": run_ids}, first.seed)  # fmt: skip
    provenance = Provenance(
        git_sha=first.provenance.git_sha, git_dirty=first.provenance.git_dirty, config_hash=canonical_hash(config)[:16],
        data_hash=first.provenance.data_hash, versions=first.provenance.versions, hardware=first.provenance.hardware,
    )  # fmt: skip
    return RunRecord(
        schema="harness.run/1", run_id=run_id, paper=paper, model=first.model, tier=first.tier,
        dataset=first.dataset, split=first.split, seed=first.seed, metrics=metrics,
        started_at=min(r.started_at for r in group), finished_at=max(r.finished_at for r in group),
        provenance=provenance, status="ok" if metrics else "failed", protocol=first.protocol, config=config,
    )  # fmt: skip


def write_summaries(
    paper: str, records: Iterable[RunRecord], planned: list[dict[str, Any]], runs_dir: Path
) -> list[Path]:
    """Write the summary of every (model, seed) group whose planned runs are all recorded; returns their paths."""
    by_id = {r.run_id: r for r in records if not is_summary(r)}
    groups: dict[tuple[str, int], list[str]] = defaultdict(list)
    for run in planned:
        groups[(run["model"], run["seed"])].append(run["run_id"])
    paths = []
    for ids in groups.values():
        if not all(run_id in by_id for run_id in ids):
            continue  # incomplete: derived once the sweep has run the rest
        record = summary_record(paper, [by_id[run_id] for run_id in ids])
        path = record_path(record.run_id, runs_dir)
        paths.append(path if path.exists() else write_record(record, runs_dir))
    return paths
