"""Benchmark: where the default `dvc repro` spends its time, run by run and phase by phase.

    .venv/bin/python benchmarks/bench_repro.py [--paper P ...] [--tier T ...] [--max-steps N] [--threads K] [--json F]
    .venv/bin/python benchmarks/bench_repro.py --records results/runs [--paper P ...]

Runs each `harness run` command of the default pipeline (params.yaml, as `scripts/pipeline.py stage` would, in
order) in a fresh Python process, as the stage does, with records going to a temporary folder (never results/).
Each child times its phases: ``imports`` (torch, Lightning, the harness and the paper's system), ``data`` (the
tier's ``prepare`` and the data module), ``system`` (building the LightningModule), ``trainer`` (constructing the
Trainer), ``setup`` (the data module's ``setup``, inside fit and test), ``fit`` and ``test`` (without their setup),
and ``other`` (the rest: config checks, run ids, records). ``process`` is the child's wall time as its parent saw it,
so ``process - total`` is the interpreter's start-up. ``--max-steps`` caps every fit (a quick look; the numbers are
then not the pipeline's); ``--threads`` sets the children's OMP_NUM_THREADS (default: unset, as `dvc repro` ran before
the stage's worker pool).

``--compare`` times the same runs two ways instead, each in its own fresh folder (so each prepares its data): as the
stage ran them before (one `harness run` process after another, threads unset, an ingest per run) and as it runs
them now (``scripts/pipeline.py``'s worker pool: ``--jobs`` workers, one thread each, one ingest), and prints the
ratio, the reference ``ref`` and the load average around each.

``--records results/runs`` reads a finished pipeline's run records instead (nothing is run): per stage its span, its
runs' summed time and their ratio (the runs in flight on average), per tier the run-seconds, the slowest runs, and
the time between stages; this is the table to read after a timed `dvc repro` from a fresh clone.

Every timing on a shared machine depends on the load: the output starts and ends with the load average and with
``ref``, a fixed single-thread workload (a small conv net's forward and backward) timed in the parent at the start
and at the end, and gives each run's time also in units of ``ref``, so two outputs can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("imports", "data", "system", "trainer", "setup", "fit", "test", "other")


def reference_seconds(repeats: int = 3) -> float:
    """The best of ``repeats`` timings of a fixed single-thread workload: 20 forward+backward passes of a small conv
    net on a 64 x 1 x 28 x 28 batch."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(64 * 14 * 14, 10),
    )  # fmt: skip
    images = torch.randn(64, 1, 28, 28)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(20):
            net(images).sum().backward()
        best = min(best, time.perf_counter() - start)
    torch.set_num_threads(threads)
    return best


def pipeline_runs(papers: list[str] | None, tiers: list[str] | None) -> list[dict[str, Any]]:
    """The default pipeline's `harness run` commands (params.yaml), as keyword arguments of ``harness.runner.run``."""
    from harness import registry
    from harness.pipeline_files import load_params
    from harness.pipeline_stage import tier_commands

    runs = []
    for paper, params in load_params(ROOT / "params.yaml")["papers"].items():
        if papers and paper not in papers:
            continue
        for command in tier_commands(paper, params, registry.reproduction(paper).root / "configs"):
            if tiers and command.entry not in tiers and command.tier not in tiers:
                continue
            runs.append({"paper": paper, "tier": command.tier, "entry": command.entry, "model": command.model,
                         "seed": command.seed, "config": command.config})  # fmt: skip
    return runs


def child(spec: dict[str, Any]) -> dict[str, float]:
    """One run in this process, its phases timed (the ``--child`` side)."""
    clock = {name: 0.0 for name in PHASES}
    start = time.perf_counter()
    import pytorch_lightning as pl

    from harness import registry, runner, training

    repro = registry.reproduction(spec["paper"])
    if spec["tier"] != "arch":
        config = runner.load_config(Path(spec["config"] or repro.config_path(spec["tier"])), spec["tier"])
        registry.load_object(config["system"]["class_path"])
    clock["imports"] = time.perf_counter() - start
    _time_phases(clock, training, pl, spec.get("max_steps"))
    path = Path(spec["config"]) if spec["config"] else None
    runner.run(repro, spec["tier"], spec["model"], spec["seed"], config_path=path, runs_dir=Path(spec["runs"]))
    clock["total"] = time.perf_counter() - start
    clock["other"] = clock["total"] - sum(clock[name] for name in PHASES if name != "other")
    return clock


