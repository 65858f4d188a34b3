"""Derive the study's per-width summaries from the sweep's run records (arXiv 1905.03776v1's three quantities).

The paper's protocol (section 1 of v1): "We define the performance of a network by its average test accuracy at
'late times' and over multiple training runs. The set of optimal hyperparameters denote the hyperparameters for which
this average test accuracy was maximized", on the test set. So a model's (family x width x parameterization) optimum
is taken over its grid of learning rates and batch sizes *after* averaging each grid point's late-time test accuracy
over the seeds, not per seed. A grid point at which any seed diverged is unstable and never the optimum; a crashed
run (``failed``) says nothing about the hyper-parameters and is left out of its point's mean.

- ``best_noise_scale``, ``best_accuracy``: the normalized noise scale and seed-mean late-time test accuracy of the
  grid point with the highest seed-mean accuracy (ties go to the smaller noise scale); ``best_accuracy_std`` is the
  spread of that point's seeds, ``best_point_seeds`` how many it averages.
- ``optimal_noise_scale``: the same noise scale, recorded only when it is an interior optimum: some stable grid point
  has a smaller and some a larger noise scale (both with lower mean accuracy). A best point at the smallest or
  largest noise scale that is stable (``optimum_at_edge`` = 1) bounds the optimum, it does not locate it; counting it
  would let the grid's edges, not the networks, set the trend (e.g. an edge at the largest stable learning rate and
  smallest batch grows with width through the definition alone).
- ``max_stable_lr``: the largest learning rate of the grid such that no run (of any seed) at it or at any smaller
  learning rate diverged (``lr_censored`` is 1 when nothing diverged: the bound lies above the grid).
- ``max_batch_size``: the largest batch size consistent with the optimal noise scale, ``B = eps_max N / (g_bar v0)``
  (variants.batch_for_noise_scale): with a learning rate no larger than ``max_stable_lr``, a larger batch gives a
  smaller noise scale than the optimum. Recorded only with an interior optimum and an observed instability
  (``lr_censored`` = 0); otherwise it is only a bound.

Each summary is itself a run record (same paper, model, tier, dataset and split as its runs; ``seed`` is the smallest
of its seeds, ``config.seeds`` lists them all; ``config.summary`` names this derivation, ``config.run_ids`` the records
it rests on), so the core's trend rules judge it: one point per width. A summary is written only when every planned
run of its model, every seed, has a record, and never rewritten: its id hashes its run ids. :func:`rederive` writes
the summaries of records already on disk (another derivation, a later commit) without their sweep's plan.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.records import Provenance, RunRecord, canonical_hash, make_run_id, new_record, record_path, write_record
from reproductions.sgd_width.variants import batch_for_noise_scale

SUMMARY = "sgd-width-optimum/2"  # /1 took the optimum per seed; /2 over the seed-mean accuracy, as the paper does


def is_summary(record: RunRecord) -> bool:
    return bool(record.config and record.config.get("summary"))


def grid_points(records: list[RunRecord]) -> dict[tuple[float, int], list[RunRecord]]:
    """The stable grid points of one model: ``(lr, batch_size)`` -> its finished runs (one per seed that finished).
    A point where any seed diverged is left out; crashed runs are dropped from their point."""
    by_point: dict[tuple[float, int], list[RunRecord]] = defaultdict(list)
    for record in records:
        by_point[(record.config["lr"], record.config["batch_size"])].append(record)
    points = {}
    for point, runs in by_point.items():
        ok = [r for r in runs if r.status == "ok" and "accuracy" in r.metrics]
        if ok and not any(r.status == "diverged" for r in runs):
            points[point] = ok
    return points


def optimum(records: list[RunRecord]) -> dict[str, float]:
    """The summary metrics of one model's run records, all seeds (see the module docstring)."""
    points = grid_points(records)
    if not points:
        return {}
    mean = {point: statistics.fmean(r.metrics["accuracy"] for r in runs) for point, runs in points.items()}
    scale = {point: runs[0].metrics["normalized_noise_scale"] for point, runs in points.items()}
    best = max(points, key=lambda point: (mean[point], -scale[point]))
    g_bar, scales = scale[best], scale.values()
    interior = min(scales) < g_bar < max(scales)
    accuracies = [r.metrics["accuracy"] for r in points[best]]
    metrics = {
        "best_noise_scale": g_bar, "best_accuracy": mean[best],
        "best_accuracy_std": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0,
        "best_lr": float(best[0]), "best_batch_size": float(best[1]), "best_point_seeds": float(len(accuracies)),
        "optimum_at_edge": float(not interior),
        "runs": float(len(records)), "diverged_runs": float(sum(r.status == "diverged" for r in records)),
        "failed_runs": float(sum(r.status == "failed" for r in records)),
    }  # fmt: skip
    stability = _stability(records, points[best][0])
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
    """The summary record of one model's complete group of runs (every seed)."""
    first = min(group, key=lambda r: (r.seed, r.run_id))
    run_ids = sorted(r.run_id for r in group)
    c = first.config
    config = {
        "summary": SUMMARY, "family": c["family"], "width": c["width"], "parameterization": c["parameterization"],
        "batch_norm": c["batch_norm"], "base_width": c["base_width"], "sigma_w": c["sigma_w"],
        "train_size": c["train_size"], "epochs": c["epochs"], "seeds": sorted({r.seed for r in group}),
        "run_ids": run_ids,
    }  # fmt: skip
    metrics = optimum(group)
    run_id = make_run_id(paper, first.model, first.tier, first.dataset, first.split, {"summary": SUMMARY,
                         "runs": run_ids}, first.seed)  # fmt: skip
    provenance = Provenance(
        git_sha=first.provenance.git_sha, git_dirty=first.provenance.git_dirty, config_hash=canonical_hash(config)[:16],
        data_hash=first.provenance.data_hash, versions=first.provenance.versions, hardware=first.provenance.hardware,
    )  # fmt: skip
    return new_record(
        run_id=run_id, paper=paper, model=first.model, tier=first.tier, dataset=first.dataset, split=first.split,
        seed=first.seed, metrics=metrics, started_at=min(r.started_at for r in group),
        finished_at=max(r.finished_at for r in group), provenance=provenance, status="ok" if metrics else "failed",
        protocol=first.protocol, config=config,
    )  # fmt: skip


