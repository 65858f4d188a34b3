"""Published record sets: the run records behind a paper's verdicts, shipped in the repository.

A set lies in ``reproductions/<paper>/records/<name>/``:

- ``runs/<run_id>.json``: the run records, byte for byte as the runs wrote them (records are immutable);
- ``blobs/<sha256>.gz``: the files the records cite (kept predictions and references, training curves, tokenizers),
  gzip-compressed and named by the SHA-256 of their uncompressed content, so a file two runs share is stored once;
- ``manifest.json`` (schema ``harness.recordset/1``): per run its record's SHA-256, its tag in the paper's plan
  (``pilot``, ``abandoned``: kept, never evidence) and where each cited file goes under ``results/``; the machines
  and commits the runs were made on; and ``set_sha256``, the hash of all of that.

:func:`install` checks every hash before it writes anything, then copies the records into ``results/runs/`` and the
files to where the records name them, so the harness reads them as it reads its own runs (ingest, ``harness
rescore``, the per-example evidence, the leaderboard's curves). A set whose files do not match its manifest is
refused with the file at fault, and nothing of it is installed; an installed file that already exists with other
content is never overwritten. :func:`publish` makes or extends a set from ``results/``: a run once published stays
(pilots and abandoned runs included). Records made elsewhere (a user's cluster) join the same way, as a set of their
own.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.records import (
    RUN_ID_PATTERN,
    RUNS_DIR,
    RunRecord,
    atomic_write_bytes,
    atomic_write_text,
    canonical_hash,
    machine_key,
    read_record,
    record_path,
    write_record,
)

SCHEMA = "harness.recordset/1"
RECORDS_DIR = "records"  # under a paper's folder: one subfolder per set
MANIFEST = "manifest.json"
MAX_BLOB_BYTES = 8 << 20  # a cited file larger than this (a checkpoint) is not published
KEPT = ("predictions", "references")  # the files a record's verdict evidence is re-scored from: never left out
SKIPPED_SUFFIXES = (".ckpt", ".pt", ".pth", ".safetensors")  # weights are re-made by `harness verify`, not shipped


@dataclass
class RecordSet:
    """One published set: where it lies and its manifest."""

    path: Path
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def paper(self) -> str:
        return self.manifest["paper"]

    @property
    def digest(self) -> str:
        return self.manifest["set_sha256"]

    @property
    def label(self) -> str:
        """How the set is named where its records are shown: ``published <paper>/<name> (<hash12>)``."""
        return f"published {self.paper}/{self.name} ({self.digest[:12]})"

    def run_ids(self) -> list[str]:
        return [run["run_id"] for run in self.manifest["runs"]]


@dataclass
class Installed:
    """What :func:`install_all` did: the record files now in ``results/runs/`` per set, and the sets refused."""

    records: list[Path] = field(default_factory=list)
    added: int = 0
    sets: list[RecordSet] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str | None:
        """One line for standard error: how many records from which sets (None when none was installed)."""
        if not self.sets:
            return None
        names = ", ".join(s.label for s in self.sets)
        return f"published: {len(self.records)} record(s) ({self.added} new) from {names}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: the same content gives the same bytes


def set_digest(manifest: dict[str, Any]) -> str:
    """The hash that names a set: of its manifest without ``set_sha256`` (which covers every record and file)."""
    return canonical_hash({key: value for key, value in manifest.items() if key != "set_sha256"})


def sets_folder(repro: Any) -> Path:
    return repro.root / RECORDS_DIR


def paper_sets(repro: Any) -> list[RecordSet]:
    """The paper's published sets, in name order; a set whose manifest cannot be read is an error naming it."""
    folder = sets_folder(repro)
    if not folder.is_dir():
        return []
    return [read_set(path.parent) for path in sorted(folder.glob(f"*/{MANIFEST}"))]