def _timed(clock: dict[str, float], phase: str, fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            clock[phase] += time.perf_counter() - start

    return wrapper


def _time_phases(clock: dict[str, float], training: Any, pl: Any, max_steps: int | None) -> None:
    """Wrap the training entry's steps in timers; ``setup`` is taken out of ``fit`` and ``test``, which include it."""
    make_data, make_system = training.make_datamodule, training.instantiate

    def datamodule(resolved: dict[str, Any]) -> Any:
        module = _timed(clock, "data", make_data)(resolved)
        module.setup = _timed(clock, "setup", module.setup)
        return module

    def instantiate(spec: dict[str, Any], **extra: Any) -> Any:
        return _timed(clock, "system" if "model" in extra else "data", make_system)(spec, **extra)

    training.make_datamodule, training.instantiate = datamodule, instantiate
    init, fit, test = pl.Trainer.__init__, pl.Trainer.fit, pl.Trainer.test

    def trainer_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if max_steps:
            kwargs["max_steps"] = max_steps
        _timed(clock, "trainer", init)(self, *args, **kwargs)

    def without_setup(phase: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            before, start = clock["setup"], time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                clock[phase] += time.perf_counter() - start - (clock["setup"] - before)

        return wrapper

    pl.Trainer.__init__, pl.Trainer.fit, pl.Trainer.test = (
        trainer_init,
        without_setup("fit", fit),
        without_setup("test", test),
    )


def run_child(spec: dict[str, Any], threads: int | None) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)], env=env, capture_output=True, text=True, cwd=ROOT
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"run {spec} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    clock = json.loads(done.stdout.strip().splitlines()[-1])
    return {**clock, "process": wall}


def label(run: dict[str, Any]) -> str:
    parts = [run["paper"], run["entry"], run["model"] or "", "" if run["seed"] is None else f"s{run['seed']}"]
    return " ".join(p for p in parts if p)


def print_row(name: str, clock: dict[str, float], ref: float) -> None:
    cells = " ".join(f"{clock.get(p, 0.0):7.1f}" for p in (*PHASES, "total", "process"))
    print(f"{name:<58} {cells} {clock['process'] / ref:8.0f}", flush=True)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--paper", nargs="*", help="only these papers")
    parser.add_argument("--tier", nargs="*", help="only these tiers (or variants, e.g. smoke-coco)")
    parser.add_argument("--max-steps", type=int, help="cap each fit at N steps (a quick look)")
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS of the runs (default: unset)")
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    parser.add_argument("--compare", action="store_true", help="time the stage's old way against its worker pool")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="workers of the pool (--compare)")
    parser.add_argument("--records", type=Path, help="time a finished pipeline from its run records (a results/runs)")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    if args.records:
        return from_records(args.records, args.paper, args.tier)
    runs = pipeline_runs(args.paper, args.tier)
    if args.compare:
        return compare(runs, args.max_steps, args.jobs)
    ref = reference_seconds()
    print(f"load average {load_average()}; ref {ref:.3f} s; {len(runs)} runs; threads {args.threads or 'unset'}")
    print(f"{'run':<58} " + " ".join(f"{p:>7}" for p in (*PHASES, "total", "process")) + "    x ref")
    rows, folder = [], Path(tempfile.mkdtemp(prefix="bench-repro-"))
    for run in runs:
        clock = run_child({**run, "runs": str(folder / "runs"), "max_steps": args.max_steps}, args.threads)
        rows.append({"run": label(run), **run, **clock})
        print_row(label(run), clock, ref)
    summarise(rows, ref, args.json)
    return 0


def took(record: Any) -> float:
    """A run record's wall time in seconds, from its start and end."""
    return (record.finished_at - record.started_at).total_seconds()


def from_records(folder: Path, papers: list[str] | None, tiers: list[str] | None) -> int:
    """Where a finished pipeline's time went, read from its run records (nothing is run): per paper (a DVC stage) the
    span from its first run's start to its last run's end, the sum of its runs' times and their ratio (how many runs
    were in flight on average: the worker pool's use of the cores), per tier the run-seconds, and the slowest runs;
    then the whole span and the time between the stages' spans (DVC, pool start-up, ingest and report). Every time
    is also given in units of ``ref``, timed now: compare two machines' tables in those units only."""
    from harness.errors import HarnessError
    from harness.records import read_record

    records = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = read_record(path)
        except HarnessError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
            continue
        if (not papers or record.paper in papers) and (not tiers or record.tier in tiers):
            records.append(record)
    if not records:
        print(f"no run records in {folder}", file=sys.stderr)
        return 1
    ref = reference_seconds()
    print(f"load average {load_average()}; ref {ref:.3f} s (timed now); {len(records)} records of {folder}")
    stages: dict[str, list[Any]] = {}
    for record in sorted(records, key=lambda r: r.started_at):
        stages.setdefault(record.paper, []).append(record)
    print(f"{'stage':<22} {'runs':>5} {'span s':>8} {'run-s':>8} {'in flight':>9} {'span x ref':>10}  run-s per tier")
    spans = 0.0
    for paper, found in stages.items():
        span = (max(r.finished_at for r in found) - min(r.started_at for r in found)).total_seconds()
        total = sum(took(r) for r in found)
        per_tier: dict[str, float] = {}
        for r in found:
            per_tier[r.tier] = per_tier.get(r.tier, 0.0) + took(r)
        spans += span
        tiers_text = ", ".join(f"{tier} {value:.0f}" for tier, value in per_tier.items())
        print(f"{paper:<22} {len(found):>5} {span:>8.0f} {total:>8.0f} {total / max(span, 1e-9):>9.2f} "
              f"{span / ref:>10.0f}  {tiers_text}")  # fmt: skip
    whole = (max(r.finished_at for r in records) - min(r.started_at for r in records)).total_seconds()
    print(
        f"whole: {whole:.0f} s from the first run's start to the last run's end ({whole / ref:.0f} x ref); the "
        f"stages' spans {spans:.0f} s, between them {whole - spans:.0f} s"
    )
    print("slowest runs:")
    for r in sorted(records, key=lambda r: -took(r))[:12]:
        print(f"  {took(r):7.1f} s  {r.paper} {r.tier} {r.model} seed {r.seed}")
    return 0


