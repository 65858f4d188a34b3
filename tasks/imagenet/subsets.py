"""Deterministic few-label subsets: k% of the training images of every class.

Used by the semi-supervised protocols that train on "10% of the ImageNet labels" (UDA, arXiv 1904.12848;
Selfie, arXiv 1906.02940) and by any run on a fraction of a training set. The subset is a pure function of
the file names, the percentage and the seed, so it is the same on every machine and in every file-system
order:

1. group the ``(relative path, label)`` items by label;
2. in each class rank the items by ``sha256(f"{seed}:{relative_path}")`` (ties, which need a hash collision,
   broken by path);
3. keep the first ``ceil(k/100 * n_class)`` items of the ranking, at least one per class.

Rounding is up (``ceil``), computed exactly on the decimal value of ``k`` (7% of 1,300 is 91, where floating
point gives 91.00000000000001 and would round up to 92), so a class never loses an image to rounding and every
class keeps at least one.
Because every percentage keeps a prefix of the same ranking, subsets with the same seed are nested:
the 5% subset lies inside the 10% subset, which lies inside the 20% subset.

The list file holds one ``<relative path> <label>`` line per kept image (path relative to ``train/``,
forward slashes, label last so a path may hold spaces), sorted by path, UTF-8 with ``\\n`` line ends; its
sha256 is the subset's ``data_hash`` in run provenance.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path

from harness.errors import HarnessError

STANDARD_PERCENTS = (5.0, 10.0, 20.0, 50.0, 100.0)


def _exact_percent(percent: float) -> Fraction:
    value = float(percent)
    if not math.isfinite(value) or not 0.0 < value <= 100.0:
        raise HarnessError(f"subset percent must be in (0, 100]; got {percent!r}")
    return Fraction(repr(value))  # the decimal the user wrote, not its binary approximation


def subset_size(n: int, percent: float) -> int:
    """Images kept from a class of ``n``: ``ceil(percent/100 * n)``, at least 1 (0 for an empty class)."""
    if n <= 0:
        return 0
    return max(1, math.ceil(_exact_percent(percent) * n / 100))


def _rank_key(seed: int, path: str) -> tuple[bytes, str]:
    return hashlib.sha256(f"{seed}:{path}".encode()).digest(), path


def sample_subset(items: Iterable[tuple[str, str]], percent: float, seed: int = 0) -> list[tuple[str, str]]:
    """The kept ``(relative path, label)`` items, sorted by path. Input order does not matter."""
    by_class: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for path, label in items:
        if path in seen:
            raise HarnessError(f"subset input lists {path!r} twice")
        seen.add(path)
        by_class[label].append(path)
    kept: list[tuple[str, str]] = []
    for label, paths in by_class.items():
        ranked = sorted(paths, key=lambda path: _rank_key(seed, path))  # a total order: file-system order is gone
        kept.extend((path, label) for path in ranked[: subset_size(len(paths), percent)])
    return sorted(kept)


def format_subset(items: Iterable[tuple[str, str]]) -> bytes:
    """The list file's bytes: ``<path> <label>`` lines sorted by path."""
    lines = []
    for path, label in sorted(items):
        if "\n" in path or not label or any(ch.isspace() for ch in label):
            raise HarnessError(f"cannot write subset line for {path!r} with label {label!r}")
        lines.append(f"{path} {label}\n")
    return "".join(lines).encode()


def subset_hash(items: Iterable[tuple[str, str]]) -> str:
    """sha256 hex of the list file ``items`` would be written as (no file needed)."""
    return hashlib.sha256(format_subset(items)).hexdigest()


def write_list(items: Iterable[tuple[str, str]], path: Path) -> str:
    """Write ``items`` as a list file atomically (temporary file + rename) and return its sha256 hex."""
    data = format_subset(items)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return hashlib.sha256(data).hexdigest()


def write_subset(items: Iterable[tuple[str, str]], percent: float, seed: int, path: Path) -> str:
    """Sample the subset, write its list file to ``path`` and return the file's sha256 hex."""
    return write_list(sample_subset(items, percent, seed), path)


def read_subset(path: Path) -> list[tuple[str, str]]:
    """``(relative path, label)`` pairs of a list file written by :func:`write_subset`."""
    path = Path(path)
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        item_path, sep, label = line.rpartition(" ")
        if not sep or not item_path or not label:
            raise HarnessError(f"{path}:{number}: expected '<relative path> <label>', found {line!r}")
        items.append((item_path, label))
    return items
