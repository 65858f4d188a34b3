"""Readers of RACE's JSON files and the Story Cloze CSVs, and their :class:`~tasks.text_data.TextTaskSpec` s (the data
module is :class:`tasks.text_data.TextTaskDataModule` with ``task: race`` / ``race-m`` / ``race-h`` /
``story-cloze``; formats and fields: ``tasks.multiple_choice``).

``data_root``: for RACE the ``RACE`` folder or its parent; for Story Cloze the folder holding the two CSVs. RACE
files are read in natural order of their names (``2.txt`` before ``10.txt``), ``middle`` before ``high``.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from tasks.multiple_choice import CLOZE_LABELS, RACE_LABELS, RACE_LEVELS
from tasks.text_data import Record, TextTaskSpec

RACE_FOLDER = "RACE"
RACE_SPLITS = ("train", "dev", "test")
CLOZE_FILES = {
    "val": ("cloze_test_val__spring2016 - cloze_test_ALL_val.csv", "cloze_test_val__spring2016.csv"),
    "test": ("cloze_test_test__spring2016 - cloze_test_ALL_test.csv", "cloze_test_test__spring2016.csv"),
}
CLOZE_COLUMNS = (
    "InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3", "InputSentence4",
    "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding",
)  # fmt: skip
FIELDS = ("context", "question", "options")


# --- RACE --------------------------------------------------------------------------------------------------------


def _natural_key(name: str) -> list[tuple[int, Any]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name)]


def _load_json(path: Path) -> dict:
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise HarnessError(f"{path}: not a JSON object: {exc}") from None
    if not isinstance(row, dict):
        raise HarnessError(f"{path}: not a JSON object")
    return row


def _race_fields(path: Path, row: dict) -> tuple[str, str, list, list, list]:
    for key, kind in (("id", str), ("article", str), ("questions", list), ("options", list), ("answers", list)):
        if not isinstance(row.get(key), kind):
            raise HarnessError(f"{path}: field {key!r}: missing or not a {kind.__name__}")
    questions, options, answers = row["questions"], row["options"], row["answers"]
    if not len(questions) == len(options) == len(answers) or not questions:
        raise HarnessError(
            f"{path}: fields 'questions', 'options', 'answers': {len(questions)}, {len(options)} and {len(answers)} "
            "entries; expected the same number, at least one"
        )
    return row["id"], row["article"], questions, options, answers


def read_race_file(path: Path) -> list[Record]:
    """The questions of one RACE file: id ``<file id>#<question index>``, fields (article, question, options)."""
    file_id, article, questions, options, answers = _race_fields(path, _load_json(path))
    records = []
    for index, (question, choices, answer) in enumerate(zip(questions, options, answers, strict=True)):
        if not isinstance(choices, list) or len(choices) != 4 or not all(isinstance(c, str) for c in choices):
            raise HarnessError(f"{path}: field 'options', question {index}: expected a list of four strings")
        if answer not in RACE_LABELS:
            raise HarnessError(f"{path}: field 'answers', question {index}: {answer!r} is not one of A, B, C, D")
        fields = (article, str(question), tuple(choices))
        records.append(Record(f"{file_id}#{index}", fields, RACE_LABELS.index(answer)))
    return records


def race_files(folder: Path, split: str, levels: tuple[str, ...]) -> list[str]:
    """``<split>/<level>/<n>.txt`` names under the RACE folder, middle before high, in natural order."""
    if split not in RACE_SPLITS:
        raise HarnessError(f"RACE has no split {split!r}; it has: {', '.join(RACE_SPLITS)}")
    names = []
    for level in levels:
        sub = Path(folder) / split / level
        if not sub.is_dir():
            raise HarnessError(f"{sub}: missing (the RACE layout: RACE/{{train,dev,test}}/{{middle,high}}/<n>.txt)")
        found = sorted(sub.glob("*.txt"), key=lambda path: _natural_key(path.name))
        if not found:
            raise HarnessError(f"{sub}: no .txt files")
        names += [f"{split}/{level}/{path.name}" for path in found]
    return names


