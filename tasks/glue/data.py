"""GLUE training and dev sets in the layout of the GLUE download script, as a Lightning data module.

Benchmark: Wang et al., "GLUE: A Multi-Task Benchmark and Analysis Platform for Natural Language Understanding"
(arXiv:1804.07461). Files: ``<data_root>/<directory>/train.tsv`` and the dev file(s) of ``tasks.glue.LAYOUTS``
(``dev.tsv``; MNLI ``dev_matched.tsv`` and ``dev_mismatched.tsv``), as ``download_glue_data.py`` writes them.
``train.tsv`` is laid out as the task's dev file, MNLI's excepted:

- CoLA: no header row, the four dev columns; MRPC: the header of ``msr_paraphrase_train.txt`` with its byte-order
  mark (the download script copies it into both files); SST-2, STS-B, QQP, QNLI, RTE, WNLI: the dev header.
- MNLI: 12 columns, ``index … sentence1, sentence2, label1, gold_label``: one annotator label where the dev files
  have five. Columns are found by their header names, so this needs no special case.
- QQP: the ``train.tsv`` distributed until mid-2019 (``QQP.zip``, since replaced by ``QQP-clean.zip``) has rows
  cut in two by line breaks inside a question (nyu-mll/GLUE-baselines#5: line 97,931 holds 3 fields). A training
  row with the wrong number of fields is skipped, with one warning naming the lines, as the ``glue`` loaders of
  TensorFlow Datasets and HuggingFace and ``transformers``' ``QqpProcessor`` skip rows with missing fields. In a dev
  file it is an error, as for the scorer.

``test.tsv`` is not read: GLUE's test labels are private. The validation and test dataloaders both serve the dev
set, and every example keeps its row id (as the scorer numbers rows), so a reproduction writes its submission with
``tasks.glue.score.write_predictions(path, {id: module.label_of(prediction)})``. ``task="glue-mnli"`` trains once on
MNLI and tests on both dev sets (two test dataloaders: matched, then mismatched; validation on matched).

Reading is the scorer's (:mod:`tasks.glue.score`): UTF-8 with the byte-order mark skipped, quote characters as
text (``csv.QUOTE_NONE``), and a missing file or column, a wrong field count, a bad or duplicate id, or a label not
of the task raises :class:`HarnessError` naming the file and line. An example is ``(id, text_a, text_b, label)``:
``text_b`` is ``None`` for the single-sentence tasks (CoLA, SST-2), ``label`` the class index in the order of
``LAYOUTS[task].labels`` (STS-B: the float score).

Batches are dicts. Without a tokenizer: ``ids`` long (N,), ``text_a`` list of N strings, ``text_b`` a list or
``None``, ``labels`` long (N,) (STS-B float (N,)). Nothing is tokenized or cleaned: ULMFiT, ELMo, GPT and XLNet each
bring their own tokenizer and input format. With ``tokenizer="module:factory"`` (imported on use, called with no
arguments) the factory returns ``encode(text_a, text_b) -> list[int]`` that lays out the whole input, special tokens
included (GPT's start/delimiter/extract, XLNet's ``A <sep> B <sep> <cls>`` ...); sequences longer than
``max_length`` keep their first ``max_length`` ids (an encoder whose format ends in a special token, as XLNet's
does, returns no more than that itself), and the batch holds ``input_ids`` long (N, T) padded with
``encode.pad_token_id`` (default 0) and ``attention_mask`` long (N, T) instead of the texts, T the longest sequence
of the batch. ``tokenizer`` may also be the path of a stored tokenizer (``results/tokenizers/<sha256>.json``, see
:mod:`tasks.tokenizers`): any :class:`tasks.tokenizers.Tokenizer` is such an encoder, its template the layout.
:func:`whitespace_tokenizer` (:mod:`tasks.tokenizers.words`, imported here under its old path) is a reference
encoder for tests and the smoke tier, not any paper's.

``data_hash`` (after ``setup()``) is the sha256 of the ``sha256sum``-style manifest (``<sha256>  <path relative to
data_root>`` lines) of the files read.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.predictions import Scoring
from harness.records import files_hash
from tasks.glue import LAYOUTS, GlueLayout
from tasks.glue.score import Label, _header, _labelled_rows, _read_tsv, layout
from tasks.tokenizers import make_tokenizer
from tasks.tokenizers.words import WhitespaceTokenizer, whitespace_tokenizer  # noqa: F401 (their old import path)

MNLI_BOTH = "glue-mnli"  # train on MNLI, test on its matched and mismatched dev sets
# (first, second) text column of each task; the names are those of the header (CoLA: of LAYOUTS' column names)
TEXT_COLUMNS: dict[str, tuple[str, str | None]] = {
    "glue-cola": ("sentence", None),
    "glue-sst2": ("sentence", None),
    "glue-mrpc": ("#1 String", "#2 String"),
    "glue-stsb": ("sentence1", "sentence2"),
    "glue-qqp": ("question1", "question2"),
    "glue-mnli-m": ("sentence1", "sentence2"),
    "glue-mnli-mm": ("sentence1", "sentence2"),
    "glue-qnli": ("question", "sentence"),
    "glue-rte": ("sentence1", "sentence2"),
    "glue-wnli": ("sentence1", "sentence2"),
}
_SHOWN = 5  # line numbers quoted in a warning before "..."


class GlueExample(NamedTuple):
    id: int
    text_a: str
    text_b: str | None
    label: int | float


def dev_tasks(task: str) -> tuple[str, ...]:
    """The scorer task ids of the dev sets a data-module task tests on: two for ``glue-mnli``, else the task."""
    return ("glue-mnli-m", "glue-mnli-mm") if task == MNLI_BOTH else (layout(task).task_id,)


# --- reading -------------------------------------------------------------------------------------------------------


def _well_formed(rows: list[tuple[int, list[str]]], width: int, path: Path) -> list[tuple[int, list[str]]]:
    """Training rows with ``width`` fields; the others are skipped with a warning (see the module docstring)."""
    bad = [line for line, fields in rows if len(fields) != width]
    if bad:
        shown = ", ".join(map(str, bad[:_SHOWN])) + (", ..." if len(bad) > _SHOWN else "")
        warnings.warn(
            f"{path}: skipped {len(bad)} training row(s) without {width} tab-separated fields (lines {shown})",
            stacklevel=2,
        )
    return [(line, fields) for line, fields in rows if len(fields) == width]


def _example(spec: GlueLayout, header: list[str], row_id: int, label: Label, fields: list[str]) -> GlueExample:
    first, second = TEXT_COLUMNS[spec.task_id]
    index = float(label) if spec.labels is None else spec.labels.index(str(label))
    text_b = fields[header.index(second)] if second is not None else None
    return GlueExample(row_id, fields[header.index(first)], text_b, index)


def read_examples(task_id: str, path: Path | str, train: bool = False) -> list[GlueExample]:
    """The examples of one GLUE TSV (``train.tsv`` when ``train``, else the dev file), in file order."""
    spec, path = layout(task_id), Path(path)
    rows = _read_tsv(path)
    if spec.has_header:
        first, second = TEXT_COLUMNS[task_id]
        wanted = [c for c in (spec.id_column, spec.label_column, first, second) if c is not None]
        header = _header(rows, path, wanted, f"the {spec.directory}/{path.name} layout of the GLUE download script")
        rows = rows[1:]
    else:
        header = list(spec.columns)
    if train:
        rows = _well_formed(rows, len(header), path)
    id_at = header.index(spec.id_column) if spec.id_column else None
    labelled = _labelled_rows(spec, path, rows, len(header), id_at, header.index(spec.label_column))
    fields = dict(rows)  # line -> fields
    return [_example(spec, header, row_id, label, fields[line]) for row_id, (label, line) in labelled.items()]


def split_files(task: str) -> dict[str, tuple[str, str]]:
    """Split name -> (scorer task id, path relative to the data root): ``train`` and the dev split(s)."""
    tasks = dev_tasks(task)
    files = {"train": (tasks[0], f"{LAYOUTS[tasks[0]].directory}/train.tsv")}
    for task_id in tasks:
        spec = LAYOUTS[task_id]
        files[spec.dev_file.removesuffix(".tsv")] = (task_id, f"{spec.directory}/{spec.dev_file}")
    return files


# --- tokenizing ----------------------------------------------------------------------------------------------------
# the reference encoder is tasks.tokenizers' one whitespace tokenizer (WhitespaceTokenizer()(text_a, text_b) -> ids)


def collate(
    examples: Sequence[GlueExample], encode: Callable[[str, str | None], Sequence[int]] | None, max_length: int
) -> dict[str, Any]:
    """One batch (see the module docstring for its keys and shapes)."""
    labels = [example.label for example in examples]
    batch: dict[str, Any] = {
        "ids": torch.tensor([example.id for example in examples], dtype=torch.long),
        "labels": torch.tensor(labels, dtype=torch.float32 if isinstance(labels[0], float) else torch.long),
    }
    if encode is None:
        batch["text_a"] = [example.text_a for example in examples]
        batch["text_b"] = None if examples[0].text_b is None else [example.text_b for example in examples]
        return batch
    sequences = [list(encode(example.text_a, example.text_b))[:max_length] for example in examples]
    width = max(map(len, sequences))
    batch["input_ids"] = torch.full((len(sequences), width), getattr(encode, "pad_token_id", 0), dtype=torch.long)
    batch["attention_mask"] = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, ids in enumerate(sequences):
        batch["input_ids"][row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        batch["attention_mask"][row, : len(ids)] = 1
    return batch


# --- the data module -----------------------------------------------------------------------------------------------


class GlueDataModule(pl.LightningDataModule):
    """One GLUE task's ``train.tsv`` and dev set(s) from ``data_root`` (see the module docstring).

    Args:
        data_root: the GLUE root (``glue_data/``), holding ``CoLA/``, ``MNLI/`` ...
        task: ``glue-cola`` ... ``glue-wnli`` (a dev set's task id), or ``glue-mnli`` for both MNLI dev sets.
        tokenizer: ``"module:factory"``; the factory, called with no arguments, returns ``encode(text_a, text_b)``;
            or the path of a stored tokenizer (``tasks.tokenizers``).
        max_length: longest encoded sequence kept (tokenized batches only).
        batch_size: examples per batch.
        num_workers: data-loader worker processes.
    """

    def __init__(
        self,
        data_root: str | Path,
        task: str,
        tokenizer: str | None = None,
        max_length: int = 128,
        batch_size: int = 32,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.files = split_files(task)  # checks the task id now
        self.task = task
        self.data_root = Path(data_root)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.spec = LAYOUTS[dev_tasks(task)[0]]
        self.splits: dict[str, list[GlueExample]] = {}
        self.data_hash: str | None = None
        self._encode: Callable[[str, str | None], Sequence[int]] | None = None

    @property
    def dev_splits(self) -> tuple[str, ...]:
        """``("dev",)``, or MNLI's ``("dev_matched",)``, ``("dev_mismatched",)`` or both; test dataloader order."""
        return tuple(split for split in self.files if split != "train")

    @property
    def labels(self) -> tuple[str, ...] | None:
        """Class labels as the data writes them, in class-index order; ``None`` for STS-B's scores."""
        return self.spec.labels

    @property
    def num_classes(self) -> int:
        """Number of classes; 1 for STS-B (a regression)."""
        return len(self.spec.labels) if self.spec.labels is not None else 1

    def label_of(self, prediction: int | float) -> Label:
        """A predicted class index (STS-B: score) as the submission file writes it."""
        return self.spec.labels[int(prediction)] if self.spec.labels is not None else float(prediction)

    def examples(self, split: str) -> list[GlueExample]:
        """The examples of ``train`` or a dev split, read once."""
        if split not in self.files:
            raise HarnessError(f"{self.task} has no split {split!r}; it has: {', '.join(self.files)}")
        if split not in self.splits:
            task_id, relative = self.files[split]
            self.splits[split] = read_examples(task_id, self.data_root / relative, train=split == "train")
        return self.splits[split]

    def verify(self) -> None:
        """Read every file; raise :class:`HarnessError` naming the file (and line) at fault."""
        for split in self.files:
            self.examples(split)

    def setup(self, stage: str | None = None) -> None:
        self.verify()
        if self.data_hash is None:
            self.data_hash = files_hash(self.data_root, [relative for _, relative in self.files.values()])
        if self.tokenizer is not None and self._encode is None:
            self._encode = make_tokenizer(self.tokenizer)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if self.data_hash is None:
            raise HarnessError("GlueDataModule: call setup() before asking for a dataloader")
        return DataLoader(
            self.examples(split),
            batch_size=self.batch_size,
            shuffle=shuffle,
            num_workers=self.num_workers,
            collate_fn=functools.partial(collate, encode=self._encode, max_length=self.max_length),
            persistent_workers=self.num_workers > 0,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """The (first: MNLI matched) dev set; GLUE's test labels are private."""
        return self._loader(self.dev_splits[0], shuffle=False)

    def test_dataloader(self) -> DataLoader | list[DataLoader]:
        """The dev set, or both MNLI dev sets (matched, mismatched) for ``glue-mnli``."""
        loaders = [self._loader(split, shuffle=False) for split in self.dev_splits]
        return loaders[0] if len(loaders) == 1 else loaders

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How test loader ``dataloader_idx``'s predictions are scored: its dev TSV under the data root, ids = the
        rows' ids in file order, labels = the task's class labels."""
        split = self.dev_splits[dataloader_idx]
        task_id, relative = self.files[split]
        return Scoring(task_id, self.data_root / relative, [e.id for e in self.examples(split)], labels=self.labels)
