"""Official-format scorer for ImageNet (ILSVRC-2012) classification: top-1 and top-5 accuracy.

Follows the ILSVRC classification protocol (Russakovsky et al., IJCV 2015, arXiv 1409.0575, section 4.1):
an image counts as correct at top-k when its true label is among the first k guesses; the ILSVRC
"classification error" is the top-5 error, the papers' "top-1 error" is ``100 - top1``.

Files (CSV with a header row, UTF-8, a byte-order mark is tolerated, blank lines skipped):

- references: ``id,label`` (further columns are ignored), one row per image;
- predictions: ``id,prediction[,p2,p3,p4,p5]``: ``prediction`` is the top-1 guess, ``p2..p5`` the next guesses
  in order (trailing guesses may be left empty). With only the ``prediction`` column, top-5 counts only that
  first guess, so it equals top-1.

Labels are compared as strings after stripping white space, so synset ids (``n01440764``) and class indices
(``0``..``999``) both work as long as both files use the same kind; predictions none of whose labels the
references use (indices against synset ids) are an error, not a score of 0. Every reference id without a
prediction counts as wrong and is reported with a warning; a prediction for an id absent from the references is an
error.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

from harness.errors import HarnessError

MAX_GUESSES = 5
GUESS_COLUMNS = ("prediction", "p2", "p3", "p4", "p5")


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, stripped fields)`` for each non-blank CSV row of ``path``."""
    try:
        handle = path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with handle:
        reader = csv.reader(handle)
        try:
            for fields in reader:
                if fields and any(field.strip() for field in fields):
                    yield reader.line_num, [field.strip() for field in fields]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise HarnessError(f"{path}:{reader.line_num + 1}: not readable as UTF-8 CSV: {exc}") from None


def _header(path: Path, rows: Iterator[tuple[int, list[str]]], required: tuple[str, ...]) -> tuple[int, list[str]]:
    first = next(rows, None)
    if first is None:
        raise HarnessError(f"{path}: empty file; expected a header line {','.join(required)}")
    line, header = first
    missing = [name for name in required if name not in header]
    if missing:
        raise HarnessError(
            f"{path}:{line}: header must name the columns {','.join(required)}; "
            f"found {','.join(header)!r} (missing {', '.join(missing)}; is the header line missing?)"
        )
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise HarnessError(f"{path}:{line}: column {duplicated[0]!r} appears more than once in the header")
    return line, header


def _fields(path: Path, line: int, fields: list[str], header: list[str]) -> dict[str, str]:
    if len(fields) != len(header):
        raise HarnessError(f"{path}:{line}: {len(fields)} fields, but the header names {len(header)}")
    return dict(zip(header, fields, strict=True))


def _check_id(path: Path, line: int, item_id: str, seen: dict[str, int]) -> None:
    if not item_id:
        raise HarnessError(f"{path}:{line}: empty id")
    if item_id in seen:
        raise HarnessError(f"{path}:{line}: duplicate id {item_id!r} (first on line {seen[item_id]})")
    seen[item_id] = line


def read_references(path: Path) -> dict[str, str]:
    """``id -> label`` from an ``id,label`` CSV; raises :class:`HarnessError` naming the file and line."""
    path = Path(path)
    rows = _rows(path)
    _, header = _header(path, rows, ("id", "label"))
    labels: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line, fields in rows:
        row = _fields(path, line, fields, header)
        _check_id(path, line, row["id"], seen)
        if not row["label"]:
            raise HarnessError(f"{path}:{line}: empty label for id {row['id']!r}")
        labels[row["id"]] = row["label"]
    if not labels:
        raise HarnessError(f"{path}: no rows after the header")
    return labels


