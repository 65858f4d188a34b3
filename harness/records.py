"""Run records (schema ``harness.run/1``): one immutable JSON file per evaluated (model, dataset, split).

A record is written atomically (temp file in the same folder, fsync, rename) and never overwritten: writing
the same content under an existing id is a no-op, writing different content is refused. The ``run_id`` is
derived from what determines the result (paper, model, tier, dataset, split, resolved config, seed and
code version), so re-running the same thing finds its record instead of adding a second one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import platform
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

import harness
from harness import dotted
from harness.errors import HarnessError
from harness.tiers import TIERS

SCHEMA = "harness.run/1"
RUNS_DIR = Path("results/runs")
RUN_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
RUN_ID_MAX = 200
# what the store (DuckDB) holds: a seed is a BIGINT; a record is at most this many bytes, far above any record
# written here (configs belong in files named by ``artifacts``, not inline); a bigger file is not read into memory
SEED_RANGE = (-(2**63), 2**63 - 1)
MAX_RECORD_BYTES = 4 << 20
MAX_JSON_DEPTH = 64  # a record's config nests a handful of levels


class Provenance(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    git_sha: str | None
    git_dirty: bool | None
    config_hash: str
    data_hash: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    hardware: dict[str, Any] = Field(default_factory=dict)


class RunRecord(BaseModel):
    """The ``harness.run/1`` schema. ``status`` is ``ok`` unless the run failed or diverged."""

    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="constants")

    schema_: Literal["harness.run/1"] = Field(alias="schema")
    run_id: str = Field(pattern=RUN_ID_PATTERN, max_length=RUN_ID_MAX)
    paper: str = Field(min_length=1)
    model: str = Field(min_length=1)
    tier: Literal[TIERS]
    dataset: str = Field(min_length=1)
    split: str = Field(min_length=1)
    seed: int = Field(ge=SEED_RANGE[0], le=SEED_RANGE[1])
    metrics: dict[str, float]
    started_at: datetime
    finished_at: datetime
    provenance: Provenance
    status: Literal["ok", "failed", "diverged"] = "ok"
    protocol: str | None = None
    config: dict[str, Any] | None = None
    claim_ids: list[str] = Field(default_factory=list)
    artifacts: dict[str, str] = Field(default_factory=dict)
    # the runs whose weights this one started from (a chain's earlier stage, docs/plugins.md); written only when set
    parents: list[Annotated[str, Field(pattern=RUN_ID_PATTERN)]] = Field(default_factory=list)

    @field_validator("metrics")
    @classmethod
    def _finite_unless_failed(cls, metrics: dict[str, float]) -> dict[str, float]:
        for name, value in metrics.items():
            if not isinstance(name, str) or not name:
                raise ValueError("metric names must be non-empty strings")
            if math.isinf(value):
                raise ValueError(f"metric {name!r} is infinite")
        return metrics

    def to_json(self) -> str:
        data = self.model_dump(mode="json", by_alias=True)
        if not data["parents"]:
            del data["parents"]  # a record of a run that builds on none reads as it did before chains
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def canonical_hash(value: Any) -> str:
    """sha256 of the canonical JSON of ``value`` (sorted keys, no whitespace)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def file_sha256(path: Path | str) -> str:
    """sha256 hex digest of one file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_hash(root: Path, names: Sequence[str]) -> str:
    """sha256 of the ``sha256sum``-style manifest of ``root/<name>`` files, in the order given (a data hash)."""
    manifest = "".join(f"{file_sha256(Path(root) / name)}  {name}\n" for name in names)
    return hashlib.sha256(manifest.encode()).hexdigest()


def tree_digest(folder: Path) -> str:
    """sha256 of the sorted ``sha256  relative/path`` lines of every file under ``folder``."""
    names = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())
    return files_hash(folder, names)


def references_sha256(path: Path) -> str:
    """sha256 of a references file, or :func:`tree_digest` of a references folder."""
    return tree_digest(path) if path.is_dir() else file_sha256(path)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


@cache
def code_version(paper: str | None = None) -> dict[str, Any]:
    """``git_sha``, ``git_dirty`` and ``code_hash`` of the code that makes a run: the harness package's own, and with
    ``paper`` that paper's registered package's too, wherever the command runs from (never the current directory's
    repository). When the paper's package lies in another repository or outside git, ``code_hash`` covers both
    and ``plugin`` gives the paper's code identity."""
    own = package_version(Path(harness.__file__).parent)
    folder = _paper_folder(paper) if paper else None
    plugin = package_version(folder) if folder else own
    if plugin == own:
        return own
    return {**own, "code_hash": f"{own['code_hash']}|{plugin['code_hash']}", "plugin": plugin}


