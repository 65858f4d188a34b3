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

This module is the ingest (the incremental update, the rebuild and its swap into place); the rest lies beside it, one
job each: harness.store_tables (the columns, ``STORE_VERSION``, the bulk inserts), harness.store_access (connections,
queries, the version and claims checks, the writers' lock), harness.store_staging (validating records into NDJSON,
in subprocesses when there are many, and finding those the database refuses) and harness.store_judging (verdicts,
trend points, the claims and papers tables, figures).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from harness.claims import Claim
from harness.errors import HarnessError
from harness.records import RUNS_DIR, RunRecord
from harness.store_access import (
    DB_PATH,
    claims_changed,
    claims_digest,
    connect,
    connect_readonly,
    query,
    require_current,
    store_version,
    writer_lock,
)
from harness.store_judging import LazyClaims, draw_figures, judge_claims, touched_claims, write_claims
from harness.store_staging import (
    Batch,
    IngestResult,
    parse_all,
    refused_records,
    remove_stale_builds,
    scratch,
    store_external,
)
from harness.store_tables import STORE_VERSION, TABLES, Key, create_tables, insert_records, insert_rows

__all__ = [  # what readers and tests import from here, besides the ingest (harness.store_access, _tables, _staging)
    "DB_PATH", "STORE_VERSION", "TABLES", "IngestResult", "Tables", "build_database", "claims_changed",
    "connect_readonly", "ingest", "query", "require_current", "store_version",
]  # fmt: skip


@dataclass
class Tables:
    """The derived tables ingest writes beside ``runs`` and ``metrics``: one list of rows each."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    trend_points: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    papers: list[dict[str, Any]] = field(default_factory=list)
    digest: str | None = None  # claims_digest() of the claims judged


def _load(con: duckdb.DuckDBPyConnection, batches: Sequence[Batch], tmp: Path, refused: dict[str, str]) -> set[Key]:
    """Insert validated records; returns their (paper, dataset, split). When the database refuses some, they are
    added to ``refused`` and :class:`Refused` raised: the caller starts again without them."""
    try:
        insert_records(con, [batch.ndjson for batch in batches])
    except duckdb.Error:
        found = refused_records(batches, tmp)
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
    with scratch(db_path) as tmp:
        batches = parse_all(paths, tmp, result)
        tmp_db = tmp / "harness.duckdb"
        con = duckdb.connect(str(tmp_db))
        try:
            create_tables(con)
            _load(con, batches, tmp, refused)
            write_claims(con, claims, tmp)
            judge_claims(con, claims, range(len(claims)), tmp, runs_dir.parent)
            draw_figures(con, None, tmp, result)
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
    with scratch(db_path) as tmp:
        lines = tmp / "records.ndjson"
        lines.write_text("".join(r.model_dump_json(by_alias=True) + "\n" for r in records), encoding="utf-8")
        con = duckdb.connect(str(tmp / "harness.duckdb"))
        try:
            create_tables(con)
            insert_records(con, [lines])
            for name in ("claims", "verdicts", "trend_points", "figures", "papers"):
                insert_rows(con, name, getattr(tables, name), tmp)
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


def _update(
    claims: LazyClaims, runs_dir: Path, db_path: Path, given: list[Path] | None, refused: dict[str, str],
    result: IngestResult,
) -> None:  # fmt: skip
    """Bring the database up to date in one transaction: add the new records, drop the vanished ones, and judge
    again only the claims on the data they touch (every claim when the claims files changed). A crash before the
    commit leaves the database as it was; readers wait for the commit (:func:`connect_readonly`)."""
    paths, gone = _pending(runs_dir, db_path, given)
    with scratch(db_path) as tmp:
        batches = parse_all([p for p in paths if str(p) not in refused], tmp, result)
        con = connect(db_path, read_only=False)
        try:
            con.execute("BEGIN TRANSACTION")
            touched = _drop(con, gone) | _load(con, batches, tmp, refused)
            if con.execute("SELECT claims_digest FROM meta").fetchone()[0] != claims_digest():
                con.execute("DELETE FROM verdicts; DELETE FROM trend_points")  # claims may have gone or moved
                write_claims(con, claims.get(), tmp)
                chosen, papers = list(range(len(claims.get()))), None
            else:
                chosen, papers = touched_claims(con, touched), {paper for paper, _, _ in touched}
            if chosen:
                judge_claims(con, claims.get(), chosen, tmp, runs_dir.parent)
            draw_figures(con, papers, tmp, result)
            result.total = con.execute("SELECT count(*) FROM runs").fetchone()[0]
            con.execute("COMMIT")
        finally:
            con.close()  # without the commit, DuckDB rolls the transaction back


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
        remove_stale_builds(db_path)
        stored = IngestResult()
        given = store_external(files, runs_dir, stored) if files else None
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


def report_ingest(result: IngestResult) -> int:
    """Print an ingest's errors and what the database now holds on standard error; the exit status (1: errors)."""
    for error in result.errors:
        print(f"harness: error: {error}", file=sys.stderr)
    copied = f"; {len(result.added)} record file(s) copied in" if result.added else ""
    print(f"ingested: the database holds {result.total} run(s) of results/runs/{copied}", file=sys.stderr)
    return 1 if result.errors else 0