def read_race(split_folder: Path, levels: tuple[str, ...]) -> list[Record]:
    """The questions of a RACE split folder (``RACE/test``) at the given levels; duplicate ids are an error."""
    split_folder = Path(split_folder)
    records: list[Record] = []
    seen: dict[str, str] = {}
    for name in race_files(split_folder.parent, split_folder.name, levels):
        for record in read_race_file(split_folder.parent / name):
            if record.id in seen:
                raise HarnessError(f"{split_folder.parent / name}: question id {record.id!r} also in {seen[record.id]}")
            seen[record.id] = name
            records.append(record)
    return records


def race_folder(root: Path) -> Path:
    inside = Path(root) / RACE_FOLDER
    return inside if inside.is_dir() else Path(root)


# --- Story Cloze -------------------------------------------------------------------------------------------------


def cloze_file(folder: Path, split: str) -> str:
    """The name of the split's CSV in ``folder``: the release's, or the shorter one if that is what is there."""
    if split not in CLOZE_FILES:
        raise HarnessError(f"story-cloze has no split {split!r}; it has: val, test")
    names = CLOZE_FILES[split]
    return next((name for name in names if (Path(folder) / name).is_file()), names[0])


def _cloze_record(path: Path, line: int, row: dict[str, str]) -> Record:
    for column in CLOZE_COLUMNS:
        if row.get(column) is None:
            raise HarnessError(f"{path}:{line}: field {column!r}: missing")
    answer = row["AnswerRightEnding"].strip()
    if answer not in CLOZE_LABELS:
        raise HarnessError(f"{path}:{line}: field 'AnswerRightEnding': {answer!r} is not 1 or 2")
    context = " ".join(row[f"InputSentence{n}"].strip() for n in range(1, 5))
    options = (row["RandomFifthSentenceQuiz1"].strip(), row["RandomFifthSentenceQuiz2"].strip())
    return Record(row["InputStoryid"].strip(), (context, "", options), CLOZE_LABELS.index(answer))


def read_cloze(path: Path) -> list[Record]:
    """The stories of a Story Cloze CSV (header checked; every row needs every column)."""
    path = Path(path)
    if not path.is_file():
        raise HarnessError(f"{path}: missing (the Story Cloze Test 2016 val/test CSVs)")
    records, seen = [], set()
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            absent = [column for column in CLOZE_COLUMNS if column not in (reader.fieldnames or [])]
            if absent:
                raise HarnessError(f"{path}:1: header has no column {', '.join(absent)}")
            for row in reader:
                record = _cloze_record(path, reader.line_num, row)
                if record.id in seen:
                    raise HarnessError(f"{path}:{reader.line_num}: field 'InputStoryid': duplicate id {record.id!r}")
                seen.add(record.id)
                records.append(record)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: not readable as UTF-8 CSV: {exc}") from None
    if not records:
        raise HarnessError(f"{path}: no stories")
    return records


def _race_spec(task: str) -> TextTaskSpec:
    levels = RACE_LEVELS[task]
    return TextTaskSpec(
        task=task,
        fields=FIELDS,
        labels=RACE_LABELS,
        folder=race_folder,
        files=lambda folder, split: race_files(folder, split, levels),
        read=lambda folder, split: read_race(folder / split, levels),
        references=lambda folder: folder / "test",
    )


SPECS = {
    **{task: _race_spec(task) for task in RACE_LEVELS},
    "story-cloze": TextTaskSpec(
        task="story-cloze",
        fields=FIELDS,
        labels=CLOZE_LABELS,
        folder=Path,
        files=lambda folder, split: [cloze_file(folder, split)],
        read=lambda folder, split: read_cloze(folder / cloze_file(folder, split)),
        references=lambda folder: folder / cloze_file(folder, "test"),
        splits=("val", "val", "test"),
    ),
}
