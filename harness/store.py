"""The DuckDB store: ``results/harness.duckdb``, derived from the run records and the registered claims.

Ingest is where claims are judged: it writes each claim's verdict (``verdicts``), the points each trend claim was
judged on (``trend_points``), each paper's own figures as Vega-Lite JSON (``figures``, drawn by the paper's
``Reproduction.figures`` function) and each registered paper's title and address (``papers``). ``harness report``,
the leaderboard and any export read these tables and never judge, re-read claims files or import reproduction code.
A database of an older ``STORE_VERSION`` is refused by readers with "run `harness ingest`", and the next ingest
rebuilds it.

``results/runs/`` is the source of truth. Ingest is incremental: new records are validated and inserted, records
whose files left ``results/runs/`` are deleted, and only the claims on the (paper, dataset, split) that changed are
judged again, from the stored records, all in one DuckDB transaction: a crash before the commit leaves the database
as it was. The first ingest (or one after a ``STORE_VERSION`` change, or ``--rebuild``) builds the whole database
in a temp file and renames it into place. Writers take turns through an ``flock`` on ``.harness.duckdb.lock``;
readers open short read-only connections and wait while a writer holds the file (DuckDB allows one writer or many
readers), so they see the database before or after an ingest, never between. Records ingested from elsewhere are
validated and copied into ``results/runs/`` first (immutably); a record the database refuses anyway is named and
left out, and the others still go in.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from harness import dotted
from harness.errors import HarnessError
from harness.records import (
    MAX_RECORD_BYTES,
    RUNS_DIR,
    RunRecord,
    file_lock,
    read_record,
    record_path,
    write_record,
)

if TYPE_CHECKING:
    from harness.claims import Claim

DB_PATH = Path("results/harness.duckdb")
STORE_VERSION = 6  # 3: runs.parents; 4: incremental ingest (rows taken from each record's JSON by DuckDB); 5: papers;
# 6: verdicts' evidence (scale, analysis, interval, p-values, premises, plan, machines, tags) and claims' judging fields
BUILD_PREFIX = ".ingest-"  # the temp folders of an ingest, beside the database
PARALLEL_FROM = 5000  # records validated in several processes from this many on
MAX_OBJECT_BYTES = 2 * MAX_RECORD_BYTES  # the largest record line DuckDB's JSON reader is asked to take
LOCK_WAIT_S = 120.0  # how long a connection waits for another process's lock on the database
Key = tuple[str, str, str]  # (paper, dataset, split): what a claim's records are looked up by
FAMILY = ("delta", "trend")  # the claims a paper's Holm correction runs over (those judged at the budget tier)

RUN_COLUMNS = {
    "run_id": "VARCHAR", "paper": "VARCHAR", "model": "VARCHAR", "tier": "VARCHAR", "dataset": "VARCHAR",
    "split": "VARCHAR", "seed": "BIGINT", "status": "VARCHAR", "protocol": "VARCHAR",
    "started_at": "TIMESTAMP", "finished_at": "TIMESTAMP", "git_sha": "VARCHAR", "git_dirty": "BOOLEAN",
    "config_hash": "VARCHAR", "data_hash": "VARCHAR", "hardware": "JSON", "versions": "JSON", "config": "JSON",
    "claim_ids": "VARCHAR[]", "parents": "VARCHAR[]", "artifacts": "JSON", "record": "JSON",
}  # fmt: skip
METRIC_COLUMNS = {"run_id": "VARCHAR", "name": "VARCHAR", "value": "DOUBLE"}
CLAIM_COLUMNS = {
    "paper": "VARCHAR", "claim_id": "VARCHAR", "arxiv": "VARCHAR", "source": "VARCHAR", "kind": "VARCHAR",
    "model": "VARCHAR", "dataset": "VARCHAR", "split": "VARCHAR", "metric": "VARCHAR", "value": "DOUBLE",
    "unit": "VARCHAR", "higher_is_better": "BOOLEAN", "tolerance": "DOUBLE", "statement": "VARCHAR",
    "rule": "JSON", "baseline": "VARCHAR", "baseline_paper": "VARCHAR", "baseline_conditions": "JSON",
    "conditions": "JSON", "quote": "VARCHAR", "protocol": "VARCHAR", "notes": "VARCHAR", "url": "VARCHAR",
    "accessed": "DATE", "sha256": "VARCHAR", "analysis": "VARCHAR", "replicate": "VARCHAR", "equivalence": "JSON",
    "counting": "VARCHAR", "deviation": "JSON", "derived": "BOOLEAN", "constructed": "BOOLEAN",
}  # fmt: skip
VERDICT_COLUMNS = {
    "position": "BIGINT", "paper": "VARCHAR", "claim_id": "VARCHAR", "kind": "VARCHAR", "model": "VARCHAR",
    "dataset": "VARCHAR", "split": "VARCHAR", "metric": "VARCHAR", "reported": "DOUBLE", "tolerance": "DOUBLE",
    "status": "VARCHAR", "tier": "VARCHAR", "mean": "DOUBLE", "std": "DOUBLE", "n": "BIGINT", "delta": "DOUBLE",
    "reason": "VARCHAR", "run_ids": "VARCHAR[]", "scale": "VARCHAR", "analysis": "VARCHAR", "low": "DOUBLE",
    "high": "DOUBLE", "p_value": "DOUBLE", "p_holm": "DOUBLE", "excluded": "VARCHAR", "seeds_needed": "BIGINT",
    "machines": "BIGINT", "machine_ids": "VARCHAR[]", "tags": "VARCHAR[]", "premises": "JSON", "plan": "VARCHAR",
    "examples": "JSON", "off_plan": "BIGINT",
}  # fmt: skip
TREND_POINT_COLUMNS = {
    "paper": "VARCHAR", "claim_id": "VARCHAR", "x": "DOUBLE", "y": "DOUBLE", "model": "VARCHAR", "seed": "BIGINT",
    "run_id": "VARCHAR",
}  # fmt: skip
FIGURE_COLUMNS = {"paper": "VARCHAR", "position": "BIGINT", "title": "VARCHAR", "spec": "JSON"}
PAPER_COLUMNS = {"paper": "VARCHAR", "title": "VARCHAR", "link": "VARCHAR"}
TABLES = {
    "runs": RUN_COLUMNS, "metrics": METRIC_COLUMNS, "claims": CLAIM_COLUMNS, "verdicts": VERDICT_COLUMNS,
    "trend_points": TREND_POINT_COLUMNS, "figures": FIGURE_COLUMNS, "papers": PAPER_COLUMNS,
}  # fmt: skip
# where a runs column is in the record's JSON (default: the top-level key of the column's name)
RUN_PATHS = {
    name: f"provenance.{name}" for name in ("git_sha", "git_dirty", "config_hash", "data_hash", "hardware", "versions")
}


@dataclass
class IngestResult:
    """What an ingest did: records copied in, runs in the database afterwards, and per-file errors."""

    added: list[Path] = field(default_factory=list)
    total: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Tables:
    """The derived tables ingest writes beside ``runs`` and ``metrics``: one list of rows each."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    trend_points: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    papers: list[dict[str, Any]] = field(default_factory=list)
    digest: str | None = None  # claims_digest() of the claims judged


