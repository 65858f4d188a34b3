"""The ``harness`` command. Start-up imports only the standard library: each command imports what it needs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# these import the standard library only; a command imports the rest (pydantic, duckdb, numpy, torch) when it runs
from harness import registry
from harness.errors import HarnessError
from harness.suggest import did_you_mean
from harness.tables import json_safe, table
from harness.tiers import TIERS


def _emit(data: Any, as_json: bool, columns: Sequence[str] | None = None) -> None:
    if as_json:
        json.dump(json_safe(data), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    elif columns is not None:
        print(table(data, columns))
    else:
        for key, value in data.items():
            print(f"{key}: {value}")


def _claim_count(paper: str) -> int | None:
    """How many claims a paper has; ``None``, with the error on stderr, when its claims file is broken."""
    from harness.claims import registered_claims

    try:
        return len(registered_claims(paper))
    except HarnessError as exc:
        print(f"harness: warning: {exc}; its claims are left out", file=sys.stderr)
        return None


def cmd_list(args: argparse.Namespace) -> int:

    rows = [
        {
            "id": r.id,
            "title": r.title,
            "arxiv": r.arxiv,
            "url": r.link,
            "tasks": list(r.tasks),
            "models": r.model_ids(),
            "tiers": list(r.tiers),
            "claims": _claim_count(r.id),
        }  # fmt: skip
        for r in registry.reproductions().values()
    ]
    _emit(rows, args.json, ["id", "arxiv", "claims", "tiers", "tasks", "title"])
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    """Model ids (JSON: a list of ids), filtered by ``--paper`` and a substring; the table shows each one's paper."""
    if args.paper:
        registry.reproduction(args.paper)  # an unknown paper is an error, with a "did you mean"
    rows = [
        {"model": model_id, "paper": repro.id, "dataset": spec.dataset}
        for model_id, (repro, spec) in registry.models().items()
        if (not args.paper or repro.id == args.paper) and (args.query or "").lower() in model_id.lower()
    ]
    _emit([row["model"] for row in rows] if args.json else rows, args.json, ["model", "paper", "dataset"])
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from harness.profile import profile_model

    known = registry.models()
    if args.model not in known:
        raise HarnessError(f"unknown model {args.model!r}{did_you_mean(args.model, known)}; see `harness models`")
    profile = profile_model(known[args.model][1]).as_dict()
    if not args.json:
        print("(macs = multiply-adds of one forward pass at batch 1: torch FlopCounterMode FLOPs / 2)")
    _emit(profile, args.json)
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    from harness.claims import registered_claims

    claims = [c.model_dump(mode="json") for c in registered_claims(args.paper)]
    _emit(claims, args.json, ["paper", "id", "kind", "model", "dataset", "split", "metric", "value", "unit", "source"])
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run, ingest, then show what was measured and the verdicts it gave (JSON: records, results and the ingest)."""
    from harness.distributed import is_rank_zero
    from harness.records import written_records
    from harness.runner import parse_set, run
    from harness.summary import quiet_lightning

    quiet_lightning()
    repro = registry.reproduction(args.paper)  # the id looked up once: the run is given the Reproduction
    sets = dict(parse_set(text) for text in args.set or [])
    earlier = len(written_records())  # records of earlier commands in this process (a test's) are not this run's
    paths = run(
        repro, args.tier, args.model, args.seed, args.data_root, args.config, checkpoint=args.checkpoint, sets=sets
    )
    if not is_rank_zero():  # another process of a multi-process run (harness.distributed): rank 0 ingests
        return 0
    return _ingest_and_show(paths, earlier, args.json, {"records": [str(p) for p in paths]}, map(str, paths))


def _ingest_and_show(paths: list[Path], earlier: int, as_json: bool, doc: dict, lines: Iterable[str]) -> int:
    """Ingest a command's records (``paths``, and any an earlier stage of a chain wrote since ``earlier``), then show
    what each measured and the verdicts it gave: ``doc`` with ``results`` and ``ingest`` (JSON), or ``lines`` and
    the table."""
    from harness.records import written_records
    from harness.report import run_verdicts
    from harness.store import ingest, report_ingest
    from harness.summary import run_rows

    result = ingest([*paths, *written_records()[earlier:]])  # by path: O(new), no scan of results/runs/
    rows = run_rows(paths, run_verdicts())
    if as_json:
        _emit({**doc, "results": rows, "ingest": _ingest_doc(result)}, True)  # NaN: null
    else:
        print("\n".join(lines) + "\n")
        print(table(rows, ["model", "tier", "dataset", "split", "metric", "value", "claim_id", "reported", "status"]))
    return report_ingest(result)


def cmd_sweep(args: argparse.Namespace) -> int:
    """List a sweep file's cells with their run ids (``--list``; ``--dvc``: its DVC ``foreach`` stage), or run them
    (all, or those ``--cell`` names or indexes) with ``harness run``'s runner, then ingest and show the verdicts."""
    import yaml

    from harness import sweeps
    from harness.distributed import is_rank_zero
    from harness.records import written_records
    from harness.summary import quiet_lightning

    repro = registry.reproduction(args.paper)
    sweep = sweeps.load(repro, args.sweep)
    cells = sweeps.select(sweeps.expand(sweep), args.cell or [])  # every cell checked before any runs
    if args.dvc:
        print(yaml.safe_dump(sweeps.dvc_stage(sweep, cells), sort_keys=False, width=120), end="")
        return 0
    if args.list:
        _emit(sweeps.listing(repro, cells), args.json, ["index", "name", "model", "seed", "run_ids"])
        return 0
    quiet_lightning()
    earlier = len(written_records())
    ran = [(cell, sweeps.run_cell(sweep, cell, args.data_root)) for cell in cells]
    if not is_rank_zero():
        return 0
    paths = [path for _, cell_paths in ran for path in cell_paths]
    done = [{"index": c.index, "name": c.name, "records": [str(p) for p in ps]} for c, ps in ran]
    lines = (f"{cell.name}: {path}" for cell, cell_paths in ran for path in cell_paths)
    return _ingest_and_show(paths, earlier, args.json, {"cells": done}, lines)


