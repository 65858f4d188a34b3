"""Reader of the DPRD files and its :class:`~tasks.text_data.TextTaskSpec` (the data module is
:class:`tasks.text_data.TextTaskDataModule` with ``task: dprd``; format: ``tasks.dprd``).

Records have three raw fields: ``sentence``, ``pronoun`` and ``candidates`` (the two antecedents, in the file's
order); the label is the index of the right one. DPRD has no dev split: the train and validation loaders both serve
``train.c.txt``, the test loader ``test.c.txt``. ``data_root``: the folder holding the two files.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import HarnessError
from tasks.dprd import LABELS
from tasks.text_data import Record, TextTaskSpec

FILES = {"train": "train.c.txt", "test": "test.c.txt"}
FIELDS = ("sentence", "pronoun", "candidates")


def dprd_file(split: str) -> str:
    if split not in FILES:
        raise HarnessError(f"dprd has no split {split!r}; it has: {', '.join(FILES)}")
    return FILES[split]


def _record(path: Path, line: int, number: int, lines: list[str]) -> Record:
    sentence, pronoun, candidates, answer = (text.strip() for text in lines)
    names = tuple(name.strip() for name in candidates.split(","))
    where = f"{path}:{line}"
    if not sentence or not pronoun:
        raise HarnessError(f"{where}: an example is four lines: sentence, pronoun, candidates, answer")
    if len(names) != 2 or not all(names):
        raise HarnessError(f"{path}:{line + 2}: expected two candidates separated by a comma, got {candidates!r}")
    if answer not in names:
        raise HarnessError(f"{path}:{line + 3}: the answer {answer!r} is neither candidate {names}")
    if pronoun_span(sentence, pronoun) is None:
        raise HarnessError(f"{path}:{line + 1}: the pronoun {pronoun!r} is not a word of the sentence")
    return Record(str(number), (sentence, pronoun, names), names.index(answer))


def read_dprd(path: Path) -> list[Record]:
    """The examples of a DPRD file: groups of four non-blank lines separated by blank lines."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read ({exc.strerror or exc}; DPRD: train.c.txt, test.c.txt)") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    records, group, start = [], [], 1
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.strip():
            start = start if group else number
            group.append(line)
            continue
        if group:
            if len(group) != 4:
                raise HarnessError(f"{path}:{start}: an example of {len(group)} lines; expected 4 and a blank line")
            records.append(_record(path, start, len(records), group))
            group = []
    if not records:
        raise HarnessError(f"{path}: no examples")
    return records


def pronoun_span(sentence: str, pronoun: str) -> tuple[int, int] | None:
    """Where the pronoun's first occurrence as a whole word lies in the sentence (case-insensitive), or None."""
    found = re.search(rf"(?<!\w){re.escape(pronoun)}(?!\w)", sentence, flags=re.IGNORECASE)
    return None if found is None else found.span()


SPECS = {
    "dprd": TextTaskSpec(
        task="dprd",
        fields=FIELDS,
        labels=LABELS,
        folder=Path,
        files=lambda folder, split: [dprd_file(split)],
        read=lambda folder, split: read_dprd(Path(folder) / dprd_file(split)),
        references=lambda folder: Path(folder) / FILES["test"],
        splits=("train", "train", "test"),
    )
}