def _paper_folder(paper: str) -> Path | None:
    from harness import registry  # on use: the leaderboard reads records without the registry

    try:
        return registry.reproduction(paper).root
    except HarnessError:
        return None  # an unregistered paper (records made by hand): the harness's code only


def _untracked(top: str, folder: Path) -> str:
    """Files in the package's folder that git neither tracks nor ignores (a new config not yet committed), by name
    and content: a run made with them is not the commit's, so they make the checkout dirty. Only the package's own
    folder counts (a stray file elsewhere in the checkout, or DVC's dvc.lock, is not its code)."""
    where = os.path.relpath(folder.resolve(), Path(top).resolve())
    listing = _git("-C", top, "ls-files", "--others", "--exclude-standard", "-z", "--", where) or ""
    lines = []
    for name in sorted(filter(None, listing.split("\0"))):
        path = Path(top) / name
        if path.is_file():
            lines.append(f"untracked {name} {hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return "".join(lines)


@cache
def package_version(folder: Path) -> dict[str, Any]:
    """The code identity of a package folder: the git checkout that tracks it (its HEAD, plus a hash of uncommitted
    changes to tracked files and of untracked, unignored ones), or, outside git or in an ignored folder (an installed
    package), a hash of its files."""
    top = (_git("-C", str(folder), "rev-parse", "--show-toplevel") or "").strip()
    if top and _git("-C", top, "check-ignore", "-q", str(folder)) is None:
        sha = (_git("-C", top, "rev-parse", "HEAD") or "").strip()
        if sha:
            # params.yaml (DVC's knobs, recorded in each run's config) and dvc.lock (DVC's bookkeeping) are not code
            diff = _git("-C", top, "diff", "HEAD", "--", ".", ":(exclude)params.yaml", ":(exclude)dvc.lock") or ""
            diff += _untracked(top, folder)
            dirty = "+" + hashlib.sha256(diff.encode()).hexdigest()[:12] if diff else ""
            return {"git_sha": sha, "git_dirty": bool(diff), "code_hash": sha + dirty}
    names = sorted(
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )
    return {"git_sha": None, "git_dirty": None, "code_hash": "files-" + files_hash(folder, names)[:16]}


def library_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in ("paper-harness", "torch", "pytorch-lightning", "torchmetrics", "numpy"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


# The CPU features that pick float kernels (ATen's dispatch level, oneDNN's and MKL's code paths): only these are
# recorded, those present, so two machines of one kind have one list. x86: SSE4.2 → AVX/AVX2+FMA → AVX-512
# (ATen's AVX512 level wants F, BW and VL) with its VNNI/BF16/FP16 extensions → AMX tiles; Arm: NEON/ASIMD,
# half-precision and dot-product arithmetic, BF16/I8MM, SVE/SVE2.
KERNEL_FLAGS = (
    "sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
    "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
    "neon", "asimd", "asimdhp", "asimddp", "bf16", "i8mm", "sve", "sve2",
)  # fmt: skip
# the highest present names a machine's kernel level in machine_key (a VM that masks AVX-512 is another machine)
ISA_LEVELS = (
    ("amx", "amx_tile"), ("avx512", "avx512f"), ("avx2", "avx2"), ("avx", "avx"), ("sse4.2", "sse4_2"),
    ("sve2", "sve2"), ("sve", "sve"), ("asimd", "asimd"), ("neon", "neon"),
)  # fmt: skip
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
# Arm's /proc/cpuinfo names no model, only implementer and part codes (as lscpu decodes them)
ARM_IMPLEMENTERS = {
    "0x41": "ARM", "0x42": "Broadcom", "0x43": "Cavium", "0x48": "HiSilicon", "0x4e": "NVIDIA", "0x50": "APM",
    "0x51": "Qualcomm", "0x61": "Apple", "0xc0": "Ampere",
}  # fmt: skip
ARM_PARTS = {"0xd0c": "Neoverse-N1", "0xd40": "Neoverse-V1", "0xd49": "Neoverse-N2", "0xd4f": "Neoverse-V2"}


def hardware() -> dict[str, Any]:
    """What the machine and the process's settings are, as far as they decide the numbers a run gives: the CPU
    (model, vendor, :data:`KERNEL_FLAGS` present), the cpus there are and those this process may use, the thread
    variables, and where torch imports its thread counts, determinism settings, math libraries and CPU capability,
    with the accelerator, CUDA and cuDNN where CUDA is present. The machine is read once per process; the
    settings, which a run may change, on every call."""
    machine = _machine()
    info: dict[str, Any] = {**machine, "cpu_flags": list(machine["cpu_flags"]), "usable_cpus": _usable_cpus()}
    info["thread_env"] = {name: os.environ[name] for name in THREAD_ENV if name in os.environ}
    try:
        import torch  # only when torch is already needed (run/profile); hardware() is not on the CLI start path
    except ImportError:
        return info
    info.update(_accelerator())
    info["torch"] = {**_torch_libraries(), **_torch_settings(torch)}
    return info


@cache
def _machine() -> dict[str, Any]:
    cpu = parse_cpuinfo(_read_cpuinfo())
    model = cpu.get("model") or _brand_string() or platform.processor() or None
    return {
        "machine": platform.machine(), "system": platform.system(), "cpus": os.cpu_count(), "cpu_model": model,
        "cpu_vendor": cpu.get("vendor"), "cpu_flags": cpu["flags"], "isa": isa_level(cpu["flags"]),
    }  # fmt: skip


def _read_cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 16)  # the first processor's block is all that is read
    except OSError:
        return ""  # not Linux


def _brand_string() -> str | None:
    if platform.system() != "Darwin":
        return None
    try:
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Model, vendor and :data:`KERNEL_FLAGS` (sorted) of the first processor in ``/proc/cpuinfo`` text; x86 names
    them ``model name``, ``vendor_id`` and ``flags``, Arm ``CPU implementer``, ``CPU part`` and ``Features``."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the end of the first processor's block
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    present = set((fields.get("flags") or fields.get("features") or "").split())
    cpu: dict[str, Any] = {"flags": sorted(present.intersection(KERNEL_FLAGS))}
    vendor = fields.get("vendor_id") or ARM_IMPLEMENTERS.get(fields.get("cpu implementer", "").lower())
    part = fields.get("cpu part", "").lower()
    model = fields.get("model name") or fields.get("cpu")  # ppc64le names its model "cpu"
    if not model and vendor and part:
        model = f"{vendor} {ARM_PARTS.get(part, 'part ' + part)}"
    return {**cpu, **({"vendor": vendor} if vendor else {}), **({"model": model} if model else {})}


def _usable_cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))  # taskset, cgroups' cpusets and SLURM narrow it below cpu_count
    except (AttributeError, OSError):
        return None  # macOS has no affinity


