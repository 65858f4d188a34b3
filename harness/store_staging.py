"""Staging records for the store: record files validated (in several processes when there are many) into NDJSON
batches DuckDB inserts in one parse, records from elsewhere copied into ``results/runs/``, and the records the
database refuses anyway found by halving a batch, so each is named and the others still go in (harness.store).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from harness.errors import HarnessError
from harness.records import read_record, record_path, write_record
from harness.store_tables import Key, create_tables, insert_records

BUILD_PREFIX = ".ingest-"  # the temp folders of an ingest, beside the database

PARALLEL_FROM = 5000  # records validated in several processes from this many on


@dataclass
class IngestResult:
    """What an ingest did: records copied in, runs in the database afterwards, and per-file errors."""

    added: list[Path] = field(default_factory=list)
    total: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Batch:
    """One NDJSON file of validated records, and the file and (paper, dataset, split) of each of its lines."""

    ndjson: Path
    lines: list[tuple[str, Key]]


def remove_stale_builds(db_path: Path) -> None:
    """Temp folders of killed ingests (``.ingest-*``): stale, since only the holder of the writer lock makes one."""
    for folder in db_path.parent.glob(f"{BUILD_PREFIX}*"):
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def scratch(db_path: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=db_path.parent, prefix=f"{BUILD_PREFIX}{os.getpid()}-") as name:
        yield Path(name)


def _expand(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return found


def store_external(files: Sequence[Path], runs_dir: Path, result: IngestResult) -> list[Path]:
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


def parse_files(paths: Sequence[Path], out: Path) -> tuple[list[tuple[str, Key]], list[str]]:
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


def parse_all(paths: Sequence[Path], tmp: Path, result: IngestResult) -> list[Batch]:
    """:func:`parse_files` over ``paths``, split over the CPUs when there are many (pydantic holds the GIL)."""
    workers = min(os.cpu_count() or 1, 8) if len(paths) >= PARALLEL_FROM else 1
    outs = [tmp / f"records-{i}.ndjson" for i in range(workers)]
    if workers == 1:
        done = [parse_files(paths, outs[0])]
    else:
        done = _parse_in_processes([paths[i::workers] for i in range(workers)], outs)
    batches = []
    for out, (lines, errors) in zip(outs, done, strict=True):
        result.errors.extend(errors)
        batches.append(Batch(out, lines))
    return batches


def _parse_in_processes(chunks: list[Sequence[Path]], outs: list[Path]) -> list[tuple[list, list[str]]]:
    """Run :func:`parse_files` on each chunk in its own ``python -m harness.store_staging`` process. Plain subprocesses,
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
        command = [sys.executable, "-m", "harness.store_staging", str(listing), str(out)]
        procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    done = []
    for proc in procs:
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            raise HarnessError(f"a record-validating process failed: {stderr.decode(errors='replace').strip()}")
        lines, errors = json.loads(stdout)
        done.append(([(path, tuple(key)) for path, key in lines], errors))
    return done


def refused_records(batches: Sequence[Batch], tmp: Path) -> dict[str, str]:
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
        create_tables(con)
        insert_records(con, [trial])
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    finally:
        con.close()
    return None


if __name__ == "__main__":  # a validating worker of _parse_in_processes: paths (JSON list) in, NDJSON out
    _lines, _errors = parse_files([Path(p) for p in json.loads(Path(sys.argv[1]).read_text())], Path(sys.argv[2]))
    json.dump([_lines, _errors], sys.stdout)