def write_summaries(
    paper: str, records: Iterable[RunRecord], planned: list[dict[str, Any]], runs_dir: Path
) -> list[Path]:
    """Write the summary of every model whose planned runs (every seed) are all recorded; returns their paths.
    ``planned`` must hold every seed of a model the caller wants summarised (sweep.run_sweep plans them unfiltered)."""
    by_id = {r.run_id: r for r in records if not is_summary(r)}
    groups: dict[str, list[str]] = defaultdict(list)
    for run in planned:
        groups[run["model"]].append(run["run_id"])
    paths = []
    for ids in groups.values():
        if not all(run_id in by_id for run_id in ids):
            continue  # incomplete: derived once the sweep has run the rest
        record = summary_record(paper, [by_id[run_id] for run_id in ids])
        path = record_path(record.run_id, runs_dir)
        paths.append(path if path.exists() else write_record(record, runs_dir))
    return paths


def rederive(paper: str, records: Iterable[RunRecord], runs_dir: Path) -> list[Path]:
    """Summaries of the run records already on disk, without the sweep's plan: a planned run id carries the code
    version (harness.records.code_version), so after a new commit ``harness run`` plans new ids and would retrain
    rather than re-read. One summary per (model, tier, dataset) over every run record of ``paper`` given; a grid
    point recorded twice for one seed (two sweeps mixed) is an error naming it. Returns the summaries' paths."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.paper == paper and not is_summary(record):
            groups[(record.model, record.tier, record.dataset)].append(record)
    paths = []
    for (model, tier, dataset), group in sorted(groups.items()):
        seen: set[tuple[float, int, int]] = set()
        for r in group:
            point = (r.config["lr"], r.config["batch_size"], r.seed)
            if point in seen:
                raise HarnessError(f"{model} ({tier}, {dataset}): lr {point[0]}, batch {point[1]}, seed {point[2]} is "
                                   "recorded twice; rederive the records of one sweep at a time")  # fmt: skip
            seen.add(point)
        record = summary_record(paper, group)
        path = record_path(record.run_id, runs_dir)
        paths.append(path if path.exists() else write_record(record, runs_dir))
    return paths