@cache
def _accelerator() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {}
    major, minor = torch.cuda.get_device_capability(0)
    info = {
        "accelerator": torch.cuda.get_device_name(0), "devices": torch.cuda.device_count(),
        "accelerator_capability": f"{major}.{minor}",
    }  # fmt: skip
    if torch.version.cuda:
        info.update(cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    if getattr(torch.version, "hip", None):
        info["hip"] = torch.version.hip
    return info


@cache
def _torch_libraries() -> dict[str, Any]:
    """The math libraries torch was built with and the CPU capability it dispatches to (fixed for a process)."""
    import torch

    try:
        config = torch.__config__.show()
    except (AttributeError, RuntimeError):
        config = ""
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except AttributeError:  # torch before 2.1
        capability = None
    return {
        "cpu_capability": capability,
        "blas": _match(r"BLAS_INFO=(\w+)", config),
        "mkl": torch.backends.mkl.is_available(),
        "mkl_version": _match(r"Math Kernel Library Version ([0-9][\w.]*)", config),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "onednn_version": _match(r"(?:MKL-DNN|oneDNN) v([0-9][\w.]*)", config),
    }


def _match(pattern: str, text: str) -> str | None:
    found = re.search(pattern, text)
    return found.group(1) if found else None


def _torch_settings(torch: Any) -> dict[str, Any]:
    """Thread counts, determinism and float32 matmul precision: settings a run (or Lightning) may change."""
    return {
        "threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }  # fmt: skip


def machine_key(hardware: dict[str, Any]) -> str:
    """A short, stable name for the kind of machine that decided a run's kernels, from a record's
    ``provenance.hardware``: the accelerator where there is one (``NVIDIA H200``), else the CPU model and its ISA
    level (``AMD EPYC 7B13 / avx2``: ``isa``, or the level its ``cpu_flags`` reach). A record from before the CPU
    was recorded names its architecture only (``x86_64 (unrecorded cpu)``), so all such records count as one."""
    accelerator = _text(hardware.get("accelerator"))
    if accelerator:
        return accelerator
    model = _text(hardware.get("cpu_model"))
    if not model:
        return f"{_text(hardware.get('machine')) or 'unknown'} (unrecorded cpu)"
    flags = hardware.get("cpu_flags")
    level = _text(hardware.get("isa")) or isa_level(flags if isinstance(flags, list) else [])
    return f"{cpu_name(model)} / {level}" if level else cpu_name(model)


def isa_level(flags: Sequence[str]) -> str | None:
    """The highest of :data:`ISA_LEVELS` that ``flags`` (a record's ``cpu_flags``) reach, e.g. ``avx2``."""
    return next((name for name, flag in ISA_LEVELS if flag in flags), None)


def cpu_name(model: str) -> str:
    """A CPU model without trademarks, clock or core count: ``Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz`` is
    ``Intel Xeon CPU E5-2680 v4``, ``AMD EPYC 7763 64-Core Processor`` is ``AMD EPYC 7763``."""
    name = re.sub(r"\((?:R|TM)\)", "", model, flags=re.IGNORECASE)
    name = re.sub(r"@\s*[\d.]+\s*[GM]Hz|\b\d+-Core Processor\b", "", name, flags=re.IGNORECASE)
    return " ".join(name.split())


def _text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def make_run_id(paper: str, model: str, tier: str, dataset: str, split: str, config: Any, seed: int) -> str:
    """Deterministic id: readable prefix plus a hash of everything that determines the result."""
    key = {
        "paper": paper, "model": model, "tier": tier, "dataset": dataset, "split": split,
        "config": config, "seed": seed, "code": code_version(paper)["code_hash"],
    }  # fmt: skip
    return f"{paper}.{model}.{tier}.{dataset}.{split}.s{seed}.{canonical_hash(key)[:12]}".lower()


def now() -> datetime:
    return datetime.now(UTC)


def run_provenance(config: Any, data_hash: str | None = None, code: dict[str, Any] | None = None) -> Provenance:
    """The provenance of a run made on this machine: ``code``'s git state (default: the harness's), the hash of
    ``config`` (what identifies the run), the data hash where known, library versions and hardware."""
    code = code if code is not None else code_version()
    plugin = {"plugin": code["plugin"]} if code.get("plugin") else {}  # a paper's code from another repository
    return Provenance(
        git_sha=code.get("git_sha"), git_dirty=code.get("git_dirty"), config_hash=canonical_hash(config)[:16],
        data_hash=data_hash, versions=library_versions(), hardware=hardware(), **plugin,
    )  # fmt: skip


def new_record(
    *,
    run_id: str,
    paper: str,
    model: str,
    tier: str,
    dataset: str,
    split: str,
    seed: int,
    metrics: dict[str, float],
    started_at: datetime,
    provenance: Provenance,
    finished_at: datetime | None = None,
    status: str = "ok",
    protocol: str | None = None,
    config: dict[str, Any] | None = None,
    artifacts: dict[str, str] | None = None,
    parents: Sequence[str] = (),
) -> RunRecord:
    """The one constructor of ``harness.run/1`` records (the runner, and plugins that run their own tiers):
    fills in the schema, ``finished_at`` (now, unless given) and the optional fields' defaults."""
    return RunRecord(
        schema=SCHEMA, run_id=run_id, paper=paper, model=model, tier=tier, dataset=dataset, split=split, seed=seed,
        metrics=metrics, started_at=started_at, finished_at=finished_at or now(), provenance=provenance,
        status=status, protocol=protocol, config=config, artifacts=dict(artifacts or {}), parents=list(parents),
    )  # fmt: skip


def record_path(run_id: str, runs_dir: Path = RUNS_DIR) -> Path:
    return runs_dir / f"{run_id}.json"


def _too_deep(data: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON ``data`` nests lists and objects deeper than ``limit`` (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def parse_record(text: str | bytes, where: str) -> RunRecord:
    """Validate a record's JSON text; errors name ``where`` and the field. The fast path is pydantic's own JSON
    reader; a record it refuses is read again with ``json`` for an error message that names the line or field."""
    if len(text) > MAX_RECORD_BYTES:
        raise HarnessError(f"{where}: {len(text)} bytes; a run record is at most {MAX_RECORD_BYTES} bytes")
    try:
        record = RunRecord.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]["msg"]
    else:
        if _too_deep({"config": record.config, "provenance": record.provenance.model_dump()}):
            raise HarnessError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels: not a run record")
        return record
    _parse_slowly(text, where)
    raise HarnessError(f"{where}: {first}")  # json accepts what the JSON reader refuses (e.g. a lone surrogate)


def _parse_slowly(text: str | bytes, where: str) -> RunRecord:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{where}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{where}: cannot read run record: {exc}") from exc
    except RecursionError:
        raise HarnessError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels: not a run record") from None
    if _too_deep(data):
        raise HarnessError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels: not a run record")
    if not isinstance(data, dict):
        raise HarnessError(f"{where}: a run record is a JSON object")
    if data.get("schema") != SCHEMA:
        raise HarnessError(f"{where}: field 'schema': expected {SCHEMA!r}, got {data.get('schema')!r}")
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(part) for part in err["loc"]) or "(record)"
        raise HarnessError(f"{where}: field '{field}': {err['msg']}") from exc


def read_record(path: Path) -> RunRecord:
    """Read and validate one record file; a FIFO, a device (``/dev/zero``) or a huge file is refused unread."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise HarnessError(f"{path}: not a regular file (a FIFO, device or folder), so not a run record")
        if info.st_size > MAX_RECORD_BYTES:
            raise HarnessError(f"{path}: {info.st_size} bytes; a run record is at most {MAX_RECORD_BYTES} bytes")
        text = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read run record: {exc}") from exc
    return parse_record(text, str(path))


def check_writable(folder: Path) -> None:
    """Write, fsync and remove a probe file in ``folder`` (or, while it does not exist, in the nearest folder above
    it, where it would be made): a read-only or full file system is one error before any work is done, not a
    traceback after it. Nothing is left behind."""
    folder = Path(folder)
    target = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    try:
        if not target.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, f"{target} is not a folder")
        fd, probe = tempfile.mkstemp(dir=target, prefix=".write-probe-")
        try:
            os.write(fd, b"\0" * 65536)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise HarnessError(f"{folder}: cannot write results there: {exc.strerror or exc}") from None


def atomic_write_text(path: Path, text: str, *, overwrite: bool = False) -> None:
    """Write via a temp file in the same folder, fsync, then rename (readers never see a partial file).

    Without ``overwrite`` the temp file is hard-linked into place, which fails if ``path`` exists: two
    writers racing for one name cannot replace each other's file.
    """
    atomic_write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool = False) -> None:
    """:func:`atomic_write_text` for bytes (e.g. a checkpoint)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_WRITTEN: list[Path] = []  # the record files this process wrote


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold the exclusive ``flock`` on ``path`` (made, with its folder, when missing) while the block runs; the lock
    goes with the process, however it ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def written_records() -> list[Path]:
    """The record files this process has written (``harness run`` ingests these by path, chained stages' included)."""
    return list(_WRITTEN)


def write_record(record: RunRecord, runs_dir: Path = RUNS_DIR) -> Path:
    """Store ``record`` as ``<runs_dir>/<run_id>.json``; identical content is a no-op, different content an error."""
    path = record_path(record.run_id, runs_dir)
    text = record.to_json()
    if len(text) > MAX_RECORD_BYTES:
        raise HarnessError(f"{path}: the record is {len(text)} bytes: at most {MAX_RECORD_BYTES} (keep configs small)")
    try:
        atomic_write_text(path, text)
        _WRITTEN.append(path)
    except FileExistsError:
        if read_record(path).to_json() != text:
            raise HarnessError(
                f"{path}: a different record with run_id {record.run_id!r} already exists; records are immutable "
                "(re-running the same thing is recognised by its run_id: change the seed or config for a new run)"
            ) from None
    except OSError as exc:  # a full or read-only disk: nothing was written (atomic_write_bytes)
        raise HarnessError(f"{path}: cannot write the run record: {exc.strerror or exc}") from None
    return path


def record_value(record: RunRecord, path: str) -> Any:
    """The record's value at ``metrics.<name>`` or ``config.<dotted.path>`` (a claim's conditions, a trend rule's axes,
    a premise's paths); None when absent."""
    head, _, rest = path.partition(".")
    return dotted.get(record.metrics if head == "metrics" else (record.config or {}), rest, None)