def summarise(rows: list[dict[str, Any]], ref_start: float, out: Path | None) -> None:
    """Totals per paper and tier, per phase, then the end's load average and ``ref`` again."""
    groups: dict[str, dict[str, float]] = {}
    for row in rows:
        group = groups.setdefault(f"= {row['paper']} {row['entry']}", {})
        for key in (*PHASES, "total", "process"):
            group[key] = group.get(key, 0.0) + row[key]
    everything = {key: sum(g[key] for g in groups.values()) for key in (*PHASES, "total", "process")}
    print()
    for name, clock in (*groups.items(), ("= all", everything)):
        print_row(name, clock, ref_start)
    ref_end = reference_seconds()
    print(f"load average {load_average()}; ref at the end {ref_end:.3f} s (start {ref_start:.3f} s)")
    if out:
        out.write_text(json.dumps({"ref": [ref_start, ref_end], "runs": rows}, indent=1) + "\n", encoding="utf-8")


def commands(runs: list[dict[str, Any]], max_steps: int | None, folder: Path) -> list[Any]:
    """The runs as the stage's commands (harness.pipeline_stage.RunCommand); with ``max_steps``, each config copied
    into ``folder`` capped."""
    import yaml

    from harness import configfile, registry
    from harness.pipeline_stage import RunCommand

    found = []
    for index, run in enumerate(runs):
        config = run["config"] or (
            None if run["tier"] == "arch" else registry.reproduction(run["paper"]).config_path(run["tier"])
        )
        if config and max_steps:
            data = configfile.read(ROOT / config).tree  # its bases merged: the copy lives elsewhere
            data.setdefault("trainer", {})["max_steps"] = max_steps
            config = folder / f"{index}.yaml"
            config.write_text(yaml.safe_dump(data), encoding="utf-8")
        config = str(ROOT / config) if config else None
        found.append(RunCommand(run["entry"], run["paper"], run["tier"], config, None, run["model"], run["seed"]))
    return found


def compare(runs: list[dict[str, Any]], max_steps: int | None, jobs: int) -> int:
    """The stage's old way (a process per run, in turn) against its worker pool, each in a fresh folder."""
    from harness.pipeline_stage import run_commands

    folder = Path(tempfile.mkdtemp(prefix="bench-repro-compare-"))
    planned = commands(runs, max_steps, folder)
    harness = str(Path(sys.executable).parent / "harness")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("OMP_NUM_THREADS", None)
    ref = reference_seconds()
    print(f"{len(planned)} runs, max steps {max_steps or 'as configured'}; load {load_average()}; ref {ref:.3f} s")
    (folder / "old").mkdir()
    start = time.perf_counter()
    for command in planned:
        subprocess.run(command.argv(harness), cwd=folder / "old", env=env, check=True, capture_output=True)
    old = time.perf_counter() - start
    print(f"old (a process per run, in turn, threads unset): {old:8.1f} s; load {load_average()}", flush=True)
    (folder / "new").mkdir()
    os.chdir(folder / "new")
    start = time.perf_counter()
    code, _ = run_commands(planned, jobs, harness)
    new = time.perf_counter() - start
    subprocess.run([harness, "ingest"], check=True, capture_output=True, env=env)
    new_total = time.perf_counter() - start
    print(f"new (pool of {jobs}, one thread each, one ingest): {new_total:8.1f} s (runs {new:.1f} s), exit {code}")
    print(f"ratio old / new {old / new_total:.2f}; load {load_average()}; ref at the end {reference_seconds():.3f} s")
    return code


if __name__ == "__main__":
    sys.exit(main())
