"""Readers of SNLI's ``.jsonl`` and SciTail's ``tsv_format`` files, and their :class:`~tasks.text_data.TextTaskSpec` s
(the data module is :class:`tasks.text_data.TextTaskDataModule` with ``task: snli`` or ``task: scitail``).

Each record's fields are ``(premise, hypothesis)``, the raw sentences; its label the index in
``tasks.entailment.SNLI_LABELS`` / ``SCITAIL_LABELS``. ``data_root``: the folder the archive unpacks to
(``snli_1.0``; ``SciTailV1.1``, or its ``tsv_format``) or its parent.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import HarnessError
from tasks.entailment import SCITAIL_LABELS, SNLI_LABELS
from tasks.language_modeling.score import text_lines
from tasks.text_data import Record, TextTaskSpec

SNLI_FOLDER = "snli_1.0"
SCITAIL_FOLDER = "SciTailV1.1"
SCITAIL_TSV = "tsv_format"
SNLI_FIELDS = ("pairID", "sentence1", "sentence2", "gold_label")


def snli_file(split: str) -> str:
    return f"snli_1.0_{split}.jsonl"


def scitail_file(split: str) -> str:
    return f"scitail_1.0_{split}.tsv"


def _check_split(split: str, task: str) -> None:
    if split not in ("train", "dev", "test"):
        raise HarnessError(f"{task} has no split {split!r}; it has: train, dev, test")


def _snli_record(path: Path, number: int, line: str) -> Record | None:
    try:
        row = json.loads(line)
    except ValueError as exc:
        raise HarnessError(f"{path}:{number}: not a JSON object: {exc}") from None
    if not isinstance(row, dict):
        raise HarnessError(f"{path}:{number}: not a JSON object")
    for key in SNLI_FIELDS:
        if not isinstance(row.get(key), str):
            raise HarnessError(f"{path}:{number}: field {key!r}: missing or not a string")
    if row["gold_label"] == "-":  # no majority label: not scored, as in every SNLI result
        return None
    if row["gold_label"] not in SNLI_LABELS:
        raise HarnessError(f"{path}:{number}: field 'gold_label': {row['gold_label']!r} is not one of -, {SNLI_LABELS}")
    fields = (row["sentence1"], row["sentence2"])
    return Record(row["pairID"], fields, SNLI_LABELS.index(row["gold_label"]))


def _unique(path: Path, records: list[Record]) -> list[Record]:
    seen: set[str] = set()
    for record in records:
        if record.id in seen:
            raise HarnessError(f"{path}: id {record.id!r} appears twice")
        seen.add(record.id)
    if not records:
        raise HarnessError(f"{path}: no examples")
    return records


def read_snli(path: Path) -> list[Record]:
    """The labelled pairs of an SNLI ``.jsonl`` file (``gold_label`` ``-`` dropped), in file order."""
    if not Path(path).is_file():
        raise HarnessError(f"{path}: missing (the SNLI 1.0 layout: snli_1.0/snli_1.0_{{train,dev,test}}.jsonl)")
    records = []
    for number, line in enumerate(text_lines(path), start=1):
        if line.strip():
            record = _snli_record(path, number, line)
            if record is not None:
                records.append(record)
    return _unique(path, records)


def read_scitail(path: Path) -> list[Record]:
    """The pairs of a SciTail ``tsv_format`` file; id = the 0-based line number."""
    if not Path(path).is_file():
        raise HarnessError(f"{path}: missing (the SciTail layout: SciTailV1.1/tsv_format/scitail_1.0_<split>.tsv)")
    records = []
    for number, line in enumerate(text_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 3:
            expected = "3 (premise, hypothesis, label)"
            raise HarnessError(f"{path}:{number}: {len(fields)} tab-separated fields, expected {expected}")
        if fields[2] not in SCITAIL_LABELS:
            known = ", ".join(SCITAIL_LABELS)
            raise HarnessError(f"{path}:{number}: field 'label': {fields[2]!r} is not one of {known}")
        records.append(Record(str(number - 1), (fields[0], fields[1]), SCITAIL_LABELS.index(fields[2])))
    return _unique(path, records)


def snli_folder(root: Path) -> Path:
    inside = Path(root) / SNLI_FOLDER
    return inside if inside.is_dir() else Path(root)


def scitail_folder(root: Path) -> Path:
    for folder in (Path(root) / SCITAIL_FOLDER / SCITAIL_TSV, Path(root) / SCITAIL_TSV):
        if folder.is_dir():
            return folder
    return Path(root)


def _read_snli_split(folder: Path, split: str) -> list[Record]:
    _check_split(split, "snli")
    return read_snli(folder / snli_file(split))


def _read_scitail_split(folder: Path, split: str) -> list[Record]:
    _check_split(split, "scitail")
    return read_scitail(folder / scitail_file(split))


SPECS = {
    "snli": TextTaskSpec(
        task="snli",
        fields=("premise", "hypothesis"),
        labels=SNLI_LABELS,
        folder=snli_folder,
        files=lambda folder, split: [snli_file(split)],
        read=_read_snli_split,
        references=lambda folder: folder / snli_file("test"),
    ),
    "scitail": TextTaskSpec(
        task="scitail",
        fields=("premise", "hypothesis"),
        labels=SCITAIL_LABELS,
        folder=scitail_folder,
        files=lambda folder, split: [scitail_file(split)],
        read=_read_scitail_split,
        references=lambda folder: folder / scitail_file("test"),
    ),
}
