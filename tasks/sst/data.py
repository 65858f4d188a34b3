"""Reader of SST's PTB trees and the :class:`~tasks.text_data.TextTaskSpec` of ``sst-5`` (the data module is
:class:`tasks.text_data.TextTaskDataModule` with ``task: sst-5``). ``data_root``: the folder holding ``trees/``, or
``trees`` itself. A record's one field is ``text`` (the leaves joined by spaces, ``-LRB-`` / ``-RRB-`` kept as
written); its label the root's (``tasks.sst.LABELS`` index)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import HarnessError
from tasks.language_modeling.score import text_lines
from tasks.sst import LABELS
from tasks.text_data import Record, TextTaskSpec

TREES = "trees"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse_tree(line: str) -> tuple[str, list[str]]:
    """``(root label, leaves)`` of one PTB tree ``(label child ...)``; a leaf is ``(label word)``.

    Raises ``ValueError`` describing what is wrong (unbalanced brackets, a node without a label, text after the
    tree)."""
    tokens = _TOKEN.findall(line)
    if len(tokens) < 4 or tokens[0] != "(":
        raise ValueError("expected a tree '(label ...)'")
    leaves: list[str] = []
    depth, index = 0, 0
    while index < len(tokens):
        token = tokens[index]
        if token == "(":
            if index + 1 >= len(tokens) or tokens[index + 1] not in LABELS:
                raise ValueError(f"node without a label 0-4 at token {index + 2}")
            depth, index = depth + 1, index + 2
        elif token == ")":
            depth, index = depth - 1, index + 1
            if depth < 0 or (depth == 0 and index != len(tokens)):
                raise ValueError("text after the closing bracket of the tree")
        else:
            leaves.append(token)
            index += 1
    if depth != 0:
        raise ValueError(f"{depth} unclosed bracket(s)")
    if not leaves:
        raise ValueError("a tree without words")
    return tokens[1], leaves


def read_trees(path: Path) -> list[Record]:
    """The sentences of an SST ``trees/<split>.txt``: id = 0-based line number, label = the root's."""
    if not Path(path).is_file():
        raise HarnessError(f"{path}: missing (the SST layout: trees/{{train,dev,test}}.txt)")
    records = []
    for number, line in enumerate(text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            label, leaves = parse_tree(line)
        except ValueError as exc:
            raise HarnessError(f"{path}:{number}: not an SST tree: {exc}") from None
        records.append(Record(str(number - 1), (" ".join(leaves),), LABELS.index(label)))
    if not records:
        raise HarnessError(f"{path}: no trees")
    return records


def trees_folder(root: Path) -> Path:
    """The folder holding ``trees/``: ``root`` or, when ``root`` is ``trees`` itself, its parent."""
    root = Path(root)
    return root.parent if root.name == TREES and not (root / TREES).is_dir() else root


def _read_split(folder: Path, split: str) -> list[Record]:
    if split not in ("train", "dev", "test"):
        raise HarnessError(f"sst-5 has no split {split!r}; it has: train, dev, test")
    return read_trees(folder / TREES / f"{split}.txt")


SPECS = {
    "sst-5": TextTaskSpec(
        task="sst-5",
        fields=("text",),
        labels=LABELS,
        folder=trees_folder,
        files=lambda folder, split: [f"{TREES}/{split}.txt"],
        read=_read_split,
        references=lambda folder: folder / TREES / "test.txt",
    )
}