def read_set(folder: Path) -> RecordSet:
    """Read and check a set's manifest (not yet its files: :func:`check_set`)."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the record set's manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
        raise HarnessError(f"{path}: field 'schema': a record set's manifest has schema {SCHEMA!r}")
    for key in ("paper", "name", "runs", "set_sha256"):
        if key not in manifest:
            raise HarnessError(f"{path}: field {key!r} is missing")
    if set_digest(manifest) != manifest["set_sha256"]:
        raise HarnessError(
            f"{path}: field 'set_sha256': the manifest was edited after it was made (its hash is "
            f"{set_digest(manifest)[:12]}, it says {str(manifest['set_sha256'])[:12]})"
        )
    return RecordSet(folder, manifest)


def _blob_path(folder: Path, digest: str) -> Path:
    return folder / "blobs" / f"{digest}.gz"


def _read_blob(folder: Path, digest: str) -> bytes:
    path = _blob_path(folder, digest)
    try:
        data = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise HarnessError(f"{path}: cannot read the published file: {exc}") from None
    if _sha256(data) != digest:
        raise HarnessError(f"{path}: its content does not match its name (SHA-256 {_sha256(data)[:12]})")
    return data


def check_set(record_set: RecordSet) -> dict[str, tuple[RunRecord, dict[str, bytes]]]:
    """Every record and file of the set checked against the manifest: run id -> (record, results path -> bytes).
    The first mismatch is an error naming the file; nothing is written."""
    checked: dict[str, tuple[RunRecord, dict[str, bytes]]] = {}
    for entry in record_set.manifest["runs"]:
        run_id = entry["run_id"]
        path = record_set.path / "runs" / f"{run_id}.json"
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise HarnessError(f"{path}: the published record is missing: {exc.strerror or exc}") from None
        if _sha256(data) != entry["sha256"]:
            raise HarnessError(f"{path}: the record does not match the manifest's SHA-256 (it was changed)")
        record = read_record(path)
        files = {target: _read_blob(record_set.path, digest) for target, digest in entry.get("files", {}).items()}
        checked[run_id] = (record, files)
    return checked


def _roots(results_dir: Path) -> tuple[str, str]:
    """Where a set may write: ``results/``, and the working folder's ``data/`` (a record whose references are a
    dataset folder the harness built, e.g. a Debian corpus, names it there). Lexical paths: a symlinked data/
    folder stays the user's."""
    return os.path.normpath(results_dir.absolute()), os.path.normpath(results_dir.absolute().parent / "data")


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


def _relative(path: Path, results_dir: Path) -> str:
    """``path`` as a manifest names it: relative to ``results_dir`` (``../data/...`` for a dataset's file)."""
    return os.path.relpath(os.path.normpath(path.absolute()), _roots(results_dir)[0])


def _safe_target(results_dir: Path, target: str, where: Path) -> Path:
    """``results_dir / target`` for a manifest path that stays inside ``results_dir`` (or the working ``data/``)."""
    path = os.path.normpath((results_dir / target).absolute())
    if Path(target).is_absolute() or not _inside(path, _roots(results_dir)):
        raise HarnessError(f"{where}: the file {target!r} would be written outside {results_dir} and data/")
    return results_dir / target


def install(record_set: RecordSet, runs_dir: Path = RUNS_DIR) -> tuple[list[Path], int]:
    """Install one set (checked first, whole): its files where its records name them under ``runs_dir``'s parent,
    its records into ``runs_dir``. Returns the record paths and how many were new."""
    checked = check_set(record_set)
    results_dir = runs_dir.parent
    manifest = record_set.path / MANIFEST
    for _, files in checked.values():  # every conflict found before anything is written
        for target, data in files.items():
            path = _safe_target(results_dir, target, manifest)
            if path.exists() and _sha256(path.read_bytes()) != _sha256(data):
                raise HarnessError(f"{path}: exists with other content than the published {manifest}'s; left as it is")
    paths, added = [], 0
    for record, files in checked.values():
        for target, data in files.items():
            path = results_dir / target
            if not path.exists():
                try:
                    atomic_write_bytes(path, data)
                except FileExistsError:
                    pass  # another installer wrote the same content
        added += not record_path(record.run_id, runs_dir).exists()
        paths.append(write_record(record, runs_dir))
    return paths, added


def install_all(repros: Iterable[Any], runs_dir: Path = RUNS_DIR) -> Installed:
    """Install every set of the given papers; a refused set is reported and the others go on."""
    done = Installed()
    for repro in repros:
        try:
            sets = paper_sets(repro)
        except HarnessError as exc:
            done.errors.append(str(exc))
            continue
        for record_set in sets:
            try:
                paths, added = install(record_set, runs_dir)
            except HarnessError as exc:
                done.errors.append(f"{exc} (record set {record_set.path} not installed)")
                continue
            done.records += paths
            done.added += added
            done.sets.append(record_set)
    return done


def labels(sets: Iterable[RecordSet]) -> dict[str, str]:
    """Run id -> the label of the (first) given set that ships it."""
    found: dict[str, str] = {}
    for record_set in sets:
        for run_id in record_set.run_ids():
            found.setdefault(run_id, record_set.label)
    return found


def origins(repros: Iterable[Any]) -> dict[str, str]:
    """Run id -> the label of the published set that ships it (sets that cannot be read are left out)."""
    sets: list[RecordSet] = []
    for repro in repros:
        try:
            sets += paper_sets(repro)
        except HarnessError:
            continue
    return labels(sets)