def _tier_config(args: argparse.Namespace, seed: int | None, data_root: str | None) -> tuple[Any, Path, dict]:
    """The paper, the tier config (``--config`` or the paper's ``configs/<tier>.yaml``) and that config resolved for
    ``--model``; an unknown paper, a missing config or an unknown model is one error."""
    from harness.runner import load_config, resolve_config

    repro = registry.reproduction(args.paper)
    path = args.config or repro.config_path(args.tier)
    if not path.exists():
        raise HarnessError(f"{path}: no {args.tier!r} config for {args.paper!r}")
    resolved = resolve_config(load_config(path, args.tier), args.tier, args.model, seed, data_root, path=path)
    repro.model(resolved["model"])  # an unknown model id is an error with a "did you mean"
    return repro, path, resolved


def cmd_recipe(args: argparse.Namespace) -> int:
    """The recipe hash of a tier config (what a budget plan fixes a recipe by, docs/verdicts.md "Plans")."""
    from harness.plans import recipe_hash

    repro, path, resolved = _tier_config(args, seed=0, data_root=None)
    where = path.resolve()
    label = f"{where.relative_to(repro.root) if where.is_relative_to(repro.root) else path}:{resolved['model']}"
    doc = {"paper": repro.id, "tier": args.tier, "model": resolved["model"], "label": label,
           "recipe_hash": recipe_hash(resolved)}  # fmt: skip
    if args.json:
        _emit(doc, True)
    else:
        print(f"{label}: {doc['recipe_hash']}")
    return 0