def _guess_columns(path: Path, line: int, header: list[str]) -> list[str]:
    extra = [name for name in header if name not in ("id", *GUESS_COLUMNS)]
    if extra:
        numbered = [name for name in extra if name.startswith("p") and name[1:].isdigit()]
        if numbered:
            raise HarnessError(
                f"{path}:{line}: column {numbered[0]!r}: more than {MAX_GUESSES} guesses; top-5 takes prediction,p2..p5"
            )
        raise HarnessError(f"{path}:{line}: unknown column {extra[0]!r}; expected id,prediction[,p2..p5]")
    guesses = [name for name in GUESS_COLUMNS if name in header]
    if guesses != list(GUESS_COLUMNS[: len(guesses)]):
        raise HarnessError(f"{path}:{line}: guess columns must run prediction,p2,... without gaps; found {guesses}")
    return guesses


def read_predictions(path: Path) -> dict[str, list[str]]:
    """``id -> guesses`` (best first, at most five) from an ``id,prediction[,p2..p5]`` CSV."""
    return read_prediction_rows(Path(path))[0]


def read_prediction_rows(path: Path) -> tuple[dict[str, list[str]], dict[str, int]]:
    rows = _rows(path)
    header_line, header = _header(path, rows, ("id", "prediction"))
    columns = _guess_columns(path, header_line, header)
    guesses: dict[str, list[str]] = {}
    seen: dict[str, int] = {}
    for line, fields in rows:
        row = _fields(path, line, fields, header)
        _check_id(path, line, row["id"], seen)
        if not row["prediction"]:
            raise HarnessError(f"{path}:{line}: empty prediction for id {row['id']!r}")
        guesses[row["id"]] = [row[name] for name in columns if row[name]]
    if not guesses:
        raise HarnessError(f"{path}: no rows after the header")
    return guesses, seen


def _check_comparable(
    guesses: Mapping[str, list[str]], labels: Mapping[str, str], references: Path, predictions: Path
) -> None:
    """Some guess must be a label the references use: class indices scored against synset ids would all be wrong,
    and a 0 would look like a result."""
    predicted = {label for row in guesses.values() for label in row}
    if predicted and not predicted & set(labels.values()):
        shown = ", ".join(repr(label) for label in sorted(predicted)[:3])
        examples = ", ".join(repr(label) for label in sorted(set(labels.values()))[:3])
        raise HarnessError(
            f"{predictions}: none of the predicted labels ({shown}{', ...' if len(predicted) > 3 else ''}) is a label "
            f"of {references} ({examples}, ...): are they class indices where the references hold synset ids?"
        )


def score(references: Path, predictions: Path) -> dict[str, float]:
    """Top-1 and top-5 accuracy and top-1 error, in percent, of ``predictions`` against ``references``."""
    return score_labels(read_references(Path(references)), references, predictions)


def score_labels(
    labels: Mapping[str, str], references: Path, predictions: Path, stacklevel: int = 3
) -> dict[str, float]:
    """Top-1, top-5 and top-1 error (percent) of a predictions CSV against ``id -> label`` read from ``references``
    (shared by every classification task whose references are not an ``id,label`` CSV)."""
    predictions = Path(predictions)
    guesses, lines = read_prediction_rows(predictions)
    unknown = [item_id for item_id in guesses if item_id not in labels]
    if unknown:
        raise HarnessError(
            f"{predictions}:{lines[unknown[0]]}: id {unknown[0]!r} is not in {references}"
            + (f" ({len(unknown) - 1} more unknown ids)" if len(unknown) > 1 else "")
        )
    _check_comparable(guesses, labels, references, predictions)
    missing = len(labels) - len(guesses)
    if missing:
        warnings.warn(
            f"{predictions}: {missing} of {len(labels)} reference ids in {references} have no prediction; "
            "counted as wrong",
            stacklevel=stacklevel,
        )
    top1 = sum(guess[0] == labels[item_id] for item_id, guess in guesses.items())
    top5 = sum(labels[item_id] in guess[:MAX_GUESSES] for item_id, guess in guesses.items())
    top1_pct = 100.0 * top1 / len(labels)
    return {"top1": top1_pct, "top5": 100.0 * top5 / len(labels), "error": 100.0 - top1_pct}