def _cited_files(record: RunRecord, results_dir: Path) -> dict[str, Path]:
    """The files a record's artifacts name, as paths relative to ``results_dir`` -> where they are now. A name is
    relative to ``results_dir`` (``artifacts/...``) or to the working folder (``results/lightning/...``); a kept
    artifact that is a folder (references that are a dataset's files) gives every file in it. Kept files are never
    left out; other files larger than MAX_BLOB_BYTES (and weights) are."""
    cited: dict[str, Path] = {}
    roots = _roots(results_dir)
    for key, value in record.artifacts.items():
        if not isinstance(value, str) or value.endswith(SKIPPED_SUFFIXES):
            continue
        for path in (results_dir / value, Path(value)):
            where = os.path.normpath(path.absolute())
            if not path.exists() or not _inside(where, roots):
                continue
            found = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() and key in KEPT else [path]
            for file in found:
                if file.is_file() and (key in KEPT or file.stat().st_size <= MAX_BLOB_BYTES):
                    cited[_relative(file, results_dir)] = file
            break
    return cited


def _kept_missing(record: RunRecord, results_dir: Path, cited: dict[str, Path]) -> str | None:
    """The first kept artifact (predictions, references) the set would lack."""
    for key, value in record.artifacts.items():
        if key in KEPT:
            path = _relative(results_dir / value, results_dir)
            if not any(name == path or name.startswith(path + os.sep) for name in cited):
                return value
    return None


def publish(
    repro: Any, run_ids: Sequence[str], name: str, runs_dir: Path = RUNS_DIR, description: str | None = None
) -> RecordSet:
    """Make or extend the set ``name`` of the paper with the given runs (and the runs they started from): runs
    already in the set stay, so a set only grows. Returns the set as written."""
    if not re.fullmatch(RUN_ID_PATTERN, name):
        raise HarnessError(f"record set name {name!r}: use lowercase letters, digits, '.', '_' and '-'")
    folder = sets_folder(repro) / name
    old = read_set(folder) if (folder / MANIFEST).exists() else None
    entries = {entry["run_id"]: entry for entry in (old.manifest["runs"] if old else [])}
    wanted = list(dict.fromkeys(run_ids))
    results_dir = runs_dir.parent
    plan_tags = _plan_tags(repro)
    records: dict[Path, bytes] = {}  # everything is checked before anything is written: a refused set stays as it was
    blobs: dict[Path, bytes] = {}
    while wanted:
        run_id = wanted.pop(0)
        if run_id in entries:
            continue
        source = record_path(run_id, runs_dir)
        if not source.exists():
            raise HarnessError(f"{source}: no such run record to publish")
        record = read_record(source)
        if record.paper != repro.id:
            raise HarnessError(f"{source}: run of paper {record.paper!r}, not {repro.id!r}")
        data = source.read_bytes()
        cited = _cited_files(record, results_dir)
        missing = _kept_missing(record, results_dir, cited)
        if missing:
            raise HarnessError(
                f"{source}: its kept {missing!r} is not under {results_dir} or data/: the set would lack it"
            )
        records.setdefault(folder / "runs" / source.name, data)
        files = {}
        for relative, path in cited.items():
            content = path.read_bytes()
            digest = _sha256(content)
            blobs.setdefault(_blob_path(folder, digest), content)
            files[relative] = digest
        entries[run_id] = {
            "run_id": run_id, "sha256": _sha256(data), "model": record.model, "tier": record.tier,
            "seed": record.seed, "machine": machine_key(record.provenance.hardware),
            "commit": record.provenance.git_sha, "git_dirty": record.provenance.git_dirty,
            "tag": plan_tags.get(run_id), "files": dict(sorted(files.items())),
        }  # fmt: skip
        wanted += [parent for parent in record.parents if parent not in entries]
    for path, content in [*records.items(), *((blob, _gzip(content)) for blob, content in blobs.items())]:
        if not path.exists():
            atomic_write_bytes(path, content)
    manifest = {
        "schema": SCHEMA, "paper": repro.id, "name": name,
        "description": description or (old.manifest.get("description") if old else None),
        "machines": sorted({entry["machine"] for entry in entries.values()}),
        "commits": sorted({entry["commit"] for entry in entries.values() if entry["commit"]}),
        "runs": [entries[run_id] for run_id in sorted(entries)],
    }  # fmt: skip
    manifest["set_sha256"] = set_digest(manifest)
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n", overwrite=True)
    return RecordSet(folder, manifest)


def _plan_tags(repro: Any) -> dict[str, str]:
    from harness.plans import paper_plan

    plan = paper_plan(repro)
    return {tag.run: tag.tag for tag in plan.tags} if plan else {}
