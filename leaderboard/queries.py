"""Pure query functions over ``results/harness.duckdb``: what the leaderboard's pages show, without Streamlit.

Every function takes the database path and opens its own short read-only connection (``harness.store_access``), which
is closed before it returns: the app never holds the file, so ``harness ingest`` can swap it in at any time and
the next query reads the new one. Results are pandas DataFrames (or plain dicts), ready for ``st.dataframe``.

Nothing here judges a claim or draws a paper's figure: ``harness ingest`` did that and wrote the ``verdicts``,
``trend_points`` and ``figures`` tables, which these functions only read. No reproduction or plugin code is
imported (tests/leaderboard/test_leaderboard_imports.py holds the app to that).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from harness.errors import HarnessError
from harness.stats import MIN_SEEDS
from harness.store_access import connect_readonly
from harness.store_tables import STORE_VERSION
from harness.tiers import BY_NAME, DATA_TIERS, FIRST_TIER, JUDGING_TIERS, TABLE, TIER_ORDER
from harness.verdicts import STATUSES

HARNESS = ".venv/bin/harness"
_SESSION: contextvars.ContextVar[tuple[Path, duckdb.DuckDBPyConnection] | None] = contextvars.ContextVar(
    "leaderboard_session", default=None
)
# "best tier reached" is the highest-ranked tier a paper has a successful run at.
TIER_RANK_SQL = "CASE tier " + " ".join(f"WHEN '{t.name}' THEN {t.rank}" for t in TABLE) + " ELSE 0 END"
# Tiers whose runs give a paper's kind of number (model-index Results): arch goes to Metadata, smoke to neither.
RESULT_TIERS = tuple(name for name in TIER_ORDER if set(BY_NAME[name].judges) - {"arch"})
# The overview's three groups of claims (docs/leaderboard.md): the paper's numbers (its results, judged at the paper's
# scale: full runs, released weights), the direction at budget scale (the sign of a difference at small scale, never
# its size) and the architecture (params, MACs: judged at the arch tier, no data); each with the tiers whose runs it
# counts and those that may judge it.
GROUPS = {"accuracy": ("scalar", "delta", "trend"), "budget": ("delta", "trend"), "architecture": ("arch",)}
GROUP_SCALES = {"accuracy": "paper", "budget": "budget", "architecture": "paper"}
GROUP_BEST_TIERS = {
    "accuracy": tuple(t for t in TIER_ORDER if t != "budget" and set(BY_NAME[t].judges) & set(GROUPS["accuracy"])),
    "budget": ("budget",),
    "architecture": ("arch",),
}
GROUP_RUN_TIERS = {"accuracy": tuple(t for t in TIER_ORDER if t not in ("arch", "budget")), "budget": ("budget",),
                   "architecture": ("arch",)}  # fmt: skip
# What a verdict counts as in a headline: its status, except that a derived claim (the value follows from the stated
# configuration) is no evidence, and an arch deviation (a reviewed difference from the paper's count) is no
# reproduction. Its scale: the judge's, else (a database of a judge before store version 6) the tier's.
COUNTED = (*STATUSES, "derived")
SCALE_SQL = "coalesce(v.scale, CASE WHEN v.tier = 'budget' OR v.plan IS NOT NULL THEN 'budget' ELSE 'paper' END)"
TAGS_SQL = "coalesce(v.tags, []::VARCHAR[])"
COUNTED_SQL = (
    f"CASE WHEN coalesce(c.derived, false) OR list_contains({TAGS_SQL}, 'derived') THEN 'derived' "
    f"WHEN list_contains({TAGS_SQL}, 'deviation') THEN 'deviation' ELSE v.status END"
)
# verdicts with their scale and what each counts as (``judged``), joined to their claims' flags
JUDGED_SQL = (
    f"SELECT v.*, {SCALE_SQL} AS scale_shown, {COUNTED_SQL} AS counted, coalesce(c.derived, false) AS derived, "
    "coalesce(c.constructed, false) AS constructed FROM verdicts v "
    "LEFT JOIN claims c ON c.paper = v.paper AND c.claim_id = v.claim_id"
)
# The paper's address: its arXiv abstract page, else the URL its claims cite.
MAX_LISTED_SEEDS = 20  # more seeds in a row than this are written as a range (a command: $(seq FIRST LAST))
MAX_JOINED_RUNS = 2000  # paper_claims looks up the runs of verdicts resting on at most this many at once
MAX_TREND_POINTS = 5000  # a trend drawn from more runs than this is drawn from its means per x
MAX_CURVE_RUNS = 20  # a delta claim's learning curves: at most this many runs of each arm (the smallest seeds)
CLAIM_RUNS_SQL = "run_id IN (SELECT unnest(run_ids) FROM verdicts WHERE paper = ? AND claim_id = ?)"
RUNS_ORDER = "finished_at DESC, run_id"  # the Runs page's order: newest first, the run id breaking ties
LINK_SQL = "any_value(CASE WHEN arxiv IS NOT NULL THEN 'https://arxiv.org/abs/' || arxiv ELSE url END)"


def frame(db: Path, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """One read-only query as a DataFrame (columns named even when no row matches)."""
    return frames(db, (sql, params))[0]


def frames(db: Path, *statements: tuple[str, Sequence[Any]]) -> list[pd.DataFrame]:
    """Several read-only queries on one connection, each a DataFrame: the :func:`session`'s when one is open on
    ``db``, else a connection of their own, closed before returning."""
    held = _SESSION.get()
    if held is not None and held[0] == db:
        return [held[1].execute(sql, list(params)).df() for sql, params in statements]
    with session(db):
        return frames(db, *statements)


@contextlib.contextmanager
def session(db: Path) -> Iterator[None]:
    """One read-only connection for the queries made inside (a page's run): they share DuckDB's buffers, where a
    connection per query would read a store of a million runs cold each time. Closed on leaving, so an ingest
    waits for at most one page's queries."""
    with connect_readonly(db) as con:
        con.execute("SET enable_progress_bar = false")  # DuckDB's bar would print into the app's console
        token = _SESSION.set((db, con))
        try:
            yield
        finally:
            _SESSION.reset(token)


def database_state(db: Path) -> str:
    """``missing`` (no file), ``unreadable`` (not a harness database), ``outdated`` (written by a harness version
    whose tables differ: rebuild it with ``harness ingest``), ``empty`` (no runs) or ``ok``."""
    if not db.exists():
        return "missing"
    try:
        runs = frame(db, "SELECT count(*) AS n FROM runs")["n"].iloc[0]
    except duckdb.Error:
        return "unreadable"
    try:
        version = frame(db, "SELECT store_version FROM meta")["store_version"].iloc[0]
    except (duckdb.Error, IndexError):
        return "outdated"
    if version != STORE_VERSION:
        return "outdated"
    return "ok" if runs else "empty"


@contextlib.contextmanager
def page_session(db: Path) -> Iterator[None]:
    """A :func:`session` for a page's run when the database opens; else none (the page's first query then says
    what is wrong with it, e.g. :func:`database_state`)."""
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(HarnessError, duckdb.Error):
            stack.enter_context(session(db))
        yield


def counts(db: Path, group: str = "accuracy", **filters: Sequence[str]) -> dict[str, int]:
    """The headline of one group of claims under the same filters as :func:`overview` (so it follows them):
    papers listed, claims, successful runs and claims per status."""
    return headline(overview(db, group, **filters))


def headline(table: pd.DataFrame) -> dict[str, int]:
    """Totals of an :func:`overview` table: papers, claims, runs and claims per status (``COUNTED``)."""
    totals = {"papers": len(table)}
    return totals | {key: int(table[key].sum()) for key in ("claims", "runs", *COUNTED)}


def titles(db: Path) -> dict[str, str]:
    """Each registered paper's title (``papers`` table, written at ingest from ``Reproduction.title``)."""
    found = frame(db, "SELECT paper, title FROM papers WHERE title IS NOT NULL")
    return dict(zip(found["paper"], found["title"], strict=True))


def filter_options(db: Path) -> dict[str, list[str]]:
    """The values each filter offers: papers, tasks (datasets), tiers, statuses and models that occur."""

    found = frames(
        db,
        ("SELECT paper FROM claims UNION SELECT paper FROM runs ORDER BY 1", ()),
        ("SELECT dataset FROM claims UNION SELECT dataset FROM runs ORDER BY 1", ()),
        ("SELECT tier FROM runs UNION SELECT tier FROM verdicts", ()),
        ("SELECT DISTINCT model FROM runs ORDER BY 1", ()),
    )
    papers, tasks, tiers, models = ([v for v in f.iloc[:, 0].tolist() if v is not None] for f in found)
    present = set(tiers)
    return {
        "papers": papers,
        "tasks": tasks,
        "tiers": [t for t in reversed(TIER_ORDER) if t in present],
        "statuses": list(STATUSES),
        "models": models,
    }


def _where(
    filters: dict[str, Sequence[str]], prefix: str = "", *more: tuple[str, Sequence[str]]
) -> tuple[str, list[Any]]:
    """``WHERE col IN (...) AND ...`` for the non-empty filters and ``more`` (column, values) pairs (column names are
    ours, values are parameters)."""
    clauses, params = [], []
    for column, values in [*filters.items(), *more]:
        if values:
            clauses.append(f"{prefix}{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def overview(
    db: Path,
    group: str = "accuracy",
    papers: Sequence[str] = (),
    tasks: Sequence[str] = (),
    tiers: Sequence[str] = (),
    statuses: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per paper for one group of claims (``GROUPS``: the paper's numbers ``accuracy``, the direction at
    ``budget`` scale, or ``architecture``): its title, its claims by what they count as (``COUNTED``: the status, a
    derived claim as ``derived``, an arch deviation as ``deviation``), its successful runs at the group's tiers and
    the best tier among them that judges the group's claims.

    The filters select claims (task = the claim's dataset, tier = the tier its verdict rests on, status) and
    runs (paper, dataset, tier); a paper is listed when any claim is left, or, without a status filter, any run.
    """
    kinds, run_tiers = GROUPS[group], GROUP_RUN_TIERS[group]
    where, params = _where(
        {"paper": papers, "dataset": tasks, "tier": tiers, "status": statuses, "kind": kinds},
        "", ("scale_shown", [GROUP_SCALES[group]]),
    )  # fmt: skip
    per_status = ", ".join(f"count(*) FILTER (WHERE counted = '{s}') AS \"{s}\"" for s in COUNTED)
    claims_sql = f"SELECT paper, count(*) AS claims, {per_status} FROM ({JUDGED_SQL}){where} GROUP BY paper"
    run_where, run_params = _where(
        {"paper": papers, "dataset": tasks, "tier": tiers, "status": ["ok"]}, "", ("tier", run_tiers)
    )
    judging = ", ".join(f"'{t}'" for t in GROUP_BEST_TIERS[group])
    runs_sql = (  # counted per (paper, tier) first: a million runs become a few rows before the tiers are ranked
        f"WITH per_tier AS (SELECT paper, tier, count(*) AS n FROM runs{run_where} GROUP BY paper, tier) "
        f"SELECT paper, sum(n)::BIGINT AS runs, arg_max(tier, {TIER_RANK_SQL}) FILTER (WHERE tier IN ({judging})) "
        "AS best_tier FROM per_tier GROUP BY paper"
    )
    names_sql = (  # a paper's title, and its link from its claims (else from the registry)
        f"SELECT coalesce(c.paper, t.paper) AS paper, coalesce(c.link, t.link) AS link, t.title FROM "
        f"(SELECT paper, {LINK_SQL} AS link FROM claims GROUP BY paper) c FULL JOIN papers t ON t.paper = c.paper"
    )
    claims, runs, names = frames(db, (claims_sql, params), (runs_sql, run_params), (names_sql, ()))
    table = claims.merge(runs, on="paper", how="left" if statuses else "outer")
    table = table.merge(names, on="paper", how="left")
    for column in ("claims", *COUNTED, "runs"):
        table[column] = table[column].fillna(0).astype(int)
    columns = ["paper", "title", "link", "claims", *COUNTED, "best_tier", "runs"]
    return table[columns].sort_values("paper", ignore_index=True)


def paper_source(db: Path, paper: str) -> dict[str, Any] | None:
    """Where the paper's claims say it comes from: ``arxiv`` (id with version) or ``url`` with ``accessed`` or
    ``sha256``, plus ``link`` (its address); None when it has no claims."""
    found = frame(
        db,
        f"SELECT any_value(arxiv) AS arxiv, any_value(url) AS url, CAST(any_value(accessed) AS VARCHAR) AS accessed, "
        f"any_value(sha256) AS sha256, {LINK_SQL} AS link FROM claims WHERE paper = ?",
        [paper],
    )
    row = {key: value if isinstance(value, str) else None for key, value in found.iloc[0].items()}
    return row if row["link"] else None


def reproduce_command(
    paper: str, kind: str, tier: str | None, models: Sequence[str], seeds: Sequence[int], dataset: str = ""
) -> str:
    """The shell command that (re)produces a claim's evidence: ``harness run`` at the tier that judges it.

    ``tier`` is the verdict's tier; when it cannot judge the claim (e.g. only smoke results), the cheapest tier
    that can is used. Glob model patterns (trend claims) are left to the tier config's default model.
    """
    if tier not in JUDGING_TIERS[kind]:
        tier, seeds = FIRST_TIER[kind], []  # the seeds of lower-tier runs say nothing about the judging runs
    if not BY_NAME[tier].per_seed:  # arch profiles each model once
        seeds = []
    elif not seeds:  # one evaluation of fixed weights decides; training needs an interval
        seeds = [0] if BY_NAME[tier].deterministic else list(range(MIN_SEEDS))
    models = [m for m in models if not any(ch in m for ch in "*?[")] or [None]
    lines = []
    for model in models:
        argv = [HARNESS, "run", paper, "--tier", tier] + (["--model", model] if model else [])
        if tier in DATA_TIERS:
            argv += ["--data-root", f"/path/to/{dataset or 'dataset'}"]
        command = shlex.join(argv)
        if len(seeds) == 1:
            command += f" --seed {seeds[0]}"
        elif seeds:
            many = isinstance(seeds, range) and len(seeds) > MAX_LISTED_SEEDS
            listed = f"$(seq {seeds[0]} {seeds[-1]})" if many else " ".join(map(str, seeds))
            command = f"for seed in {listed}; do {command} --seed $seed; done"
        lines.append(command)
    return "\n".join(lines)


def paper_claims(
    db: Path,
    paper: str,
    statuses: Sequence[str] = (),
    tiers: Sequence[str] = (),
    claim_id: str | None = None,
    look_up_all: bool = False,
) -> pd.DataFrame:
    """Every claim of ``paper`` (or the one ``claim_id``) with its verdict: reported vs measured, Δ, tolerance,
    status, tier, the number of runs (``n_runs``), their ``seeds`` and ``run_models``, and the ``command`` that
    reproduces it (for a baseline of another paper, that paper's command too).

    ``seeds`` is a list, or a ``range`` when more than ``MAX_LISTED_SEEDS`` run in a row. The database looks the
    runs of a verdict up; unless ``look_up_all``, a claim resting on more than ``MAX_JOINED_RUNS`` runs is left to
    be looked up alone (its ``seeds``, ``run_models`` and ``command`` are None): a page of claims costs no
    million-row join.
    """
    where, params = _where({"status": statuses, "tier": tiers}, prefix="v.")
    where = (where + " AND " if where else " WHERE ") + "v.paper = ?" + (" AND v.claim_id = ?" if claim_id else "")
    params += [paper] + ([claim_id] if claim_id else [])
    most = None if look_up_all else MAX_JOINED_RUNS
    table = frame(db, CLAIMS_SQL.format(where=where), [*params, most, paper, MAX_LISTED_SEEDS, paper])
    looked_up = table["n_runs"] == table["joined"]
    table["seeds"] = [_seeds(row) if ok else None for row, ok in zip(table.itertuples(), looked_up, strict=True)]
    table["run_models"] = [_as_list(v) if ok else None for v, ok in zip(table["run_models"], looked_up, strict=True)]
    table = table.drop(columns=["seed_min", "seed_max", "seed_list", "joined"])
    rows = zip(table.itertuples(), looked_up, strict=True)
    table["command"] = [_claim_command(paper, row) if ok else None for row, ok in rows]
    return _with_evidence(table)


def _with_evidence(table: pd.DataFrame) -> pd.DataFrame:
    """The evidence columns as the pages show them (nulls of a judge before store version 6 tolerated): ``tags``
    with the claim's ``derived`` and ``constructed`` flags, ``machine_ids`` a list, ``premises`` a list of
    {id, check, passed, detail}, ``examples`` and ``evidence`` (the machine, commits and origins the verdict rests
    on, and the other machines judged apart: store version 7) a dict or None; no Δ at budget scale (the sign is
    judged, not the size)."""
    flags = zip(table["tags"], table["derived"], table["constructed"], strict=True)
    table["tags"] = [
        list(dict.fromkeys([*_as_list(t), *["derived"] * bool(d), *["constructed"] * bool(c)])) for t, d, c in flags
    ]
    table["machine_ids"] = [_as_list(v) for v in table["machine_ids"]]
    table["premises"] = [_json_cell(v) or [] for v in table["premises"]]
    table["examples"] = [_json_cell(v) for v in table["examples"]]
    table["evidence"] = [_json_cell(v) for v in table["evidence"]]
    table["delta"] = table["delta"].where(table["scale"] != "budget")
    return table.drop(columns=["derived", "constructed"])


def _json_cell(value: Any) -> Any:
    """A JSON cell parsed (None for NULL)."""
    return json.loads(value) if isinstance(value, str) else None


# paper_claims: the claims' verdicts (v), the runs each rests on (evidence: only verdicts of at most ? runs) looked
# up among the runs of the paper and its baselines' papers (mine), summed up per claim (used).
CLAIMS_SQL = (
    "WITH v AS (SELECT * FROM (" + JUDGED_SQL.replace("{", "{{").replace("}", "}}") + ") v{where}), "
    "evidence AS (SELECT claim_id, unnest(run_ids) AS run_id FROM v "
    "WHERE len(run_ids) <= coalesce(?::BIGINT, len(run_ids))), "
    "mine AS (SELECT run_id, seed, model, paper FROM runs WHERE paper IN (SELECT v.paper FROM v UNION "
    "SELECT c.baseline_paper FROM claims c WHERE c.paper = ?)), "
    "used AS (SELECT e.claim_id, count(*) AS joined, count(DISTINCT r.seed) AS n_seeds, min(r.seed) AS seed_min, "
    "max(r.seed) AS seed_max, CASE WHEN count(DISTINCT r.seed) <= ? OR max(r.seed) - min(r.seed) + 1 <> "
    "count(DISTINCT r.seed) THEN list(DISTINCT r.seed ORDER BY r.seed) END AS seed_list, "
    "list(DISTINCT r.model ORDER BY r.model) FILTER (WHERE r.paper = ?) AS run_models "
    "FROM evidence e JOIN mine r USING (run_id) GROUP BY e.claim_id) "
    "SELECT v.claim_id, v.kind, c.source, v.model, c.baseline, c.baseline_paper, v.dataset, v.split, v.metric, "
    "c.unit, v.reported, v.mean AS measured, v.std, v.delta, v.tolerance, v.status, v.tier, v.n, "
    "coalesce(len(v.run_ids), 0) AS n_runs, coalesce(u.joined, 0) AS joined, u.seed_min, u.seed_max, u.seed_list, "
    "u.run_models, v.reason, c.statement, c.rule, v.scale_shown AS scale, v.counted, v.tags, v.derived, "
    "v.constructed, v.low, v.high, v.p_value, v.p_holm, v.analysis, v.excluded, v.seeds_needed, v.machines, "
    "v.machine_ids, v.premises, v.plan, v.examples, v.off_plan, v.evidence "
    "FROM v JOIN claims c ON c.paper = v.paper AND c.claim_id = v.claim_id LEFT JOIN used u ON u.claim_id = v.claim_id "
    "ORDER BY v.claim_id"
)


def _seeds(row: Any) -> list[int] | range:
    """A claim's seeds: the listed ones, or the run from the smallest to the largest (many, none missing)."""
    if row.seed_list is not None and row.seed_list is not pd.NA:
        return _as_list(row.seed_list)
    return range(int(row.seed_min), int(row.seed_max) + 1) if pd.notna(row.seed_min) else []


def seeds_text(seeds: Sequence[int] | None) -> str:
    """Seeds for a table cell: ``0, 1, 2``, or ``0–19999 (20000 seeds)`` for a long run of them."""
    if seeds is None:
        return ""
    if len(seeds) <= MAX_LISTED_SEEDS:
        return ", ".join(map(str, seeds))
    if isinstance(seeds, range):
        return f"{seeds[0]}–{seeds[-1]} ({len(seeds)} seeds)"
    return f"{', '.join(map(str, seeds[:MAX_LISTED_SEEDS]))}, … ({len(seeds)} seeds)"


def evidence_text(evidence: dict[str, Any] | None) -> str | None:
    """What a verdict rests on, for a table cell: ``published · AMD EPYC / avx512 @ bcb08d8`` (origin, machine,
    commit), ``+N`` more commits, ``(dirty)`` for a dirty working tree; None without evidence."""
    if not evidence:
        return None
    kinds = {"local" if origin == "local" else "published" for origin in evidence.get("origins") or []}
    origin = " + ".join(kind for kind in ("published", "local") if kind in kinds)
    text = " · ".join(part for part in (origin, evidence.get("machine")) if part)
    if commits := evidence.get("commits"):
        text += f" @ {commits[0][:7]}" + (f" +{len(commits) - 1}" if len(commits) > 1 else "")
    if evidence.get("dirty"):
        text += " (dirty)"
    return text or None


def others_text(evidence: dict[str, Any] | None, kind: str = "scalar") -> str | None:
    """The other machines a verdict was judged apart on, for a table cell: ``✓ confirmed on M (8 seeds)`` where
    a machine's own status is the verdict's (``confirmed_on``), else ``re-run on M: inconclusive (2 seeds)``;
    None when there is none."""
    evidence = evidence or {}
    confirmed = set(evidence.get("confirmed_on") or [])
    parts = []
    for other in evidence.get("others") or []:
        count = f" ({count_text(other.get('n'), kind)})" if other.get("n") is not None else ""
        if other.get("confirms", other["machine"] in confirmed):
            parts.append(f"✓ confirmed on {other['machine']}{count}")
        else:
            parts.append(f"re-run on {other['machine']}: {other.get('status')}{count}")
    return "; ".join(parts) or None


def count_text(n: int, kind: str = "scalar") -> str:
    """``n`` seeds (a trend's n counts points)."""
    unit = "point" if kind == "trend" else "seed"
    return f"{int(n)} {unit}{'' if n == 1 else 's'}"


def _claim_command(paper: str, row: Any) -> str:
    command = reproduce_command(paper, row.kind, row.tier, _command_models(paper, row), row.seeds, row.dataset)
    other = row.baseline_paper if isinstance(row.baseline_paper, str) and row.baseline_paper != paper else None
    if other:  # the baseline is another paper's run
        command += "\n" + reproduce_command(other, row.kind, row.tier, [row.baseline], row.seeds, row.dataset)
    return command


def _as_list(value: Any) -> list[Any]:
    """A LIST cell as a Python list (DuckDB gives numpy arrays, and NULL as None or pd.NA)."""
    return [] if value is None or value is pd.NA else [v.item() if hasattr(v, "item") else v for v in value]


def _command_models(paper: str, row: Any) -> list[str]:
    """The models whose runs a claim's command (re)makes: those of its runs under ``paper``, else the claim's model
    and a baseline of the same paper."""
    if row.run_models:
        return row.run_models
    return [row.model] + ([row.baseline] if isinstance(row.baseline, str) and row.baseline_paper == paper else [])


def reported_vs_measured(claims: pd.DataFrame) -> pd.DataFrame:
    """Chart data from :func:`paper_claims`: each judged non-trend claim of the paper's scale (a budget verdict
    judges a sign, not a distance) with its distance from the reported value
    in tolerances, ``z`` = Δ / tolerance (``layer`` "claim"), and one row for the band z in [-1, 1] where a claim
    holds (``layer`` "band"). On that one axis a parameter count in the millions, a top-1 in percent and a delta
    of a few points are equally readable: the band has the same width for every claim."""
    scored = claims[
        (claims["kind"] != "trend") & (claims["scale"] == "paper") & claims["delta"].notna()
        & claims["reported"].notna() & (claims["tolerance"] > 0)
    ]  # fmt: skip
    label = [
        f"{c} ({m}{', delta' if k == 'delta' else ''})" for c, m, k in scored[["claim_id", "metric", "kind"]].values
    ]
    points = scored.assign(label=label, layer="claim", z=scored["delta"] / scored["tolerance"])[
        ["label", "layer", "claim_id", "metric", "status", "tier", "reported", "measured", "tolerance", "delta", "z"]
    ]
    if points.empty:
        return points
    band = pd.DataFrame({"layer": ["band"], "lo": [-1.0], "hi": [1.0]})
    return pd.concat([points, band], ignore_index=True)


def _runs_where(
    papers: Sequence[str], tiers: Sequence[str], models: Sequence[str], tasks: Sequence[str],
    statuses: Sequence[str], run_ids: Sequence[str] | None, claim: tuple[str, str] | None,
) -> tuple[str, list[Any]]:  # fmt: skip
    filters = {"paper": papers, "tier": tiers, "model": models, "dataset": tasks, "status": statuses}
    where, params = _where(filters)
    if run_ids is not None:
        where += (" AND " if where else " WHERE ") + ("list_contains(?::VARCHAR[], run_id)" if run_ids else "false")
        params += [list(run_ids)] if run_ids else []
    if claim is not None:  # a join in the database: a verdict may rest on a million run ids
        where += (" AND " if where else " WHERE ") + CLAIM_RUNS_SQL
        params += list(claim)
    return where, params


def runs(
    db: Path,
    papers: Sequence[str] = (),
    tiers: Sequence[str] = (),
    models: Sequence[str] = (),
    tasks: Sequence[str] = (),
    statuses: Sequence[str] = (),
    run_ids: Sequence[str] | None = None,
    limit: int | None = None,
    offset: int = 0,
    claim: tuple[str, str] | None = None,
) -> pd.DataFrame:
    """Run records with their provenance, newest first (``RUNS_ORDER``); ``run_ids``, or ``claim`` (paper, claim id:
    the runs its verdict rests on), narrows further. ``limit`` and ``offset`` cut them as SQL's LIMIT and OFFSET do
    (:func:`runs_page` gives the same rows at any depth without sorting the store)."""
    where, params = _runs_where(papers, tiers, models, tasks, statuses, run_ids, claim)
    page = f" LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
    return _read_runs(db, f"SELECT rowid AS row FROM runs{where} ORDER BY {RUNS_ORDER}{page}", params)


def _read_runs(db: Path, chosen: str, params: Sequence[Any]) -> pd.DataFrame:
    """The runs whose row ids ``chosen`` (SQL) gives, read by row id, in ``RUNS_ORDER``: metrics from their records'
    JSON, a page of a million runs reads 100 records."""
    table = frame(
        db,
        f"WITH chosen AS ({chosen}) SELECT run_id, paper, model, tier, dataset, split, seed, status, protocol, "
        "CAST(record->'metrics' AS VARCHAR) AS metrics, started_at, finished_at, git_sha, git_dirty, config_hash, "
        "data_hash, CAST(hardware AS VARCHAR) AS hardware, CAST(versions AS VARCHAR) AS versions FROM runs "
        f"WHERE rowid IN (SELECT row FROM chosen) ORDER BY {RUNS_ORDER}",
        params,
    )
    table["metrics"] = [_metrics_text(text) for text in table["metrics"]]
    return table


def runs_page(
    db: Path,
    page: int,
    total: int,
    size: int = 100,
    papers: Sequence[str] = (),
    tiers: Sequence[str] = (),
    models: Sequence[str] = (),
    tasks: Sequence[str] = (),
    statuses: Sequence[str] = (),
    run_ids: Sequence[str] | None = None,
    claim: tuple[str, str] | None = None,
) -> pd.DataFrame:
    """Page ``page`` (from 1) of the runs the filters (those of :func:`runs`) select, ``size`` to a page: the rows
    ``runs(..., limit=size, offset=(page - 1) * size)`` gives, at any depth in about the time of the first page.
    ``total`` is how many runs the filters select (:func:`runs_count`, which the caller needs for its page count);
    it only guides the seek (:func:`_page_rows`), which checks what it finds: a wrong one costs time, never rows."""
    where, params = _runs_where(papers, tiers, models, tasks, statuses, run_ids, claim)
    with _one_connection(db):  # the seek and the page read one state of the database
        chosen, chosen_params = _page_rows(db, where, params, total, size, (page - 1) * size)
        return _read_runs(db, chosen, chosen_params)


def _page_rows(db: Path, where: str, params: list[Any], total: int, size: int, offset: int) -> tuple[str, list[Any]]:
    """The SQL (and its parameters) giving the row ids of the ``size`` runs from position ``offset`` of the
    ``total`` that ``where`` selects, in ``RUNS_ORDER``.

    DuckDB serves a small OFFSET with a top-n; beyond a few thousand rows (``SEEK_FROM``) it sorts every selected row on
    (finished_at, run_id), a string key, then skips to the page: a page past the first fifty of a million runs cost a
    sort of the whole store. There, unless the selection is small enough to sort (``SORT_AT_MOST``), the page is sought
    by its sort key: the finished_at of its first row is an order statistic, which ``quantile_disc`` selects without a
    sort, checked by counting the rows that finish later and at the same time; the page is then a top-n of its size over
    the rows finishing at or before it, skipping only the ties before it (same finished_at, smaller run id). Should the
    check fail (e.g. runs without finished_at, which count in ``total`` but not in the quantile), the plain OFFSET
    serves."""
    plain = f"SELECT rowid AS row FROM runs{where}{{seek}} ORDER BY {RUNS_ORDER} LIMIT {int(size)} OFFSET {{skip}}"
    if offset + size <= SEEK_FROM or total <= SORT_AT_MOST or not 0 <= offset < total:
        return plain.format(seek="", skip=int(offset)), params
    # position ``offset`` from the newest is position total - 1 - offset from the oldest; quantile_disc(q) picks
    # position ceil(q * n) - 1 of the n values, so q sits half a position above it, clear of rounding
    q = (total - 1 - offset + 0.5) / total
    found = frame(db, SEEK_SQL.format(where=where, q=repr(q)), [*params, *params])
    boundary, before, ties = found["t"].iloc[0], int(found["before"].iloc[0]), int(found["ties"].iloc[0])
    if pd.isna(boundary) or not before <= offset < before + ties:
        return plain.format(seek="", skip=int(offset)), params
    seek = (" AND " if where else " WHERE ") + "(finished_at <= ? OR finished_at IS NULL)"  # NULLS LAST, as sorted
    return plain.format(seek=seek, skip=offset - before), [*params, boundary]


SEEK_FROM = 5000  # pages ending within this many rows are left to DuckDB's top-n (_page_rows)
SORT_AT_MOST = 100_000  # selections of at most this many runs are sorted: cheaper than scanning them twice more
# _page_rows: a finished_at picked by quantile_disc (t), and how many selected runs finish after it and at it.
SEEK_SQL = (
    "WITH b AS (SELECT quantile_disc(finished_at, {q}) AS t FROM runs{where}) "
    "SELECT any_value(b.t) AS t, count(*) FILTER (WHERE r.finished_at > b.t) AS before, "
    "count(*) FILTER (WHERE r.finished_at = b.t) AS ties FROM (SELECT finished_at FROM runs{where}) r, b"
)


@contextlib.contextmanager
def _one_connection(db: Path) -> Iterator[None]:
    """The held :func:`session` on ``db``, else one of its own for the queries inside."""
    held = _SESSION.get()
    if held is not None and held[0] == db:
        yield
    else:
        with session(db):
            yield


def _metrics_text(text: str | None) -> str | None:
    """A record's metrics (JSON) as ``name=value, ...`` sorted by name, values to 6 significant digits."""
    found = json.loads(text) if isinstance(text, str) else {}
    return ", ".join(f"{name}={value:.6g}" for name, value in sorted(found.items())) or None


def runs_count(
    db: Path,
    papers: Sequence[str] = (),
    tiers: Sequence[str] = (),
    models: Sequence[str] = (),
    tasks: Sequence[str] = (),
    statuses: Sequence[str] = (),
    run_ids: Sequence[str] | None = None,
    claim: tuple[str, str] | None = None,
) -> int:
    """How many runs :func:`runs` would give without a limit (the Runs page's pages)."""
    where, params = _runs_where(papers, tiers, models, tasks, statuses, run_ids, claim)
    return int(frame(db, f"SELECT count(*) AS n FROM runs{where}", params)["n"].iloc[0])


def run_artifacts(db: Path, run_id: str) -> dict[str, str]:
    """What a run's record names in ``artifacts`` (e.g. ``training_log``, the CSV logger's metrics.csv)."""
    found = frame(db, "SELECT CAST(artifacts AS VARCHAR) AS a FROM runs WHERE run_id = ?", [run_id])
    text = None if found.empty else found["a"].iloc[0]
    return {k: str(v) for k, v in json.loads(text).items()} if isinstance(text, str) else {}


def training_curves(log: Path) -> pd.DataFrame:
    """A Lightning CSV log (``metrics.csv``: one column per logged value, rows sparse) as long rows: step, epoch,
    name, value; only finite values. Empty when the file has no logged values."""
    table = pd.read_csv(log)
    keys = [c for c in ("step", "epoch") if c in table.columns]
    long = table.melt(id_vars=keys, var_name="name", value_name="value")
    long = long[pd.to_numeric(long["value"], errors="coerce").notna()].astype({"value": float})
    return long.reset_index(drop=True)


def find_log(db: Path, path: str) -> Path | None:
    """A record's log path as it was written (relative to the repository root the run was made in): found from the
    current folder or from the database's (results/..); None when it is not on this machine."""
    for candidate in (Path(path), db.resolve().parent.parent / path):
        if candidate.is_file():
            return candidate
    return None


def claim_logs(db: Path, paper: str, claim_id: str, per_model: int = MAX_CURVE_RUNS) -> pd.DataFrame:
    """The training logs (``artifacts.training_log``) of the runs a claim's verdict rests on: run_id, model, seed,
    log (the path the record names), at most ``per_model`` runs of each model (the smallest seeds), by model and
    seed. A delta claim's two arms are its model's runs and its baseline's."""
    return frame(
        db,
        "SELECT run_id, model, seed, artifacts->>'training_log' AS log FROM runs "
        f"WHERE {CLAIM_RUNS_SQL} AND artifacts->>'training_log' IS NOT NULL "
        "QUALIFY row_number() OVER (PARTITION BY model ORDER BY seed, run_id) <= ? ORDER BY model, seed, run_id",
        [paper, claim_id, per_model],
    )


def arm_curves(db: Path, logs: pd.DataFrame) -> pd.DataFrame:
    """The training curves of the runs of :func:`claim_logs` whose log is on this machine: the long rows of
    :func:`training_curves` (step, epoch, name, value) with each run's run_id, model and seed."""
    found = []
    for run in logs.itertuples():
        path = find_log(db, run.log)
        if path is not None:
            found.append(training_curves(path).assign(run_id=run.run_id, model=run.model, seed=run.seed))
    columns = ["step", "epoch", "name", "value", "run_id", "model", "seed"]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=columns)


def paper_run_count(db: Path, paper: str) -> int:
    """How many runs of ``paper`` the database holds."""
    return int(frame(db, "SELECT count(*) AS n FROM runs WHERE paper = ?", [paper])["n"].iloc[0])


def claim_run_ids(db: Path, paper: str, claim_id: str) -> list[str]:
    """The run ids a claim's verdict rests on (empty when it has none)."""
    found = frame(db, "SELECT run_ids FROM verdicts WHERE paper = ? AND claim_id = ?", [paper, claim_id])
    return [] if found.empty else _as_list(found["run_ids"].iloc[0])


def paper_figures(db: Path, paper: str) -> list[tuple[str, dict[str, Any]]]:
    """The paper's own figures (title, Vega-Lite spec) as ingest drew them with its ``Reproduction.figures``; none
    when it has no such function or no records."""
    found = frame(db, "SELECT title, spec FROM figures WHERE paper = ? ORDER BY position", [paper])
    return [(title, json.loads(spec)) for title, spec in zip(found["title"], found["spec"], strict=True)]


def trend_points(db: Path, paper: str, claim_id: str, max_points: int = MAX_TREND_POINTS) -> pd.DataFrame:
    """The points a trend claim was judged on, as ingest stored them: the rule's x and y for each run of its verdict
    (columns x, y, model, seed, run_id, runs), sorted by x. Empty when the claim is not a trend or has no runs.
    Beyond ``max_points`` runs, one point per (x, model) instead: the mean y of its ``runs`` (seed and run_id
    empty), so a sweep of a million runs is drawn as its curve, not sent to the browser run by run."""
    key = "FROM trend_points WHERE paper = ? AND claim_id = ?"
    count = int(frame(db, f"SELECT count(*) AS n {key}", [paper, claim_id])["n"].iloc[0])
    if count <= max_points:
        sql = f"SELECT x, y, model, seed, run_id, 1 AS runs {key} ORDER BY x, model, seed"
    else:
        sql = (
            "SELECT x, avg(y) AS y, model, NULL::BIGINT AS seed, NULL::VARCHAR AS run_id, count(*) AS runs "
            f"{key} GROUP BY x, model ORDER BY x, model"
        )
    return frame(db, sql, [paper, claim_id])


def model_index(db: Path, run_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """The runs (all, or ``run_ids``) in the Papers-with-Code model-index format (``model-index.yml``).

    One ``Collections`` entry per paper, one ``Models`` entry per model: ``Metadata`` holds the arch tier's
    ``Parameters`` and ``FLOPs`` (multiply-adds, as the papers count them); ``Results`` hold the mean of each
    metric over seeds per (dataset, split, tier). Smoke runs prove a pipeline, never a number: they are left out.
    """
    table = runs(db, statuses=["ok"], run_ids=run_ids)
    metrics = frame(db, "SELECT run_id, name, value FROM metrics")
    long = table[["run_id", "paper", "model", "tier", "dataset", "split", "seed"]].merge(metrics, on="run_id")
    links = dict(frame(db, f"SELECT paper, {LINK_SQL} AS link FROM claims GROUP BY paper").itertuples(index=False))
    collections = [
        {"Name": paper, "Paper": {"URL": links[paper]} if paper in links else None}
        for paper in sorted(set(long["paper"]))
    ]
    models = []
    for (paper, model), group in long.groupby(["paper", "model"], sort=True):
        entry: dict[str, Any] = {"Name": model, "In Collection": paper}
        if metadata := _arch_metadata(group):
            entry["Metadata"] = metadata
        entry["Results"] = _results(group[group["tier"].isin(RESULT_TIERS)])
        if paper in links:
            entry["Paper"] = links[paper]
        models.append(entry)
    return {"Collections": [{k: v for k, v in c.items() if v} for c in collections], "Models": models}


def _arch_metadata(group: pd.DataFrame) -> dict[str, Any]:
    arch = group[group["tier"] == "arch"].groupby("name")["value"].last()
    found = {"Parameters": arch.get("params"), "FLOPs": arch.get("macs")}
    return {key: int(value) for key, value in found.items() if value is not None and pd.notna(value)}


def _results(group: pd.DataFrame) -> list[dict[str, Any]]:
    results = []
    for (dataset, split, tier), part in group.groupby(["dataset", "split", "tier"], sort=True):
        means = part.groupby("name")["value"].mean()
        results.append({
            "Task": dataset, "Dataset": dataset, "Split": split, "Tier": tier, "Seeds": int(part["seed"].nunique()),
            "Metrics": {name: round(float(value), 4) for name, value in means.items()},
        })  # fmt: skip
    return results