def cmd_seeds(args: argparse.Namespace) -> int:
    """Seeds a side for a two-sided t-test to see ``--effect`` at ``--power`` given a pilot's between-seed ``--std``."""
    from harness.plans import seeds_needed

    if args.effect <= 0 or args.std <= 0 or not 0 < args.alpha < 1 or not 0 < args.power < 1:
        raise HarnessError("--effect and --std are positive; --alpha and --power lie between 0 and 1")
    n = seeds_needed(args.effect, args.std, args.alpha, args.paired, args.power)
    doc = {"effect": args.effect, "std": args.std, "alpha": args.alpha, "power": args.power, "paired": args.paired,
           "seeds_per_side": n}  # fmt: skip
    if args.json:
        _emit(doc, True)
    else:
        design = "paired" if args.paired else "independent"
        print(f"{n} seeds a side ({design} t-test, alpha {args.alpha:g}, power {args.power:.0%})")
    return 0


def cmd_reference(args: argparse.Namespace) -> int:
    """Fit a trivial reference (majority class, logistic regression, unigram LM) on a tier config's data, record and
    ingest it."""
    from harness.records import RUNS_DIR, check_writable
    from harness.references import run_reference
    from harness.store import ingest, report_ingest

    check_writable(RUNS_DIR)
    repro, _, resolved = _tier_config(args, seed=args.seed, data_root=args.data_root)
    paths = run_reference(repro, resolved, args.kind, RUNS_DIR)
    result = ingest(paths)
    if args.json:
        _emit({"records": [str(p) for p in paths], "ingest": _ingest_doc(result)}, True)
    else:
        print("\n".join(str(path) for path in paths))
    return report_ingest(result)


def cmd_ingest(args: argparse.Namespace) -> int:
    from harness.records import RUNS_DIR, check_writable
    from harness.store import ingest, report_ingest

    check_writable(RUNS_DIR)  # records are copied there and the database is written beside it
    installed = _install_published(args.published)
    result = ingest(args.files, rebuild=args.rebuild)
    result.errors[:0] = installed
    if args.json:
        _emit(_ingest_doc(result), True)
    return report_ingest(result)


def _install_published(papers: list[str] | None) -> list[str]:
    """Install the published record sets of ``papers`` (``[]``: every paper's; None: none) into results/; their
    errors (a set whose files do not match its manifest is left out whole). Prints what was installed."""
    from harness.published import install_all

    if papers is None:
        return []
    repros = [registry.reproduction(p) for p in papers] if papers else list(registry.reproductions().values())
    done = install_all(repros)
    if summary := done.summary():
        print(summary, file=sys.stderr)
    return done.errors


def cmd_publish(args: argparse.Namespace) -> int:
    """Make or extend a paper's published record set from its records in results/runs/."""
    from harness.published import publish
    from harness.records import RUNS_DIR, read_record

    repro = registry.reproduction(args.paper)
    if args.runs:
        run_ids = args.runs
    else:
        paths = sorted(RUNS_DIR.glob(f"{repro.id}.*.json")) if RUNS_DIR.is_dir() else []
        run_ids = [p.stem for p in paths if read_record(p).tier == args.tier]
    if not run_ids:
        raise HarnessError(f"no {args.tier} records of {repro.id!r} in {RUNS_DIR}/ to publish")
    record_set = publish(repro, run_ids, args.name or args.tier, description=args.description)
    doc = {"set": str(record_set.path), "set_sha256": record_set.digest, "runs": len(record_set.run_ids()),
           "machines": record_set.manifest["machines"], "commits": record_set.manifest["commits"]}  # fmt: skip
    if args.json:
        _emit(doc, True)
    else:
        print(
            f"{record_set.path}: {doc['runs']} run(s), set {record_set.digest[:12]}, made on "
            + ", ".join(doc["machines"])
        )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Re-run a paper's planned budget runs here and compare them with the published records (harness.verify)."""
    from harness.verify import verify

    repro = registry.reproduction(args.paper)
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    doc = verify(repro, args.tier, seeds, dry_run=args.dry_run)
    if args.json:
        _emit(doc, True)
        return 0
    if args.dry_run:
        print("\n".join(doc["to_run"]) or "nothing to run: every planned run is made here")
        return 0
    print(f"{repro.id}: this machine is {doc['machine']}; {doc['runs_made']} run(s) made now, seeds {doc['seeds']}")
    _emit(
        [
            {"recipe": r["recipe"], "metric": r["metric"], "published": _mean_sd(r["published"]),
             "here": _mean_sd(r["here"]), "pairs": len(r["per_seed"]),
             "largest |here - published|": r["largest_difference"]}
            for r in doc["recipes"]
        ],
        False,
        ["recipe", "metric", "published", "here", "pairs", "largest |here - published|"],
    )  # fmt: skip
    print()
    _emit(
        [
            {"claim_id": c["claim_id"], "verdict": c["status"], "rests on": c["rests_on"],
             "here": (c["here"] or {}).get("status", "-"), "confirmed here": c["confirmed_here"]}
            for c in doc["claims"]
        ],
        False,
        ["claim_id", "verdict", "rests on", "here", "confirmed here"],
    )  # fmt: skip
    print(f"written: {doc['written']}", file=sys.stderr)
    return 0