@contextlib.contextmanager
def connect_readonly(db_path: Path = DB_PATH) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection; raises HarnessError when there is no database yet."""
    if not db_path.exists():
        raise HarnessError(f"{db_path}: no database yet; create it with `harness ingest`")
    con = _connect(db_path, read_only=True)
    try:
        yield con
    finally:
        con.close()


def _connect(db_path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open the database, waiting (up to ``LOCK_WAIT_S``) while another process holds it: DuckDB lets one process
    write or several read, and an incremental ingest holds the file for the moments of its transaction."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return duckdb.connect(str(db_path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            if time.monotonic() > deadline:
                raise HarnessError(f"{db_path}: still locked by another process after {LOCK_WAIT_S:.0f} s") from exc
            time.sleep(0.02)


def query(sql: str, params: Sequence[Any] = (), db_path: Path = DB_PATH) -> list[dict[str, Any]]:
    """Run one read-only query and return its rows as dicts (the connection is closed before returning)."""
    with connect_readonly(db_path) as con:
        try:
            cursor = con.execute(sql, list(params))
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except duckdb.Error as exc:  # a damaged file (e.g. truncated): its header reads, a table does not
            why = str(exc).splitlines()[0]
            fix = "run `harness ingest --rebuild` to build it again from results/runs/"
            raise UnreadableDatabase(f"{db_path}: cannot read the database ({why}); {fix}") from exc


class UnreadableDatabase(HarnessError):
    """A database file that opens but cannot be read (a damaged file)."""


def store_version(db_path: Path = DB_PATH) -> int | None:
    """The ``STORE_VERSION`` that wrote the database (None when it is not a harness database at all)."""
    try:
        return int(query("SELECT store_version FROM meta", db_path=db_path)[0]["store_version"])
    except (duckdb.Error, UnreadableDatabase, IndexError, TypeError, ValueError):
        return None


def require_current(db_path: Path = DB_PATH) -> None:
    """Raise, saying to run ``harness ingest``, unless the database exists and this version wrote it."""
    found = store_version(db_path)  # raises when there is no file
    if found != STORE_VERSION:
        written = f"store version {found}" if found is not None else "no store version"
        raise HarnessError(
            f"{db_path}: written by another harness version ({written}; this one reads {STORE_VERSION}) and "
            "holds no verdicts table it can read: run `harness ingest` to rebuild it from results/runs/"
        )


def claims_digest() -> str:
    """sha256 over every registered paper's id, title, claims file and budget plan bytes: ingest stores it, so
    ``harness report`` can tell that claims, plans (or titles) changed since (without parsing them)."""
    import hashlib

    from harness import registry

    digest = hashlib.sha256()
    for repro in registry.reproductions().values():
        for path in (repro.claims_path, repro.plan_path):  # a plan judges the budget claims too
            data = path.read_bytes() if path.exists() else b""
            digest.update(f"{repro.id}\0{repro.title}\0".encode() + data + b"\0")
    return digest.hexdigest()


def claims_changed(db_path: Path = DB_PATH) -> bool:
    """Whether the registered papers' claims files differ from those the database's verdicts were judged from."""
    stored = query("SELECT claims_digest FROM meta", db_path=db_path)[0]["claims_digest"]
    return stored != claims_digest()


@contextlib.contextmanager
def writer_lock(db_path: Path = DB_PATH) -> Iterator[None]:
    """Hold the exclusive ``flock`` on ``.<db name>.lock`` beside the database: one writer at a time, so two ingests
    (or runs) at once cannot drop each other's records. The lock goes with the process, however it ends."""
    with file_lock(db_path.with_name(f".{db_path.name}.lock")):
        yield


