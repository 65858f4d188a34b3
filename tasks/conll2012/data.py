"""CoNLL-2012 English ``*_gold_conll`` files (OntoNotes v5) as a Lightning data module, for SRL or coreference.

Layout read: ``<data_root>/conll-2012/v4/data/{train,development,test}/data/english/annotations/<genre>/<source>/
<nn>/<name>.v4_gold_conll``, the tree the CoNLL-2012 scripts (``skeleton2conll.sh``) build from the
``conll-2012-{train,development}.v4`` and ``conll-2012-test-key`` archives and OntoNotes 5.0 (LDC2013T19); only the
``*_gold_conll`` files are read (not ``*_auto_conll``). Files of a split are read in path order; see
:mod:`tasks.conll2012.reader` for the columns and the errors.

``task="srl"``: each item is an :class:`SrlSentence` ``(id, words, pos, frames)``, ``id`` = ``"<document>:<n>"``
(the document's ``#begin document`` name, the sentence's index in it), ``frames`` one ``(predicate position,
phrases)`` per predicate-argument column, the phrases ``(label, first, last)`` as bracketed (``V``, ``C-ARG1``,
``R-ARG0`` ... and nested ones), the predicate the first token of the column's ``V`` (:func:`bio_tags` and
:func:`bio_phrases` convert to and from the BIO tags most SRL models predict). ``task="coref"``: each item is a
:class:`CorefDocument` ``(id, sentences, speakers, clusters)``, clusters of ``(first, last)`` token positions counted
over the whole document, read as the reference scorer reads them. Batches are lists of items, raw: no
tokenizer (ELMo, and the papers after it, bring their own).

Validation serves ``development``, test serves ``test``. ``data_hash`` (after ``setup()``) is the sha256 of the
``sha256sum``-style manifest of every file read, by path relative to ``data_root``.
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
from tasks.conll2012 import srl
from tasks.conll2012.fixtures import SPLITS, split_folder
from tasks.conll2012.reader import FIRST_ARGUMENT, Document, files, read_documents
from tasks.conll2012.score import chains, predicate_column, propositions

Phrases = tuple[tuple[str, int, int], ...]
TASK_IDS = {"srl": "srl-conll2012", "coref": "coref-conll2012"}


class SrlSentence(NamedTuple):
    id: str
    words: tuple[str, ...]
    pos: tuple[str, ...]
    frames: tuple[tuple[int, Phrases], ...]


class CorefDocument(NamedTuple):
    id: str
    sentences: tuple[tuple[str, ...], ...]
    speakers: tuple[tuple[str, ...], ...]
    clusters: tuple[tuple[tuple[int, int], ...], ...]


def srl_sentences(doc: Document) -> list[SrlSentence]:
    """The sentences of a document with their predicate-argument columns as phrases."""
    out = []
    for index, sentence in enumerate(doc.sentences):
        propositions(sentence, doc.path)  # the column count and every column's predicate, checked
        frames = []
        for column in range(FIRST_ARGUMENT, len(sentence.rows[0]) - 1):
            where = f"{doc.path}:{sentence.lines[0]}: predicate-argument column {column + 1}"
            raw = tuple(
                (p.type, p.start, p.end) for p in srl.read_phrases([row[column] for row in sentence.rows], where)
            )
            frames.append((predicate_column(sentence, column, doc.path)[0], raw))
        words = tuple(row[3] for row in sentence.rows)
        out.append(SrlSentence(f"{doc.name}:{index}", words, tuple(row[4] for row in sentence.rows), tuple(frames)))
    return out


def coref_document(doc: Document) -> CorefDocument:
    """A document's words and speakers by sentence, and its entities."""
    sentences = tuple(tuple(row[3] for row in s.rows) for s in doc.sentences)
    speakers = tuple(tuple(row[9] if len(row) > 9 else "-" for row in s.rows) for s in doc.sentences)
    return CorefDocument(doc.name, sentences, speakers, tuple(tuple(chain) for chain in chains(doc)))


def bio_tags(phrases: Phrases, length: int) -> list[str]:
    """A predicate's phrases as BIO tags (``B-ARG0``, ``I-ARG0``, ``O``; ``B-V`` for the predicate), the labels most
    span-based SRL models predict; nested phrases have no BIO form (a ValueError)."""
    tags = ["O"] * length
    for label, first, last in sorted(phrases, key=lambda phrase: phrase[1]):
        if any(tag != "O" for tag in tags[first : last + 1]):
            raise ValueError(f"phrase {label} ({first}, {last}) overlaps another: no BIO form")
        tags[first : last + 1] = [f"B-{label}"] + [f"I-{label}"] * (last - first)
    return tags


def bio_phrases(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """BIO tags back to ``(label, first, last)`` phrases; an ``I-X`` that does not continue an ``X`` opens one."""
    phrases: list[tuple[str, int, int]] = []
    for i, tag in enumerate(tags):
        label = tag[2:]
        if tag.startswith("I-") and phrases and phrases[-1][0] == label and phrases[-1][2] == i - 1:
            phrases[-1] = (label, phrases[-1][1], i)
        elif tag != "O":
            phrases.append((label, i, i))
    return phrases


class Conll2012DataModule(pl.LightningDataModule):
    """The CoNLL-2012 English tree under ``data_root``; ``task`` is ``"srl"`` or ``"coref"``."""

    def __init__(self, data_root: str | Path, task: str = "srl", batch_size: int = 8, num_workers: int = 0) -> None:
        super().__init__()
        if task not in TASK_IDS:
            raise HarnessError(f"Conll2012DataModule: task must be one of {', '.join(TASK_IDS)}, not {task!r}")
        self.save_hyperparameters()
        self.data_root, self.task = Path(data_root), task
        self.batch_size, self.num_workers = batch_size, num_workers
        self.splits: dict[str, list] = {}
        self.data_hash: str | None = None

    def folder(self, split: str) -> Path:
        if split not in SPLITS:
            raise HarnessError(f"CoNLL-2012 has no split {split!r}; it has: {', '.join(SPLITS)}")
        path = split_folder(self.data_root, split)
        if not path.is_dir():
            raise HarnessError(f"{path}: no such folder (the CoNLL-2012 {split} split; see tasks.conll2012.data)")
        return path

    def items(self, split: str) -> list:
        """The split's sentences (SRL) or documents (coreference), read once."""
        if split not in self.splits:
            documents = read_documents(self.folder(split))
            if self.task == "srl":
                self.splits[split] = [s for doc in documents for s in srl_sentences(doc)]
            else:
                self.splits[split] = [coref_document(doc) for doc in documents]
        return self.splits[split]

    def setup(self, stage: str | None = None) -> None:
        for split in SPLITS:
            self.items(split)
        if self.data_hash is None:
            names = [p.relative_to(self.data_root).as_posix() for s in SPLITS for p in files(self.folder(s))]
            self.data_hash = files_hash(self.data_root, names)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if self.data_hash is None:
            raise HarnessError("Conll2012DataModule: call setup() before asking for a dataloader")
        return DataLoader(
            self.items(split), batch_size=self.batch_size, shuffle=shuffle, collate_fn=list,
            num_workers=self.num_workers, persistent_workers=self.num_workers > 0,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("development", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """The test split's folder is the key; ids are the sentence (SRL) or document (coreference) ids in order."""
        return Scoring(TASK_IDS[self.task], self.folder("test"), [item.id for item in self.items("test")])