def _mean_sd(spread: dict[str, Any]) -> str:
    if not spread["n"]:
        return "-"
    sd = f" ± {spread['std']:.3g}" if spread["std"] is not None else ""
    return f"{spread['mean']:.4g}{sd} (n={spread['n']})"


def _ingest_doc(result: Any) -> dict[str, Any]:
    return {"total": result.total, "added": [str(path) for path in result.added], "errors": list(result.errors)}


def cmd_report(args: argparse.Namespace) -> int:
    """The verdicts the last ``harness ingest`` wrote (it judges; this only reads the ``verdicts`` and ``claims``
    tables): the paper's numbers, then the direction at budget scale, then the counts per scale and status."""
    from harness.report import read, stale_note, text

    rows = read(args.paper)
    if args.paper and not rows:
        registry.reproduction(args.paper)  # an unknown paper is an error; a known one may have no claims
    note = stale_note()
    if note:
        print(f"harness: note: {note}", file=sys.stderr)
    if args.json:
        _emit(rows, True)
    else:
        print(text(rows))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Runs with metrics as columns (csv, parquet) or the Papers-with-Code model-index YAML, from the store."""
    from harness.export import export

    if args.paper:
        registry.reproduction(args.paper)
    out = Path(args.output or f"results/export.{'yaml' if args.format == 'model-index' else args.format}")
    count = export(out, args.format, args.paper)
    what = "model(s)" if args.format == "model-index" else "run(s)"
    print(f"exported {count} {what} to {out}", file=sys.stderr)
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    """Scaffold a reproduction as its own package (harness/scaffold.py)."""
    from harness.scaffold import default_dest, scaffold

    dest = scaffold(args.paper, Path(args.dest) if args.dest else default_dest(args.paper), args.title, args.arxiv)
    print(f"{dest}: a new reproduction package; `pip install -e {dest}`, then `harness list` (its README.md)")
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    """A DVC pipeline (dvc.yaml, params.yaml) for a plugin's own repository, or run one of its stages."""
    from harness.pipeline import command

    return command(args.action, Path(getattr(args, "out", ".")), getattr(args, "paper", None),
                   getattr(args, "papers", None), getattr(args, "check", False))  # fmt: skip


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """Replace this process with ``streamlit run leaderboard/app.py``: headless (no browser is opened), no telemetry."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("streamlit")
    app = importlib.util.find_spec("leaderboard.app")
    if spec is None or app is None or app.origin is None:
        raise HarnessError("the leaderboard needs streamlit and the leaderboard package: run `bash setup.sh`")
    options = {
        "server.headless": "true", "server.port": args.port, "server.address": args.address,
        "server.fileWatcherType": "none", "browser.gatherUsageStats": "false", "client.toolbarMode": "minimal",
    }  # fmt: skip
    argv = [sys.executable, "-m", "streamlit", "run", app.origin]
    argv += [part for name, value in options.items() for part in (f"--{name}", str(value))]
    argv += ["--", "--db", str(Path(args.db).resolve())]
    print(f"leaderboard: http://{args.address}:{args.port}/ over {args.db} (Ctrl-C stops it)", file=sys.stderr)
    sys.stderr.flush()
    os.execv(sys.executable, argv)
    return 0  # not reached: execv replaces the process


def cmd_score(args: argparse.Namespace, extra: list[str]) -> int:

    task = registry.task(args.task)
    options = _task_options(task, extra)
    for name, path in [("--references", args.references), ("--predictions", args.predictions), *options.items()]:
        if not Path(path).exists():
            raise HarnessError(f"{path}: file given to {name} does not exist")
        if not (Path(path).is_file() or Path(path).is_dir()):  # a FIFO would block, /dev/zero fill the memory
            raise HarnessError(f"{path}: given to {name} but not a regular file or folder (a FIFO or device)")
    if task.protocol:
        print(f"harness: note: {task.id} scores with protocol {task.protocol.id!r}", file=sys.stderr)
    result = task.scorer()(Path(args.references), Path(args.predictions), **{k: Path(v) for k, v in options.items()})
    _emit(result, args.json)  # an undefined score (e.g. a class absent from the references) is NaN here, null in JSON
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from harness.records import RUNS_DIR
    from harness.rescore import find_record, rescore

    if (args.run is None) == (args.published is None):
        raise HarnessError("give a run id (or record file), or --published PAPER")
    if args.published is not None:
        return _rescore_published(args.published, args.json)
    path = find_record(args.run, RUNS_DIR)
    rows = rescore(path)
    _emit(rows, args.json, ["metric", "recorded", "rescored", "agrees"])
    disagree = [row["metric"] for row in rows if row["agrees"] is False]
    if disagree:
        print(f"harness: {path}: re-scoring disagrees with the record on {', '.join(disagree)}", file=sys.stderr)
    return 1 if disagree else 0


def _rescore_published(paper: str, as_json: bool) -> int:
    """Install the paper's published sets, then score every record that kept predictions again from those files."""
    from harness.rescore import rescore_published

    rows = rescore_published(registry.reproduction(paper))
    _emit(rows, as_json, ["run_id", "metric", "recorded", "rescored", "agrees"])
    disagree = [row for row in rows if row["agrees"] is False]
    runs = len({row["run_id"] for row in rows})
    print(f"re-scored {runs} published run(s) of {paper!r} from their kept predictions: {len(disagree)} disagree",
          file=sys.stderr)  # fmt: skip
    return 1 if disagree else 0


