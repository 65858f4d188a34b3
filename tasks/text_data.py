"""One data module and one accuracy metric for the labelled text tasks read from their distributed formats: SNLI and
SciTail (``tasks.entailment``), SST-5 (``tasks.sst``), RACE and Story Cloze (``tasks.multiple_choice``), DPRD
(``tasks.dprd``).

A family describes each task with a :class:`TextTaskSpec`: its split files, a reader giving :class:`Record` s
(an id as the task's prediction file spells it, the raw text fields, the label's index in ``labels``), and what the
scorer takes as references. Nothing is tokenized: a batch is ``(fields, labels)``, ``fields`` a dict of field name
-> list (one entry per example, strings, or for ``options`` a list of strings per example), ``labels`` a long
``(N,)`` tensor. With a ``tokenizer``:

- a :class:`tasks.tokenizers.Tokenizer` (or the path of a stored one, ``results/tokenizers/<sha256>.json``) gives
  ``encode_batch`` of the batch, laid out by its template: one text (SST-5); the pair premise, hypothesis
  (entailment); for multiple choice one pair per option, ``"<context> <question>"`` and the option, every tensor
  reshaped to ``(N, options, ...)``;
- any other callable (or its ``"module:attribute"`` path) gets the columns in the spec's field order,
  ``tokenizer(*columns)``.

Loaders: ``train`` from the spec's training split (shuffled), validation from its dev split, test from its test
split, or one test loader per split of ``test_splits`` (e.g. ``[dev, test]``, where a paper reports both);
``scoring`` says how each test loader's predictions are scored (ids in loader order, ``labels`` the answer
spellings; references: the test split's as the spec names them, another split's one file). ``data_hash`` (after
``setup``): :func:`tasks.text_files.files_hash` of every file of the splits served, named relative to the dataset
folder.

:class:`AnswerAccuracy` accumulates accuracy (percent) from scores ``(N, C)`` (or predicted indices ``(N,)``) and
targets, keeps the predicted indices, and writes them as the task's prediction CSV
(:func:`tasks.text_files.prediction_columns`), so a run's kept predictions re-score to its number.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from harness.errors import HarnessError
from harness.predictions import Scoring, check_count
from harness.registry import load_object
from tasks.loaders import make_loader
from tasks.text_files import files_hash, prediction_columns, write_answers
from tasks.tokenizers import Tokenizer, is_artifact_path, load_tokenizer

# task id -> the module whose SPECS describe it (imported on use)
FAMILIES = {
    "snli": "tasks.entailment.data",
    "scitail": "tasks.entailment.data",
    "sst-5": "tasks.sst.data",
    "race": "tasks.multiple_choice.data",
    "race-m": "tasks.multiple_choice.data",
    "race-h": "tasks.multiple_choice.data",
    "story-cloze": "tasks.multiple_choice.data",
    "dprd": "tasks.dprd.data",
}


class Record(NamedTuple):
    """One example: its id, its raw text fields (in the spec's field order) and its label's index."""

    id: str
    fields: tuple[Any, ...]
    label: int


@dataclass(frozen=True)
class TextTaskSpec:
    """How a labelled text task is laid out and read.

    ``folder(root)``: the dataset folder under ``root`` (the folder the archive unpacks to, or ``root``);
    ``files(folder, split)``: the split's files relative to that folder; ``read(folder, split)``: the split's
    records; ``references(folder)``: what the scorer takes for the test split (its file, or its folder);
    ``splits``: which split the train / val / test loaders serve.
    """

    task: str
    fields: tuple[str, ...]
    labels: tuple[str, ...]
    folder: Callable[[Path], Path]
    files: Callable[[Path, str], list[str]]
    read: Callable[[Path, str], list[Record]]
    references: Callable[[Path], Path]
    splits: tuple[str, str, str] = ("train", "dev", "test")


def spec(task: str) -> TextTaskSpec:
    """The :class:`TextTaskSpec` of a task id of :data:`FAMILIES`."""
    if task not in FAMILIES:
        raise HarnessError(f"unknown text task {task!r}; known: {', '.join(FAMILIES)}")
    return importlib.import_module(FAMILIES[task]).SPECS[task]


class RecordDataset(Dataset):
    """The records of one split, served one at a time."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.records = list(records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> Record:
        return self.records[index]


def encode_columns(tokenizer: Tokenizer, fields: Sequence[str], columns: list[list[Any]]) -> dict[str, Tensor]:
    """A :class:`Tokenizer`'s padded batch of one text, a sentence pair, or (multiple choice) a pair per option."""
    if "options" not in fields:
        return tokenizer.encode_batch(columns[0], pairs=columns[1] if len(columns) > 1 else None)
    contexts, questions, options = columns
    firsts = [f"{c} {q}".strip() for c, q, row in zip(contexts, questions, options, strict=True) for _ in row]
    encoded = tokenizer.encode_batch(firsts, pairs=[option for row in options for option in row])
    count, choices = len(options), len(options[0])
    return {key: value.reshape(count, choices, *value.shape[1:]) for key, value in encoded.items()}


def collate(records: Sequence[Record], fields: Sequence[str], tokenizer: Callable[..., Any] | None = None) -> tuple:
    columns = [[record.fields[i] for record in records] for i in range(len(fields))]
    labels = torch.tensor([record.label for record in records], dtype=torch.long)
    if isinstance(tokenizer, Tokenizer):
        return encode_columns(tokenizer, fields, columns), labels
    if tokenizer is not None:
        return tokenizer(*columns), labels
    return dict(zip(fields, columns, strict=True)), labels


def text_tokenizer(value: Any) -> Callable[..., Any] | None:
    """The ``tokenizer`` argument as an object: ``None``, a callable or :class:`Tokenizer`, a ``"module:attribute"``
    naming one, or the path of a stored tokenizer (loaded with its hash checked)."""
    if is_artifact_path(value):
        return load_tokenizer(value)
    return load_object(value) if isinstance(value, str) else value


class TextTaskDataModule(pl.LightningDataModule):
    """A labelled text task of :data:`FAMILIES` from ``data_root``, in its distributed format.

    Args:
        task: the task id (``snli``, ``scitail``, ``sst-5``, ``race``, ``race-m``, ``race-h``, ``story-cloze``,
            ``dprd``).
        data_root: the dataset folder or its parent (each family's docstring names the folder).
        batch_size: examples per batch.
        num_workers: data-loader worker processes.
        tokenizer: a :class:`tasks.tokenizers.Tokenizer` or the path of a stored one, or a callable (or its
            ``"module:attribute"`` path) applied to each batch's columns (see the module docstring).
        test_splits: the splits the test loaders serve, one loader each, in order (default: the spec's test split).
    """

    def __init__(
        self,
        task: str,
        data_root: str | Path,
        batch_size: int = 32,
        num_workers: int = 0,
        tokenizer: str | Callable[..., Any] | None = None,
        test_splits: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["tokenizer"] if callable(tokenizer) else None)
        self.spec = spec(task)
        self.test_splits = tuple(test_splits) if test_splits else self.spec.splits[2:]
        self.folder = self.spec.folder(Path(data_root))
        self.batch_size, self.num_workers = batch_size, num_workers
        self.tokenizer = text_tokenizer(tokenizer)
        self.cache: dict[str, list[Record]] = {}
        self.data_hash: str | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        return self.spec.labels

    @property
    def num_classes(self) -> int:
        return len(self.spec.labels)

    def records(self, split: str) -> list[Record]:
        """The records of one of the spec's splits, read once."""
        if split not in self.cache:
            self.cache[split] = self.spec.read(self.folder, split)
        return self.cache[split]

    def verify(self) -> None:
        """Read every split; raise :class:`HarnessError` naming the file (and line) at fault."""
        for split in self._splits():
            self.records(split)

    def _splits(self) -> list[str]:
        return list(dict.fromkeys(self.spec.splits + self.test_splits))

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is None:
            self.verify()
            names = [name for split in self._splits() for name in self.spec.files(self.folder, split)]
            self.data_hash = files_hash(self.folder, names)

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        dataset = RecordDataset(self.records(split)) if self.data_hash is not None else None
        collate_fn = functools.partial(collate, fields=self.spec.fields, tokenizer=self.tokenizer)
        return make_loader(
            dataset,
            batch_size=self.batch_size,
            num_workers=self.num_workers,
            shuffle=shuffle,
            owner=type(self).__name__,
            collate_fn=collate_fn,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.spec.splits[0], shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.spec.splits[1], shuffle=False)

    def test_dataloader(self) -> DataLoader | list[DataLoader]:
        loaders = [self._loader(split, shuffle=False) for split in self.test_splits]
        return loaders[0] if len(loaders) == 1 else loaders

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """Test loader ``dataloader_idx`` scores against its split's own file (or, for the test split, what the spec
        names): ids as the prediction file spells them, labels the answers as the references spell them."""
        split = self.test_splits[dataloader_idx]
        ids = [record.id for record in self.records(split)]
        return Scoring(self.spec.task, self._references(split), ids, self.spec.labels)

    def _references(self, split: str) -> Path:
        if split == self.spec.splits[2]:
            return self.spec.references(self.folder)
        files = self.spec.files(self.folder, split)
        if len(files) > 1 and (self.folder / split).is_dir():  # a split of many files in its own folder (RACE/dev)
            return self.folder / split
        if len(files) != 1:
            raise HarnessError(f"{self.spec.task}: split {split!r} has {len(files)} files; only one can be scored")
        return self.folder / files[0]


class AnswerAccuracy(Metric):
    """Accuracy in percent (``{"accuracy": ...}``) that keeps every predicted answer index, in the order seen."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("correct", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0), dist_reduce_fx="sum")
        self.add_state("guesses", default=[], dist_reduce_fx="cat")

    def update(self, preds: Tensor, target: Tensor) -> None:
        """``preds``: scores ``(N, C)`` (the arg-max is the answer) or answer indices ``(N,)``; ``target`` ``(N,)``."""
        guesses = preds.detach().argmax(dim=1) if preds.ndim == 2 else preds.detach().long()
        self.correct = self.correct + (guesses == target).sum()
        self.total = self.total + target.numel()
        self.guesses.append(guesses.cpu())

    def compute(self) -> dict[str, Tensor]:
        return {"accuracy": 100.0 * self.correct.double() / self.total}

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/predictions.csv`` in the task's prediction format, one row per example seen, in loader order."""
        guesses = dim_zero_cat(self.guesses).tolist() if self.guesses else []
        if not guesses:
            raise HarnessError("AnswerAccuracy: no predictions kept")
        check_count(len(guesses), scoring)
        rows = [(str(item_id), scoring.label(g)) for item_id, g in zip(scoring.ids, guesses, strict=False)]
        return {"predictions": write_answers(Path(folder) / "predictions.csv", prediction_columns(scoring.task), rows)}
