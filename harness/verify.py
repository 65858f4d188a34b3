"""``harness verify PAPER``: re-run a paper's planned budget runs on this machine and compare them with the published.

The runs to make are the plan's (harness.plans): each planned recipe, named by its label ``<config>:<model>``, at
each planned seed (or the ``--seeds`` sample of them). A recipe whose config no longer gives the plan's hash cannot
be re-run as planned: that is an error naming the label, before anything runs. Runs already made on this machine
(same recipe and seed, after the plan was fixed) are kept, not made again, so a killed verify goes on where it
stopped.

The comparison is of verdicts and distributions, never of bits: CPU kernels differ between machines, so the same
commit and seed give numbers that differ in the last digits. Per claim: the verdict over the published records
(their machine) and the verdict over this machine's records alone (ingest judges each machine apart, ``evidence``);
per recipe: each machine's mean and spread over its seeds, and the per-seed difference (this machine minus the
published), whose largest size is shown. The report is written to ``results/verify/<paper>.json``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.plans import Plan, paper_plan, recipe_hash
from harness.records import RUNS_DIR, RunRecord, atomic_write_text, hardware, machine_key, read_record

VERIFY_DIR = "verify"  # under results/


def planned_recipes(repro: Any, plan: Plan, tier: str) -> dict[str, tuple[Path, str, str]]:
    """Every recipe the plan fixes: label -> (config path, model, hash). A label is ``<config>:<model>`` with the
    config relative to the paper's folder (``harness recipe`` prints it); a config that no longer gives the plan's
    hash is an error (its runs would not be the plan's)."""
    from harness.runner import load_config, resolve_config

    found: dict[str, tuple[Path, str, str]] = {}
    for entry in plan.claims:
        for label, planned in entry.recipes.items():
            config, sep, model = label.rpartition(":")
            path = repro.root / config
            if not sep or not path.is_file():
                raise HarnessError(f"{plan.path}: recipe label {label!r} names no config of {repro.id!r}")
            resolved = resolve_config(load_config(path, tier), tier, model, 0, None, path=path)
            now = recipe_hash(resolved)
            if now != planned:
                raise HarnessError(
                    f"{plan.path}: recipe {label!r}: the config now gives {now}, the plan fixed {planned}: it changed "
                    "after the plan, so its runs would not be the plan's"
                )
            found[label] = (path, model, planned)
    return found


def _local_runs(
    runs_dir: Path, paper: str, machine: str, plan: Plan, shipped: Collection[str]
) -> dict[tuple[str, int], RunRecord]:
    """This machine's records of the paper made after the plan was fixed, not from a published set (``shipped``,
    their run ids: a set made on the same kind of machine is still not a re-run): (recipe hash, seed) -> record."""
    found: dict[tuple[str, int], RunRecord] = {}
    for path in sorted(runs_dir.glob(f"{paper}.*.json")) if runs_dir.is_dir() else []:
        if path.stem in shipped:
            continue
        try:
            record = read_record(path)
        except HarnessError:
            continue
        if record.status != "ok" or record.started_at < plan.fixed_at:
            continue
        if machine_key(record.provenance.hardware) == machine and (recipe := recipe_hash(record.config)):
            found[(recipe, record.seed)] = record
    return found


def verify(
    repro: Any,
    tier: str = "budget",
    seeds: Sequence[int] | None = None,
    runs_dir: Path = RUNS_DIR,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Make the plan's runs here (those not made yet), ingest them with the published sets, and compare."""
    from harness import published, report
    from harness.runner import run
    from harness.store import ingest

    plan = paper_plan(repro)
    if plan is None:
        raise HarnessError(f"{repro.id!r} has no budget plan ({repro.plan_path}): nothing to verify")
    recipes = planned_recipes(repro, plan, tier)
    machine = machine_key(hardware())
    installed = published.install_all([repro], runs_dir)
    if installed.errors:
        raise HarnessError("; ".join(installed.errors))
    wanted = sorted({(label, seed) for e in plan.claims for label in e.recipes for seed in e.seeds
                     if seeds is None or seed in seeds})  # fmt: skip
    if seeds is not None and not wanted:
        raise HarnessError(
            f"--seeds {list(seeds)}: none of them is planned ({sorted({s for e in plan.claims for s in e.seeds})})"
        )
    origin = published.labels(installed.sets)
    done = _local_runs(runs_dir, repro.id, machine, plan, origin)
    todo = [(label, seed) for label, seed in wanted if (recipes[label][2], seed) not in done]
    if dry_run:
        return {"paper": repro.id, "machine": machine, "to_run": [f"{label} seed {seed}" for label, seed in todo]}
    for label, seed in todo:
        path, model, _ = recipes[label]
        run(repro, tier, model, seed, config_path=path, runs_dir=runs_dir)
    result = ingest(runs_dir=runs_dir, db_path=runs_dir.parent / "harness.duckdb")
    if result.errors:
        raise HarnessError("; ".join(result.errors))
    done = _local_runs(runs_dir, repro.id, machine, plan, origin)
    by_recipe = _published_runs(installed.records, origin, plan)
    metrics = _judged_metrics(plan)
    rows = report.read(repro.id, runs_dir.parent / "harness.duckdb")
    doc = {
        "paper": repro.id, "machine": machine, "plan": plan.path, "seeds": sorted({s for _, s in wanted}),
        "runs_made": len(todo),
        "recipes": [_compare(label, recipes[label][2], metrics, by_recipe, done) for label in recipes],
        "claims": [_claim_row(row, machine) for row in rows if plan.entry(row["claim_id"])],
    }  # fmt: skip
    out = runs_dir.parent / VERIFY_DIR / f"{repro.id}.json"
    atomic_write_text(out, json.dumps(doc, indent=2, default=str) + "\n", overwrite=True)
    doc["written"] = str(out)
    return doc


def _published_runs(paths: Sequence[Path], origin: dict[str, str], plan: Plan) -> dict[tuple[str, int], RunRecord]:
    found: dict[tuple[str, int], RunRecord] = {}
    for path in paths:
        record = read_record(path)
        if record.run_id in origin and plan.tag_of(record.run_id) is None and (recipe := recipe_hash(record.config)):
            found[(recipe, record.seed)] = record
    return found


def _judged_metrics(plan: Plan) -> list[str]:
    """The metrics the plan's claims judge, in plan order (the claims file is read once)."""
    from harness.claims import registered_claims

    claims = {c.id: c for c in registered_claims(plan.paper)}
    return list(dict.fromkeys(claims[e.claim].metric for e in plan.claims if e.claim in claims))


def _metric(record: RunRecord, metrics: Sequence[str]) -> tuple[str, float] | None:
    """The record's value of the first judged metric it carries (else its first metric by name)."""
    name = next((m for m in metrics if m in record.metrics), None) or next(iter(sorted(record.metrics)), None)
    return (name, record.metrics[name]) if name else None


def _spread(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "std": None}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else None,
    }


def _compare(
    label: str,
    recipe: str,
    metrics: Sequence[str],
    theirs: dict[tuple[str, int], RunRecord],
    mine: dict[tuple[str, int], RunRecord],
) -> dict[str, Any]:
    """One recipe on both machines: each side's distribution and the per-seed differences (here minus published)."""
    seeds = sorted({s for (r, s) in theirs if r == recipe} | {s for (r, s) in mine if r == recipe})
    metric, published_values, local_values, differences = None, [], [], []
    for seed in seeds:
        a, b = theirs.get((recipe, seed)), mine.get((recipe, seed))
        va, vb = (_metric(a, metrics) if a else None), (_metric(b, metrics) if b else None)
        metric = metric or (va or vb or (None,))[0]
        if va:
            published_values.append(va[1])
        if vb:
            local_values.append(vb[1])
        if va and vb:
            differences.append({"seed": seed, "published": va[1], "here": vb[1], "difference": vb[1] - va[1]})
    largest = max((abs(d["difference"]) for d in differences), default=None)
    return {
        "recipe": label, "hash": recipe, "metric": metric, "published": _spread(published_values),
        "here": _spread(local_values), "per_seed": differences, "largest_difference": largest,
        "identical_here": bool(differences) and largest == 0.0,
    }  # fmt: skip


def _claim_row(row: dict[str, Any], machine: str) -> dict[str, Any]:
    evidence = row.get("evidence") or {}
    mine = next((o for o in evidence.get("others", []) if o["machine"] == machine), None)
    rests_here = evidence.get("machine") == machine
    return {
        "claim_id": row["claim_id"], "status": row["status"], "rests_on": evidence.get("machine"),
        "origins": evidence.get("origins"), "interval": [row["low"], row["high"]],
        "here": {"status": row["status"], "n": row["n"], "low": row["low"], "high": row["high"]} if rests_here
        else (mine and {k: mine[k] for k in ("status", "n", "low", "high")}),
        "confirmed_here": machine in evidence.get("confirmed_on", []),
    }  # fmt: skip