def _remove_stale_builds(db_path: Path) -> None:
    """Temp folders of killed ingests (``.ingest-*``): stale, since only the holder of the writer lock makes one."""
    for folder in db_path.parent.glob(f"{BUILD_PREFIX}*"):
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _scratch(db_path: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=db_path.parent, prefix=f"{BUILD_PREFIX}{os.getpid()}-") as name:
        yield Path(name)


def _expand(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return found


def _store_external(files: Sequence[Path], runs_dir: Path, result: IngestResult) -> list[Path]:
    """Validate records given by path and copy those from elsewhere into ``runs_dir``; errors are collected.
    Returns the given records' paths in ``runs_dir``."""
    stored: list[Path] = []
    for path in _expand(files):
        if path.resolve().parent == runs_dir.resolve():
            stored.append(path)  # already in the store: validated when it is loaded
            continue
        try:
            record = read_record(path)
            is_new = not record_path(record.run_id, runs_dir).exists()
            target = write_record(record, runs_dir)
        except HarnessError as exc:
            result.errors.append(str(exc))
            continue
        stored.append(target)
        if is_new:
            result.added.append(target)
    return stored


def _parse_files(paths: Sequence[Path], out: Path) -> tuple[list[tuple[str, Key]], list[str]]:
    """Validate record files and write each valid one's normalised JSON as one line of ``out``. Returns the
    (file path, (paper, dataset, split)) of each line, and the errors of the others."""
    lines: list[tuple[str, Key]] = []
    errors: list[str] = []
    with out.open("w", encoding="utf-8") as handle:
        for path in paths:
            try:
                record = read_record(path)
            except HarnessError as exc:
                errors.append(str(exc))
                continue
            if path.stem != record.run_id:
                errors.append(f"{path}: field 'run_id': {record.run_id!r} does not match the file name")
                continue
            handle.write(record.model_dump_json(by_alias=True) + "\n")
            lines.append((str(path), (record.paper, record.dataset, record.split)))
    return lines, errors


def _parse_all(paths: Sequence[Path], tmp: Path, result: IngestResult) -> list[Batch]:
    """:func:`_parse_files` over ``paths``, split over the CPUs when there are many (pydantic holds the GIL)."""
    workers = min(os.cpu_count() or 1, 8) if len(paths) >= PARALLEL_FROM else 1
    outs = [tmp / f"records-{i}.ndjson" for i in range(workers)]
    if workers == 1:
        done = [_parse_files(paths, outs[0])]
    else:
        done = _parse_in_processes([paths[i::workers] for i in range(workers)], outs)
    batches = []
    for out, (lines, errors) in zip(outs, done, strict=True):
        result.errors.extend(errors)
        batches.append(Batch(out, lines))
    return batches


def _parse_in_processes(chunks: list[Sequence[Path]], outs: list[Path]) -> list[tuple[list, list[str]]]:
    """Run :func:`_parse_files` on each chunk in its own ``python -m harness.store`` process. Plain subprocesses,
    not a multiprocessing pool: they inherit neither the writer lock nor the caller's ``__main__``, and one whose
    ingest was killed finishes its chunk and exits."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    procs = []
    for chunk, out in zip(chunks, outs, strict=True):
        listing = out.with_suffix(".paths.json")
        listing.write_text(json.dumps([str(path) for path in chunk]), encoding="utf-8")
        command = [sys.executable, "-m", "harness.store", str(listing), str(out)]
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    done = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            raise HarnessError(f"a record-validating process failed: {stderr.decode(errors='replace').strip()}")
        lines, errors = json.loads(stdout)
        done.append(([(path, tuple(key)) for path, key in lines], errors))
    return done


@dataclass
class Batch:
    """One NDJSON file of validated records, and the file and (paper, dataset, split) of each of its lines."""

    ndjson: Path
    lines: list[tuple[str, Key]]


def _record_shape() -> str:
    """The ``json_transform`` structure that takes every ``runs`` column (and ``metrics``) out of a record's JSON in
    one parse; timestamps are read as text and cast after."""
    shape: dict[str, Any] = {"metrics": "MAP(VARCHAR, DOUBLE)"}
    for name, kind in RUN_COLUMNS.items():
        if name == "record":
            continue
        dotted.assign(shape, RUN_PATHS.get(name, name), "VARCHAR" if kind == "TIMESTAMP" else kind, create=True)
    return json.dumps(shape)


def _column_sql(name: str, kind: str) -> str:
    """The SQL that takes column ``name`` of ``runs`` out of ``t``, the record's transformed JSON (``r``: as it is)."""
    if name == "record":
        return "r"
    expr = "t." + ".".join(f'"{part}"' for part in dotted.parts(RUN_PATHS.get(name, name)))
    if kind == "JSON":
        return f"nullif({expr}, 'null')"
    return f"{expr}::TIMESTAMP" if kind == "TIMESTAMP" else expr


def _insert_records(con: duckdb.DuckDBPyConnection, files: Sequence[Path]) -> None:
    """Insert the records of NDJSON ``files`` into ``runs`` and ``metrics``: DuckDB parses each line once."""
    source = (
        "SELECT json AS r FROM read_json(?, format='newline_delimited', records=false, columns={json: 'JSON'}, "
        f"maximum_object_size={MAX_OBJECT_BYTES})"
    )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE staged AS SELECT r, json_transform_strict(r, ?) AS t FROM ({source})",
        [_record_shape(), [str(path) for path in files]],
    )
    columns = ", ".join(_column_sql(name, kind) for name, kind in RUN_COLUMNS.items())
    con.execute(f"INSERT INTO runs SELECT {columns} FROM staged")
    con.execute(
        "INSERT INTO metrics SELECT t.run_id, unnest(map_keys(t.metrics)), unnest(map_values(t.metrics)) FROM staged"
    )
    con.execute("DROP TABLE staged")


