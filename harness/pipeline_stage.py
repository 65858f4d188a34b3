"""What a paper's DVC stage runs: the ``harness run`` runs its section of ``params.yaml`` asks for, spread over a pool
of worker processes, then one ingest and the paper's report (harness.pipeline's ``stage``).

Each run is a :class:`RunCommand`: the arguments of :func:`harness.runner.run`, which the workers call, and the
``harness run`` command line that makes the same run, which the stage prints and its summary keeps. Run records
live in ``results/runs/`` and are never DVC outputs (DVC deletes a stage's outputs before re-running it): the
stage's output is its summary, ``results/stages/<paper>.json``, with ``dvc metrics`` and ``dvc plots`` files beside
it. See docs/pipelines.md.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import arch, configfile, registry, report
from harness.errors import HarnessError
from harness.pipeline_files import STAGES_DIR, Layout, PipelineError, load_params, relative
from harness.records import RUNS_DIR, atomic_write_text, check_writable, read_record, record_path
from harness.runner import run
from harness.store import ingest, report_ingest
from harness.summary import quiet_lightning
from harness.tables import json_safe
from harness.tiers import BY_NAME, DATA_TIERS, TIERS


@dataclass(frozen=True)
class RunCommand:
    """One run of a paper's stage: what :func:`harness.runner.run` is given, and, by :meth:`argv`, the ``harness run``
    command line that makes the same run."""

    entry: str  # the params' tier entry: a tier, or a variant <tier>-<name> (run with configs/<tier>-<name>.yaml)
    paper: str
    tier: str
    config: str | None = None
    data_root: str | None = None
    model: str | None = None
    seed: int | None = None

    def argv(self, harness: str) -> list[str]:
        """``<harness> run PAPER --tier T [--config C] [--data-root D] [--model M] [--seed S]``."""
        argv = [harness, "run", self.paper, "--tier", self.tier]
        argv += ["--config", self.config] if self.config is not None else []
        argv += ["--data-root", self.data_root] if self.data_root is not None else []
        argv += ["--model", self.model] if self.model is not None else []
        return argv + (["--seed", str(self.seed)] if self.seed is not None else [])


def tier_commands(
    paper: str, params: dict[str, Any], configs: Path | None = None, arch_models: list[str] | None = None
) -> list[RunCommand]:
    """The runs a paper's params ask for, in order. A tier variant, ``smoke-ssdlite``, runs its tier with the config
    ``<configs>/smoke-ssdlite.yaml`` (``configs``: the paper's config folder, relative to the repository root). With
    ``arch_models`` (the paper's model ids), profiling is one run per model, so a pool spreads it over its workers;
    else one run profiles them all."""
    tiers, seeds, data_root = params.get("tiers") or [], params.get("seeds"), params.get("data_root")
    if not isinstance(tiers, list) or any(not isinstance(t, str) or t.split("-", 1)[0] not in TIERS for t in tiers):
        choices = f"each one of {', '.join(TIERS)}, or a variant <tier>-<name> with a configs/<tier>-<name>.yaml"
        raise PipelineError(f"params.yaml: papers.{paper}.tiers: {tiers!r}; {choices}")
    variants = [t for t in tiers if t not in TIERS]
    missing = [t for t in variants if configs is None or not (configs / f"{t}.yaml").is_file()]
    if missing:
        raise PipelineError(f"params.yaml: papers.{paper}.tiers: no config file for the variant(s) {missing}")
    if seeds is not None and not (isinstance(seeds, list) and all(isinstance(s, int) for s in seeds)):
        raise PipelineError(f"params.yaml: papers.{paper}.seeds: {seeds!r} is not null or a list of integers")
    models = params.get("models")
    if models is not None and not (isinstance(models, list) and all(isinstance(m, str) for m in models)):
        raise PipelineError(f"params.yaml: papers.{paper}.models: {models!r} is not null or a list of model ids")
    commands = []
    for entry in tiers:
        tier = entry.split("-", 1)[0]
        config = (configs / f"{entry}.yaml").as_posix() if entry != tier and configs is not None else None
        root = str(data_root) if tier in DATA_TIERS and data_root else None
        if tier == "arch" and arch_models:
            commands += [RunCommand(entry, paper, tier, config, root, model) for model in arch_models]
            continue
        once = not BY_NAME[tier].per_seed  # profiling is per model already; a smoke run only proves the pipeline
        for model in [None] if once or not models else models:
            for seed in [None] if once or not seeds else seeds:
                commands.append(RunCommand(entry, paper, tier, config, root, model, seed))
    return commands


def stage(paper: str, layout: Layout, jobs: int | None = None) -> int:
    """Run the paper's tiers; stop at the first failure (records already written stay in results/runs/). The runs go
    to a pool of ``jobs`` worker processes (default: one per CPU), one torch thread each, each importing torch and
    Lightning once for all the runs it is given; one ingest follows them, then the paper's report, both in this
    process."""
    params = load_params(layout.params)["papers"].get(paper)
    if params is None:
        raise PipelineError(f"{layout.params.name} has no section papers.{paper}: run `{layout.generate}`")
    repro = registry.reproduction(paper)
    folder = repro.root / "configs"
    configs = Path(relative(folder, layout.root) or folder)  # relative to the pipeline's root, as commands read
    jobs = jobs or os.cpu_count() or 1
    commands = tier_commands(paper, params, configs, repro.model_ids() if jobs > 1 else None)
    code, runs = run_commands(commands, jobs, layout.harness)
    shipped = _install_published(repro)  # the records behind its established verdicts (harness.published)
    if any(run["run_ids"] for run in runs) or not commands or shipped:  # one ingest: the runs, chain parents, sets
        _ingest()
    if code != 0:
        return code
    status = _show_report(paper)
    summary = {"paper": paper, "params": params, "runs": runs}
    write_metrics_and_plots(paper, [run_id for run in runs for run_id in run["run_ids"]])
    atomic_write_text(STAGES_DIR / f"{paper}.json", json.dumps(summary, indent=2) + "\n", overwrite=True)
    return status


def _install_published(repro: Any) -> int:
    """Install the paper's published record sets into results/ (a set that fails its hashes is named and left out);
    how many records they hold."""
    from harness.published import install_all

    done = install_all([repro], RUNS_DIR)
    for error in done.errors:
        print(f"harness: error: {error}", file=sys.stderr)
    if summary := done.summary():
        print(summary, file=sys.stderr)
    return len(done.records)


def _ingest() -> None:
    """Ingest every record, as ``harness ingest`` does: what it did, or its error, on standard error."""
    try:
        check_writable(RUNS_DIR)  # records are copied there and the database is written beside it
        report_ingest(ingest())
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)


def _show_report(paper: str) -> int:
    """Print the paper's verdicts as ``harness report --paper PAPER`` does; its exit status (2: an error, named)."""
    try:
        rows, note = report.read(paper), report.stale_note()
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2
    if note:
        print(f"harness: note: {note}", file=sys.stderr)
    print(report.text(rows), flush=True)
    return 0


def run_commands(commands: list[RunCommand], jobs: int, shown_as: str) -> tuple[int, list[dict[str, Any]]]:
    """Run the commands, ``jobs`` at a time, stopping at the first failure; returns the first failure's exit status
    (0: none) and, per command run, ``{"tier", "command", "run_ids"}`` in the given order (commands printed with
    ``shown_as`` for the harness). A chain's stage (a config with ``init_from``) runs after the others, in order: it
    may start from one of them."""
    from concurrent.futures import ProcessPoolExecutor  # a stage's needs only
    from multiprocessing import get_context

    chained = [_starts_from_a_parent(command) for command in commands]
    # the long runs first and the profiles (seconds each) after them, so these fill the workers' last gaps
    profiles = [command.tier == "arch" for command in commands]
    order = [i for i, c in enumerate(chained) if not c and not profiles[i]]
    order += [i for i, c in enumerate(chained) if not c and profiles[i]] + [i for i, c in enumerate(chained) if c]
    done: dict[int, dict[str, Any]] = {}
    workers = max(1, min(jobs, len(commands)))
    pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_one_thread)
    try:
        pending = {i: pool.submit(run_in_worker, commands[i]) for i in order if not chained[i]}
        code = _collect(commands, pending, done, shown_as)
        for i in order[len(pending) :]:
            if code != 0:
                break
            code = _collect(commands, {i: pool.submit(run_in_worker, commands[i])}, done, shown_as)
    finally:
        # every result is in (or a failure cancels the rest): the workers' exit, about 2 s of interpreter teardown
        # with torch loaded, overlaps the stage's ingest and report; the interpreter joins them before it exits
        pool.shutdown(wait=False, cancel_futures=True)
    return code, [done[i] for i in sorted(done)]


def _collect(
    commands: list[RunCommand], futures: dict[int, Any], done: dict[int, dict[str, Any]], shown_as: str
) -> int:
    """Wait for ``futures`` in the commands' order, printing each command and its records; at the first failure
    cancel the ones not started and return its exit status."""
    for index, future in futures.items():
        command = commands[index]
        shown = shlex.join(command.argv(shown_as))
        code, paths = future.result()
        print(f"+ {shown}" + "".join(f"\n{path}" for path in paths), flush=True)
        if code != 0:
            for rest in futures.values():
                rest.cancel()
            kept = "the records already written stay in results/runs/ and in the database"
            print(f"pipeline: {command.paper}: `{shown}` failed (exit {code}); {kept}", file=sys.stderr)
            return code
        done[index] = {"tier": command.entry, "command": shown, "run_ids": [Path(path).stem for path in paths]}
    return 0


def _starts_from_a_parent(command: RunCommand) -> bool:
    """Whether the command's config (its variant's, else the paper's ``configs/<tier>.yaml``) has ``init_from``."""
    if command.tier == "arch":
        return False
    path = Path(command.config or registry.reproduction(command.paper).config_path(command.tier))
    try:
        return "init_from" in configfile.read(path).tree  # init_from may come from a base
    except HarnessError:  # missing or broken: the run names what is wrong
        return False


def _one_thread() -> None:
    """A pool worker trains with one torch thread (a run's numbers then do not depend on the machine's load or core
    count, and ``jobs`` runs share the cores without oversubscribing them)."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch  # after OMP_NUM_THREADS is set

    torch.set_num_threads(1)


def run_in_worker(command: RunCommand) -> tuple[int, list[str]]:
    """One run in this process, as ``harness run`` runs it but without its ingest (the stage ingests once): the exit
    status and the paths of the records (a bad input: one error line, status 2)."""
    quiet_lightning()
    if arch.PROFILE_CACHE is None:
        arch.PROFILE_CACHE = {}  # this worker's, for the stage's per-model profiling commands
    config = Path(command.config) if command.config is not None else None
    try:
        repro = registry.reproduction(command.paper)
        paths = run(repro, command.tier, command.model, command.seed, command.data_root, config)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr, flush=True)
        return 2, []
    sys.stdout.flush()
    return 0, [str(path) for path in paths]


def stage_metrics(run_ids: list[str]) -> dict[str, Any]:
    """``dvc metrics show``'s file: model -> tier -> ``dataset/split`` -> metric -> mean over the stage's seeds."""
    values: dict[tuple[str, str, str, str], list[float]] = {}
    for run_id in run_ids:
        record = read_record(record_path(run_id))
        for name, value in record.metrics.items():
            values.setdefault((record.model, record.tier, f"{record.dataset}/{record.split}", name), []).append(value)
    tree: dict[str, Any] = {}
    for (model, tier, data, name), found in sorted(values.items()):
        mean = sum(found) / len(found)
        tree.setdefault(model, {}).setdefault(tier, {}).setdefault(data, {})[name] = mean if mean == mean else None
    return tree


def write_metrics_and_plots(paper: str, run_ids: list[str]) -> None:
    """The stage's ``metrics`` file and its ``plots`` file: one point per claim with a measured mean (reported vs
    measured, from the paper's report rows; a NaN is no measure, as in ``harness report --json``)."""
    try:
        rows = json_safe(report.read(paper))
    except HarnessError:
        rows = []
    points = [
        {"claim": row["claim_id"], "metric": row["metric"], "tier": row["tier"], "reported": row["reported"],
         "measured": row["mean"]}
        for row in rows
        if row["reported"] is not None and row["mean"] is not None
    ]  # fmt: skip
    for name, data in ((f"{paper}.metrics.json", stage_metrics(run_ids)), (f"{paper}.claims.json", points)):
        atomic_write_text(STAGES_DIR / name, json.dumps(data, indent=2) + "\n", overwrite=True)
