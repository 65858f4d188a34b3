"""CoNLL-2003 English NER files as distributed, as a Lightning data module.

Files: ``<data_root>/eng.train``, ``eng.testa`` and ``eng.testb`` (the shared task's names; see ``tasks.conll2003``
for the layout). ``-DOCSTART-`` lines separate documents and are not sentences; every other block of token lines
between blank lines is a :class:`NerSentence` ``(id, words, pos, chunks, tags)``, ``id`` the line number of its first
token, tags exactly as written (IOB1). A line without the four fields, or a NER tag outside :data:`LABELS`, raises
:class:`HarnessError` naming the file and line.

Batches are lists of sentences, raw: tokenizing (ELMo's characters, a WordPiece model ...) belongs to the
reproduction. :func:`iob1_to_iob2` rewrites tags where a system trains on IOB2 (``B-`` on every entity's first
token); :class:`tasks.conll2003.metric.ConllNerMetric` reads either, as conlleval does. The validation loader serves
``eng.testa``, the test loader ``eng.testb``. ``data_hash`` (after ``setup()``) is the sha256 of the
``sha256sum``-style manifest of the three files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pytorch_lightning as pl
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.predictions import Scoring
from harness.records import files_hash
from tasks.conll2003.fixtures import FILE_NAMES
from tasks.conll2003.score import DOCSTART, reference_rows

LABELS = ("O", "I-PER", "I-LOC", "I-ORG", "I-MISC", "B-PER", "B-LOC", "B-ORG", "B-MISC")


class NerSentence(NamedTuple):
    id: int
    words: tuple[str, ...]
    pos: tuple[str, ...]
    chunks: tuple[str, ...]
    tags: tuple[str, ...]


def _sentence(rows: list[tuple[int, list[str]]]) -> NerSentence:
    columns = list(zip(*(fields for _, fields in rows), strict=True))
    return NerSentence(rows[0][0], *(tuple(column) for column in columns))


def read_sentences(path: Path | str) -> list[NerSentence]:
    """The sentences of one CoNLL-2003 file, in file order (``-DOCSTART-`` lines dropped)."""
    path = Path(path)
    sentences, rows = [], []
    for number, fields in [*reference_rows(path), (0, None)]:
        if fields is not None and fields[0] != DOCSTART:
            if fields[3] not in LABELS:
                raise HarnessError(f"{path}:{number}: NER tag {fields[3]!r} is not one of {', '.join(LABELS)}")
            rows.append((number, fields))
        elif rows:
            sentences.append(_sentence(rows))
            rows = []
    if not sentences:
        raise HarnessError(f"{path}: no sentence")
    return sentences


def iob1_to_iob2(tags: Sequence[str]) -> list[str]:
    """IOB1 -> IOB2: an ``I-X`` that opens an entity (after ``O`` or another type) becomes ``B-X``."""
    out = []
    for i, tag in enumerate(tags):
        opens = tag.startswith("I-") and (i == 0 or tags[i - 1] == "O" or tags[i - 1][2:] != tag[2:])
        out.append("B-" + tag[2:] if opens else tag)
    return out


class Conll2003DataModule(pl.LightningDataModule):
    """``eng.train`` / ``eng.testa`` / ``eng.testb`` under ``data_root``; batches are lists of :class:`NerSentence`."""

    def __init__(self, data_root: str | Path, batch_size: int = 32, num_workers: int = 0) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.batch_size, self.num_workers = batch_size, num_workers
        self.splits: dict[str, list[NerSentence]] = {}
        self.data_hash: str | None = None

    def sentences(self, split: str) -> list[NerSentence]:
        """The sentences of ``train``, ``testa`` or ``testb``, read once."""
        if split not in FILE_NAMES:
            raise HarnessError(f"CoNLL-2003 has no split {split!r}; it has: {', '.join(FILE_NAMES)}")
        if split not in self.splits:
            self.splits[split] = read_sentences(self.data_root / FILE_NAMES[split])
        return self.splits[split]

    def setup(self, stage: str | None = None) -> None:
        for split in FILE_NAMES:
            self.sentences(split)
        if self.data_hash is None:
            self.data_hash = files_hash(self.data_root, list(FILE_NAMES.values()))

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if self.data_hash is None:
            raise HarnessError("Conll2003DataModule: call setup() before asking for a dataloader")
        return DataLoader(
            self.sentences(split), batch_size=self.batch_size, shuffle=shuffle, collate_fn=list,
            num_workers=self.num_workers, persistent_workers=self.num_workers > 0,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("testa", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("testb", shuffle=False)

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """The test loader's sentences are scored against ``eng.testb``; ids are their first lines, in file order."""
        return Scoring("conll2003-ner", self.data_root / FILE_NAMES["testb"], [s.id for s in self.sentences("testb")])