def _task_options(task: Any, extra: list[str]) -> dict[str, str]:
    """Turn ``--na-probs FILE`` into ``{"na_probs": FILE}`` for the options the task declares."""
    options: dict[str, str] = {}
    items = iter(extra)
    for flag in items:
        name = flag.removeprefix("--").replace("-", "_")
        if not flag.startswith("--") or name not in task.options:
            allowed = ", ".join("--" + o.replace("_", "-") for o in task.options) or "none"
            raise HarnessError(f"task {task.id!r} does not take {flag!r}; its extra options: {allowed}")
        value = next(items, None)
        if value is None:
            raise HarnessError(f"option {flag} needs a file path")
        options[name] = value
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description="Reproduce ML papers' claims and judge them.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks for errors")
        if json_flag:
            p.add_argument("--json", action="store_true", help="one JSON document on stdout")
        return p

    command("list", "reproductions, their tasks, tiers and claim counts")
    p = command("models", "registered model ids, with the paper that registers each")
    p.add_argument("query", nargs="?", help="show only model ids containing this text (any case)")
    p.add_argument("--paper", help="show only this paper's models")
    command("profile", "parameters and multiply-adds of a model at the paper's input size").add_argument("model")
    command("claims", "all registered claims").add_argument("--paper")
    p = command("run", "run one tier of a paper, write run records, ingest them and show the verdicts")
    p.add_argument("paper")
    p.add_argument("--tier", choices=TIERS, default="smoke")
    p.add_argument("--model")
    p.add_argument("--seed", type=int)
    p.add_argument("--data-root")
    p.add_argument(
        "--config", type=Path, help="a tier config to use instead of the paper's configs/<tier>.yaml (e.g. a variant "
        "such as a chain's later stage, which runs its init_from stage first when that has not run)",
    )  # fmt: skip
    p.add_argument("--checkpoint", help="weights to evaluate (tier weights): .safetensors or a torch state dict")
    p.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="set one config key for this run (repeatable; the value is "
        "YAML), e.g. --set trainer.max_steps=100 --set system.init_args.lr=0.1: part of the run's config and run id",
    )  # fmt: skip
    p = command("sweep", "run a sweep file's cells (configs/sweeps/NAME.yaml: a grid or list of --set values), or "
                "list them with their run ids")  # fmt: skip
    p.add_argument("paper")
    p.add_argument("sweep", help="the sweep's name (the paper's configs/sweeps/NAME.yaml) or a sweep file's path")
    p.add_argument("--cell", action="append", metavar="NAME|INDEX", help="only this cell (repeatable): a name of "
                   "--list or its index from 0 (a cluster array's task id, e.g. $SLURM_ARRAY_TASK_ID)")  # fmt: skip
    p.add_argument("--list", action="store_true", help="list the cells and their run ids; run nothing")
    p.add_argument("--dvc", action="store_true", help="print the dvc.yaml stage that runs the cells (foreach)")
    p.add_argument("--data-root")
    p = command("recipe", "the recipe hash of a tier config and model, as a budget plan fixes it")
    p.add_argument("paper")
    p.add_argument("--tier", choices=TIERS, default="budget")
    p.add_argument("--model")
    p.add_argument("--config", type=Path, help="a tier config other than the paper's configs/<tier>.yaml")
    p = command("seeds", "seeds a side to see an effect, from a pilot's between-seed spread (a plan's power)")
    p.add_argument("--effect", type=float, required=True, help="the smallest effect of interest, in the metric's unit")
    p.add_argument("--std", type=float, required=True, help="the pilot's spread: of the per-seed differences when "
                   "--paired, else of one arm's values")  # fmt: skip
    p.add_argument("--paired", action="store_true")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--power", type=float, default=0.8)
    p = command("reference", "fit a trivial reference (majority class or linear) on a tier config's data and record it")
    p.add_argument("paper")
    p.add_argument("--kind", choices=("majority", "linear", "unigram"), required=True)
    p.add_argument("--tier", choices=TIERS, default="budget")
    p.add_argument("--model", help="the config's model whose data (overrides included) the reference is fitted on")
    p.add_argument("--seed", type=int)
    p.add_argument("--data-root")
    p.add_argument("--config", type=Path, help="a tier config other than the paper's configs/<tier>.yaml")
    p = command("score", "score predictions against references in the task's official format")
    p.add_argument("task")
    p.add_argument("--references", required=True)
    p.add_argument("--predictions", required=True)
    p = command("rescore", "score a run's kept predictions again and compare with its record (exit 1 if they differ)")
    p.add_argument("run", nargs="?", help="a run id (in results/runs/) or a record file")
    p.add_argument("--published", metavar="PAPER", help="every run of the paper's published record sets instead")
    p = command("ingest", "load run records into results/harness.duckdb (idempotent)")
    p.add_argument("files", nargs="*", type=Path, help="record files or folders (default: results/runs/)")
    p.add_argument("--rebuild", action="store_true", help="build the whole database afresh from results/runs/")
    p.add_argument("--published", nargs="*", metavar="PAPER", help="first install the published record sets (of "
                   "these papers; none named: of every paper) into results/ (docs/evidence.md)")  # fmt: skip
    command("report", "verdict per claim").add_argument("--paper")
    p = command("publish", "add a paper's records (results/runs/) to its published record set in the repository")
    p.add_argument("paper")
    p.add_argument("--tier", choices=TIERS, default="budget", help="publish this tier's records (default: budget)")
    p.add_argument("--runs", nargs="+", metavar="RUN_ID", help="these runs only (and the runs they started from)")
    p.add_argument("--name", help="the set's name (default: the tier)")
    p.add_argument("--description", help="what the set holds, in words")
    p = command("verify", "re-run a paper's planned budget runs here and compare them with the published records")
    p.add_argument("paper")
    p.add_argument("--tier", choices=TIERS, default="budget")
    p.add_argument("--seeds", help="a sample of the planned seeds, comma-separated (default: all)")
    p.add_argument("--dry-run", action="store_true", help="list the runs it would make; run nothing")
    p = command(
        "export", "the store's runs with metrics as columns, or a Papers-with-Code model-index", json_flag=False
    )
    p.add_argument("--format", choices=("csv", "parquet", "model-index"), default="csv")
    p.add_argument("--paper", help="only this paper's runs")
    p.add_argument("--output", "-o", help="file to write (default: results/export.csv, .parquet or .yaml)")
    p = command("leaderboard", "serve the Streamlit leaderboard (headless: open the printed URL)", json_flag=False)
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--address", default="127.0.0.1", help="interface to listen on (0.0.0.0: every interface)")
    p.add_argument("--db", default="results/harness.duckdb", help="the database to show (default: %(default)s)")
    p = command("new", "scaffold a new reproduction as its own package (outside this repository)", json_flag=False)
    p.add_argument("paper", help="the paper id, e.g. my-paper (its package: my_paper)")
    p.add_argument("--dest", help="the folder to create (default: ./harness-PAPER, beside the harness's checkout)")
    p.add_argument("--title", help="the paper's title")
    p.add_argument("--arxiv", help="the paper's arXiv id with its version (default: a placeholder to replace)")
    actions = command("pipeline", "a DVC pipeline for a plugin's repository", json_flag=False).add_subparsers(
        dest="action", required=True
    )
    p = actions.add_parser("generate", help="write dvc.yaml and params.yaml for the papers of a plugin's repository")
    p.add_argument("--out", default=".", help="the repository's root (default: the current folder)")
    p.add_argument("--paper", dest="papers", action="append", help="a paper to include (default: those under --out)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when either file is stale")
    actions.add_parser("stage", help="run one paper's tiers as params.yaml lists them").add_argument("paper")
    return parser


HANDLERS = {
    "list": cmd_list, "models": cmd_models, "profile": cmd_profile, "claims": cmd_claims, "run": cmd_run,
    "ingest": cmd_ingest, "export": cmd_export, "rescore": cmd_rescore, "report": cmd_report,
    "leaderboard": cmd_leaderboard, "new": cmd_new, "pipeline": cmd_pipeline, "recipe": cmd_recipe,
    "reference": cmd_reference, "seeds": cmd_seeds, "sweep": cmd_sweep, "publish": cmd_publish,
    "verify": cmd_verify,
}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "score":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        code = cmd_score(args, extra) if args.command == "score" else HANDLERS[args.command](args)
        sys.stdout.flush()  # inside the try: a reader that went away (`| head`) is not an error
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except HarnessError as exc:
        if args.debug:
            raise
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


def _stdout_closed() -> int:
    """The reader of stdout closed it (``harness list --json | head``): stop quietly, as CLI tools do on SIGPIPE.
    Python would otherwise report the failed flush at exit, so stdout is pointed at /dev/null first."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141  # 128 + SIGPIPE, the status a shell reports for a tool killed by a closed pipe


if __name__ == "__main__":
    sys.exit(main())
