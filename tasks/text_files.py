"""Small readers shared by the text tasks (WikiText-103, One Billion Word, SNLI, SciTail, SST, RACE, Story Cloze):
data hashes of the files a data module read, and strict ``id -> answer`` prediction files.

:func:`files_hash` is the data hash every record of these tasks carries: sha256 over ``name\\0size\\0bytes`` of
each file, in the order given (names relative to a folder, so the hash does not depend on where the data lies).

:func:`read_answers` reads a CSV prediction file with a header naming an id column and an answer column (further
columns are an error, so a file meant for another task is not scored by accident) and checks it against the
references: every reference id has exactly one answer, no id is unknown, every answer is one of the task's answers.
Each failure is one :class:`HarnessError` naming the file, the line and the field; nothing is scored as 0 silently.

This module imports nothing heavy.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from harness.errors import HarnessError

_SHOWN = 5  # ids quoted in a message before "..."


# the prediction CSV's header (id column, answer column) of each task; ``id,prediction`` where none is listed
PREDICTION_COLUMNS = {"story-cloze": ("InputStoryid", "AnswerRightEnding")}


def prediction_columns(task: str) -> tuple[str, str]:
    """The header of ``task``'s prediction CSV."""
    return PREDICTION_COLUMNS.get(task, ("id", "prediction"))


def files_hash(folder: Path, names: Iterable[str], hint: str = "") -> str:
    """sha256 over ``name\\0 size\\0 bytes`` of each file ``folder/name``, in the order given."""
    digest = hashlib.sha256()
    for name in names:
        path = Path(folder) / name
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise HarnessError(f"{path}: cannot read ({exc.strerror or exc}){hint}") from None
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _csv_rows(path: Path) -> list[tuple[int, list[str]]]:
    """``(line number, fields)`` of every non-blank row of a UTF-8 CSV (a byte-order mark is skipped)."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, strict=True)  # an unclosed quote is an error, not a field running to the end
            return [(reader.line_num, row) for row in reader if any(field.strip() for field in row)]
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: not readable as UTF-8 CSV: {exc}") from None


def _sample(ids: list[str]) -> str:
    return ", ".join(ids[:_SHOWN]) + (", ..." if len(ids) > _SHOWN else "")


def read_answers(path: Path, columns: tuple[str, str], answers: Collection[str]) -> dict[str, tuple[str, int]]:
    """``id -> (answer, line)`` from a CSV whose header is exactly ``columns`` (id column, answer column)."""
    path = Path(path)
    rows = _csv_rows(path)
    if not rows or tuple(field.strip() for field in rows[0][1]) != columns:
        found = "an empty file" if not rows else repr(",".join(rows[0][1]))
        raise HarnessError(f"{path}:1: expected the header '{','.join(columns)}', found {found}")
    found_answers: dict[str, tuple[str, int]] = {}
    for line, fields in rows[1:]:
        if len(fields) != 2:
            raise HarnessError(f"{path}:{line}: {len(fields)} fields, expected 2 ({','.join(columns)})")
        item_id, answer = (field.strip() for field in fields)
        if not item_id:
            raise HarnessError(f"{path}:{line}: field {columns[0]!r}: empty id")
        if item_id in found_answers:
            first = found_answers[item_id][1]
            raise HarnessError(f"{path}:{line}: field {columns[0]!r}: duplicate id {item_id!r} (first on line {first})")
        if answer not in answers:
            raise HarnessError(
                f"{path}:{line}: field {columns[1]!r}: {answer!r} is not one of {', '.join(map(str, answers))}"
            )
        found_answers[item_id] = (answer, line)
    if not found_answers:
        raise HarnessError(f"{path}: no rows after the header")
    return found_answers


def check_ids(
    references: Path, gold: Mapping[str, str], predictions: Path, found: Mapping[str, tuple[str, int]]
) -> None:
    """Every prediction id is a reference id and every reference id has a prediction (errors name both files)."""
    unknown = [item_id for item_id in found if item_id not in gold]
    if unknown:
        raise HarnessError(
            f"{predictions}:{found[unknown[0]][1]}: id {unknown[0]!r} is not an example of {references} "
            f"({len(unknown)} unknown ids: {_sample(unknown)})"
        )
    missing = [item_id for item_id in gold if item_id not in found]
    if missing:
        raise HarnessError(
            f"{predictions}: no prediction for {len(missing)} of the {len(gold)} examples of {references} "
            f"(ids {_sample(missing)}); every example is scored"
        )


def score_answers(
    references: Path, gold: Mapping[str, str], predictions: Path, columns: tuple[str, str], answers: Collection[str]
) -> dict[str, float]:
    """``accuracy`` (percent) of a prediction CSV against ``gold`` (id -> answer) read from ``references``."""
    found = read_answers(Path(predictions), columns, answers)
    check_ids(references, gold, predictions, found)
    right = sum(found[item_id][0] == answer for item_id, answer in gold.items())
    return {"accuracy": 100.0 * right / len(gold)}


def write_answers(path: Path, columns: tuple[str, str], rows: Iterable[tuple[str, str]]) -> Path:
    """Write ``(id, answer)`` rows as the prediction CSV :func:`read_answers` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    return path