def _refused(batches: Sequence[Batch], tmp: Path) -> dict[str, str]:
    """The record files whose lines the database refuses, each with the reason, found by halving the lines in a
    scratch database: what validation let through but the store cannot hold is named, and the rest still goes in."""
    pairs = []
    for batch in batches:
        lines = batch.ndjson.read_text(encoding="utf-8").splitlines(keepends=True)
        pairs += [(path, line) for (path, _), line in zip(batch.lines, lines, strict=True)]
    refused: dict[str, str] = {}
    _halve(pairs, tmp, refused)
    return refused


def _halve(pairs: list[tuple[str, str]], tmp: Path, refused: dict[str, str]) -> None:
    error = _try_lines([line for _, line in pairs], tmp)
    if error is None:
        return
    if len(pairs) == 1:
        refused[pairs[0][0]] = error
        return
    _halve(pairs[: len(pairs) // 2], tmp, refused)
    _halve(pairs[len(pairs) // 2 :], tmp, refused)


def _try_lines(lines: list[str], tmp: Path) -> str | None:
    """The first line of DuckDB's error when inserting these record lines into an empty database, else None."""
    trial = tmp / "trial.ndjson"
    trial.write_text("".join(lines), encoding="utf-8")
    con = duckdb.connect()
    try:
        _create_tables(con)
        _insert_records(con, [trial])
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    finally:
        con.close()
    return None


def _create_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name, columns in TABLES.items():
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{col} {kind}' for col, kind in columns.items())})")
    con.execute("CREATE TABLE meta (store_version BIGINT, claims_digest VARCHAR)")


def _insert_rows(con: duckdb.DuckDBPyConnection, name: str, rows: Sequence[dict[str, Any]], tmp: Path) -> None:
    """Bulk-insert ``rows`` (dicts) into table ``name`` through an NDJSON file (far faster than row by row)."""
    if not rows:
        return
    columns = TABLES[name]
    ndjson = tmp / f"{name}.ndjson"
    with ndjson.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({col: row.get(col) for col in columns}) + "\n")
    spec = ", ".join(f"{col}: '{'VARCHAR' if kind == 'JSON' else kind}'" for col, kind in columns.items())
    con.execute(
        f"INSERT INTO {name} SELECT * FROM read_json(?, format='newline_delimited', columns={{{spec}}})", [str(ndjson)]
    )


def _records(con: duckdb.DuckDBPyConnection, where: str, params: Sequence[Any]) -> list[RunRecord]:
    """The stored records matching ``where``, in run id order (the order a rebuild from the files judged in)."""
    rows = con.execute(f"SELECT record FROM runs WHERE {where} ORDER BY run_id", list(params)).fetchall()
    return [RunRecord.model_validate_json(text) for (text,) in rows]


def _judge(
    con: duckdb.DuckDBPyConnection, claims: Sequence[Claim], chosen: Sequence[int], tmp: Path, results_dir: Path
) -> None:
    """Judge ``claims[i]`` for each ``i`` in ``chosen`` over the stored records, under their papers' budget plans;
    replace their verdicts and trend points. Claims on the same data share one read of their records. A paper's
    delta and trend claims are judged together (Holm's correction is over all of a paper's budget verdicts)."""
    from harness.verdicts import holm, judge, trend_points

    papers = {claims[i].paper for i in chosen}
    chosen = sorted({*chosen, *(i for i, c in enumerate(claims) if c.paper in papers and c.kind in FAMILY)})
    plans = _plans(papers)
    groups: dict[tuple[tuple[str, ...], str, str], list[int]] = {}
    for i in chosen:
        claim = claims[i]
        papers = tuple(dict.fromkeys([claim.paper, claim.baseline_paper]))
        groups.setdefault((papers, claim.dataset, claim.split), []).append(i)
    verdicts, points = [], []
    for (papers, dataset, split), positions in groups.items():
        where = f"paper IN ({', '.join('?' * len(papers))}) AND dataset = ? AND split = ?"
        records = _records(con, where, [*papers, dataset, split])
        by_id = {record.run_id: record for record in records}
        for i in positions:
            verdict = judge(claims[i], records, plans.get(claims[i].paper), results_dir)
            verdicts.append((i, verdict))
            if claims[i].kind == "trend":
                matched = trend_points(claims[i], [by_id[run_id] for run_id in verdict.run_ids])
                points += [{"paper": claims[i].paper, "claim_id": claims[i].id, **point} for point in matched]
    for paper in papers:
        holm([verdict for _, verdict in verdicts if verdict.paper == paper])
    verdicts = [{"position": i, **verdict.row()} for i, verdict in sorted(verdicts, key=lambda item: item[0])]
    _replace(con, "verdicts", [(claims[i].paper, claims[i].id) for i in chosen], verdicts, tmp)
    _replace(con, "trend_points", [(claims[i].paper, claims[i].id) for i in chosen], points, tmp)


def _plans(papers: set[str]) -> dict[str, Any]:
    """The committed budget plan of each paper that has one; a broken plan is a warning naming its file, and that
    paper's budget claims are judged without a plan (off-plan: shown, never judged)."""
    from harness import registry
    from harness.plans import paper_plan

    found, registered = {}, registry.reproductions()
    for paper in sorted(papers & set(registered)):
        try:
            plan = paper_plan(registered[paper])
        except HarnessError as exc:
            print(f"harness: warning: {exc}; its budget claims are judged off-plan", file=sys.stderr)
            continue
        if plan is not None:
            found[paper] = plan
    return found


def _replace(con: duckdb.DuckDBPyConnection, table: str, keys: list[tuple[str, str]], rows: list[dict], tmp: Path):
    """Delete the rows of ``table`` for the (paper, claim_id) ``keys`` and insert ``rows``."""
    if keys:
        papers, ids = [list(column) for column in zip(*keys, strict=True)]
        con.execute(
            f"DELETE FROM {table} WHERE EXISTS (SELECT 1 FROM (SELECT unnest(?::VARCHAR[]) AS p, "
            "unnest(?::VARCHAR[]) AS c) WHERE p = paper AND c = claim_id)",
            [papers, ids],
        )
    _insert_rows(con, table, rows, tmp)


def _draw_figures(con: duckdb.DuckDBPyConnection, papers: set[str] | None, tmp: Path, result: IngestResult) -> None:
    """Redraw the figures of ``papers`` (None: every registered paper) over their stored records. A figures
    function that fails is reported as an error; the rest of the database is still written."""
    from harness import registry

    rows: list[dict[str, Any]] = []
    for repro in registry.reproductions().values():
        if repro.figures is None or (papers is not None and repro.id not in papers):
            continue
        con.execute("DELETE FROM figures WHERE paper = ?", [repro.id])
        mine = con.execute("SELECT record FROM runs WHERE paper = ? ORDER BY run_id", [repro.id]).fetchall()
        if not mine:
            continue
        try:
            drawn = list(registry.load_object(repro.figures)([json.loads(text) for (text,) in mine]))
        except Exception as exc:  # plugin code: name it, keep the verdicts
            result.errors.append(f"paper {repro.id!r}: its figures function {repro.figures!r} failed: {exc}")
            continue
        rows += [{"paper": repro.id, "position": i, "title": t, "spec": spec} for i, (t, spec) in enumerate(drawn)]
    _insert_rows(con, "figures", rows, tmp)


def _write_claims(con: duckdb.DuckDBPyConnection, claims: Sequence[Claim], tmp: Path) -> None:
    """Replace the ``claims`` and ``papers`` tables and the stored claims digest."""
    from harness import registry
    from harness.claims import claim_row

    con.execute("DELETE FROM claims; DELETE FROM papers")
    _insert_rows(con, "claims", [claim_row(c) for c in claims], tmp)
    papers = [{"paper": r.id, "title": r.title, "link": r.link} for r in registry.reproductions().values()]
    _insert_rows(con, "papers", papers, tmp)
    con.execute("DELETE FROM meta")
    con.execute("INSERT INTO meta VALUES (?, ?)", [STORE_VERSION, claims_digest()])


def _load(con: duckdb.DuckDBPyConnection, batches: Sequence[Batch], tmp: Path, refused: dict[str, str]) -> set[Key]:
    """Insert validated records; returns their (paper, dataset, split). When the database refuses some, they are
    added to ``refused`` and :class:`Refused` raised: the caller starts again without them."""
    try:
        _insert_records(con, [batch.ndjson for batch in batches])
    except duckdb.Error:
        found = _refused(batches, tmp)
        if not found:
            raise  # not one record's fault (e.g. the disk is full)
        refused.update(found)
        raise Refused from None
    return {key for batch in batches for _, key in batch.lines}


class Refused(Exception):
    """The database refused records (now in ``refused``): the write is void and is done again without them."""


def _rebuild(claims: Sequence[Claim], runs_dir: Path, db_path: Path, refused: dict[str, str], result: IngestResult):
    """Build the whole database from ``runs_dir`` in a temp file and rename it into place (first ingest, a new
    ``STORE_VERSION``, or ``rebuild``): a reader never sees half a database, a crash leaves the old one."""
    names = sorted(os.listdir(runs_dir)) if runs_dir.is_dir() else []  # strings: sorting 10^5 Paths takes seconds
    paths = [runs_dir / name for name in names if name.endswith(".json") and str(runs_dir / name) not in refused]
    with _scratch(db_path) as tmp:
        batches = _parse_all(paths, tmp, result)
        tmp_db = tmp / "harness.duckdb"
        con = duckdb.connect(str(tmp_db))
        try:
            _create_tables(con)
            _load(con, batches, tmp, refused)
            _write_claims(con, claims, tmp)
            _judge(con, claims, range(len(claims)), tmp, runs_dir.parent)
            _draw_figures(con, None, tmp, result)
            result.total = con.execute("SELECT count(*) FROM runs").fetchone()[0]
            con.execute("CHECKPOINT")
        finally:
            con.close()
        _swap_in(tmp_db, db_path)


def _swap_in(tmp_db: Path, db_path: Path) -> None:
    with open(tmp_db, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp_db, db_path)


def build_database(records: Sequence[RunRecord], tables: Tables, db_path: Path = DB_PATH) -> None:
    """Write a database of ``records`` and derived ``tables`` judged elsewhere (e.g. a test's) and rename it into
    place."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with _scratch(db_path) as tmp:
        lines = tmp / "records.ndjson"
        lines.write_text("".join(r.model_dump_json(by_alias=True) + "\n" for r in records), encoding="utf-8")
        con = duckdb.connect(str(tmp / "harness.duckdb"))
        try:
            _create_tables(con)
            _insert_records(con, [lines])
            for name in ("claims", "verdicts", "trend_points", "figures", "papers"):
                _insert_rows(con, name, getattr(tables, name), tmp)
            con.execute("INSERT INTO meta VALUES (?, ?)", [STORE_VERSION, tables.digest])
            con.execute("CHECKPOINT")
        finally:
            con.close()
        _swap_in(tmp / "harness.duckdb", db_path)


def _pending(runs_dir: Path, db_path: Path, given: list[Path] | None) -> tuple[list[Path], list[str]]:
    """The record files to load and the run ids to drop: the ``given`` files not yet stored, or (``given`` None)
    ``runs_dir``'s file names compared with the stored run ids (no record is read for that)."""
    with connect_readonly(db_path) as con:
        if given is not None:
            ids = [path.stem for path in given]
            found = con.execute("SELECT run_id FROM runs WHERE list_contains(?, run_id)", [ids]).fetchall()
            stored = {run_id for (run_id,) in found}
            return [path for path in dict.fromkeys(given) if path.stem not in stored], []
        stored = {run_id for (run_id,) in con.execute("SELECT run_id FROM runs").fetchall()}
    names = os.listdir(runs_dir) if runs_dir.is_dir() else []
    on_disk = {name[:-5]: runs_dir / name for name in names if name.endswith(".json")}
    new = sorted(run_id for run_id in on_disk if run_id not in stored)
    return [on_disk[run_id] for run_id in new], sorted(stored - on_disk.keys())


def _drop(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> set[Key]:
    """Delete the runs whose record files left ``runs_dir``; returns their (paper, dataset, split)."""
    if not run_ids:
        return set()
    con.execute("CREATE TEMP TABLE gone AS SELECT unnest(?::VARCHAR[]) AS run_id", [run_ids])
    keys = con.execute("SELECT DISTINCT paper, dataset, split FROM runs WHERE run_id IN (SELECT run_id FROM gone)")
    touched = {tuple(row) for row in keys.fetchall()}
    con.execute("DELETE FROM metrics WHERE run_id IN (SELECT run_id FROM gone)")
    con.execute("DELETE FROM runs WHERE run_id IN (SELECT run_id FROM gone)")
    return touched


@dataclass
class LazyClaims:
    """The registered claims, parsed on first use: parsing every claims file is the slowest part of a small ingest,
    and an ingest that touches no claim's data (with the claims files unchanged) needs none of them."""

    parsed: list[Claim] | None = None

    def get(self) -> list[Claim]:
        if self.parsed is None:
            from harness.claims import registered_claims

            self.parsed = registered_claims()
        return self.parsed


def _update(
    claims: LazyClaims, runs_dir: Path, db_path: Path, given: list[Path] | None, refused: dict[str, str],
    result: IngestResult,
) -> None:  # fmt: skip
    """Bring the database up to date in one transaction: add the new records, drop the vanished ones, and judge
    again only the claims on the data they touch (every claim when the claims files changed). A crash before the
    commit leaves the database as it was; readers wait for the commit (:func:`connect_readonly`)."""
    paths, gone = _pending(runs_dir, db_path, given)
    with _scratch(db_path) as tmp:
        batches = _parse_all([p for p in paths if str(p) not in refused], tmp, result)
        con = _connect(db_path, read_only=False)
        try:
            con.execute("BEGIN TRANSACTION")
            touched = _drop(con, gone) | _load(con, batches, tmp, refused)
            if con.execute("SELECT claims_digest FROM meta").fetchone()[0] != claims_digest():
                con.execute("DELETE FROM verdicts; DELETE FROM trend_points")  # claims may have gone or moved
                _write_claims(con, claims.get(), tmp)
                chosen, papers = list(range(len(claims.get()))), None
            else:
                chosen, papers = _touched_claims(con, touched), {paper for paper, _, _ in touched}
            if chosen:
                _judge(con, claims.get(), chosen, tmp, runs_dir.parent)
            _draw_figures(con, papers, tmp, result)
            result.total = con.execute("SELECT count(*) FROM runs").fetchone()[0]
            con.execute("COMMIT")
        finally:
            con.close()  # without the commit, DuckDB rolls the transaction back


def _touched_claims(con: duckdb.DuckDBPyConnection, touched: set[Key]) -> list[int]:
    """The positions of the stored claims whose records (or baseline's) may be among the (paper, dataset, split)
    ``touched``: read from the ``claims`` table, so that no claims file is parsed when there are none."""
    if not touched:
        return []
    rows = con.execute(
        "SELECT v.position, c.paper, c.baseline_paper, c.dataset, c.split "
        "FROM verdicts v JOIN claims c USING (paper, claim_id) ORDER BY v.position"
    ).fetchall()
    return [
        position
        for position, paper, baseline_paper, dataset, split in rows
        if (paper, dataset, split) in touched or (baseline_paper, dataset, split) in touched
    ]


def _judged_current(db_path: Path) -> bool:
    """Whether the database exists, is of this ``STORE_VERSION`` and was judged from the claims files as they are."""
    try:
        return store_version(db_path) == STORE_VERSION and not claims_changed(db_path)
    except (HarnessError, duckdb.Error):
        return False


def ingest(
    files: Sequence[Path] = (), runs_dir: Path = RUNS_DIR, db_path: Path = DB_PATH, rebuild: bool = False
) -> IngestResult:
    """Store the given records, then bring the database up to date. With ``files``, those records are added;
    without, ``runs_dir``'s file names are compared with the stored run ids (new records added, vanished ones
    dropped). Only the claims on the data that changed are judged again, only the figures of papers whose records
    changed drawn again. The first ingest, one after a ``STORE_VERSION`` change, or ``rebuild`` builds the whole
    database afresh. Writers take turns (:func:`writer_lock`); a record the database refuses is named, the others
    go in."""
    claims = LazyClaims()
    if not _judged_current(db_path):
        claims.get()  # a broken claims file stops here, before anything is touched
    with writer_lock(db_path):
        _remove_stale_builds(db_path)
        stored = IngestResult()
        given = _store_external(files, runs_dir, stored) if files else None
        refused: dict[str, str] = {}
        while True:
            result = IngestResult(added=stored.added, errors=list(stored.errors))
            try:
                if rebuild or not db_path.exists() or store_version(db_path) != STORE_VERSION:
                    _rebuild(claims.get(), runs_dir, db_path, refused, result)
                else:
                    _update(claims, runs_dir, db_path, given, refused, result)
                break
            except Refused:
                continue  # again, without the records now in ``refused``
            # a full disk, a read-only folder: void (DuckDB raises FatalException when a checkpoint cannot be written)
            except (OSError, duckdb.IOException, duckdb.TransactionException, duckdb.FatalException) as exc:
                raise _unwritable(db_path, runs_dir, exc) from exc
    result.errors += [f"{path}: the database cannot hold this record: {why}" for path, why in refused.items()]
    return result


def _unwritable(db_path: Path, runs_dir: Path, exc: Exception) -> HarnessError:
    """The one-line error of an ingest whose write failed (a full disk, a read-only folder)."""
    why = getattr(exc, "strerror", None) or str(exc).splitlines()[0]
    kept = f"the database is as it was and the records stay in {runs_dir}/; once fixed, run `harness ingest`"
    kept += " (with --rebuild if the database file is damaged)"
    return HarnessError(f"{db_path}: cannot write the database: {why}; {kept}")


if __name__ == "__main__":  # a validating worker of _parse_in_processes: paths (JSON list) in, NDJSON out
    _lines, _errors = _parse_files([Path(p) for p in json.loads(Path(sys.argv[1]).read_text())], Path(sys.argv[2]))
    json.dump([_lines, _errors], sys.stdout)
