"""IMDb, Yelp-2, Yelp-5, Amazon-2, Amazon-5, AG News, DBpedia and TREC-6 in their distributed formats, as a Lightning
data module.

The formats are described in ``tasks.text_classification``. Readers return :class:`Example` ``(id, text, label)``
lists, the label a 0-based class index in the order of ``LAYOUTS[task].classes``:

- IMDb: every ``<split>/neg/*.txt`` then ``<split>/pos/*.txt``, each folder in natural order of the file name
  (``0_3``, ``1_1``, ``2_1``, ``10_2`` ...); id ``<neg|pos>/<file stem>``; text the file's UTF-8 contents as they
  are (the ``<br />`` tags included).
- Zhang et al. CSVs: id = the 0-based row number; text = the row's text fields joined by one space, otherwise as
  the file has them (the ``\\n`` escape and AG News's HTML entities left alone).
- TREC: id = the 0-based question number; text = the question as in the file (tokens separated by spaces).

Nothing is tokenized or cleaned: ULMFiT's, ELMo's and GPT's preprocessing differ and belong to the reproductions.
Batches are ``(texts, labels)``: a list of strings and a long (N,) tensor, or ``(tokenizer(texts), labels)``
when a ``tokenizer`` is given (a callable taking the list of strings, or its ``"module:attribute"`` import path).
A :class:`tasks.tokenizers.Tokenizer` (or the path of a stored one, ``results/tokenizers/<sha256>.json``) gives
``tokenizer.encode_batch(texts)``: a dict of ``input_ids``, ``attention_mask``, ``token_type_ids`` (N, T) and
``offsets`` (N, T, 2).

A few-label subset (``subset_percent < 100``) keeps ``ceil(k% * n_class)`` training examples of every class with
:mod:`tasks.imagenet.subsets` (list file: ``<id> <class index>`` lines); ``data_hash`` is its sha256 (of the whole
training list without a subset). None of these datasets has an official validation split, so the validation and
test dataloaders both serve the test split (ULMFiT and UDA report test error); a reproduction that tunes on held
out training data takes it from ``train_examples`` itself.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.imagenet.subsets import format_subset, sample_subset, subset_size, write_list
from tasks.text_classification import LAYOUTS, TextLayout
from tasks.tokenizers import batch_tokenizer


class Example(NamedTuple):
    id: str
    text: str
    label: int


def layout(task_id: str) -> TextLayout:
    if task_id not in LAYOUTS:
        raise HarnessError(f"unknown text-classification dataset {task_id!r}; known: {', '.join(LAYOUTS)}")
    return LAYOUTS[task_id]


def dataset_folder(root: Path, spec: TextLayout) -> Path:
    """``root/<archive folder>`` or ``root`` itself, whichever holds the test split."""
    root = Path(root)
    for folder in (root / spec.folder, root):
        if (folder / spec.test).exists():
            return folder
    raise HarnessError(f"{root / spec.folder / spec.test}: missing (also looked for {root / spec.test})")


# --- readers -----------------------------------------------------------------------------------------------------


def _natural_key(name: str) -> list[tuple[int, Any]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name)]


def _read_text(path: Path, encoding: str = "utf-8") -> str:
    try:
        return path.read_bytes().decode(encoding)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not {encoding} text ({exc.reason} at byte {exc.start})") from None


def read_imdb(folder: Path, classes: Sequence[str]) -> list[Example]:
    """One IMDb split folder (``aclImdb/train`` or ``aclImdb/test``)."""
    examples = []
    for label, name in enumerate(classes):
        sub = folder / name
        if not sub.is_dir():
            raise HarnessError(f"{sub}: missing (expected {name}/<id>_<rating>.txt reviews)")
        paths = sorted(sub.glob("*.txt"), key=lambda path: _natural_key(path.stem))
        if not paths:
            raise HarnessError(f"{sub}: no .txt reviews")
        examples.extend(Example(f"{name}/{path.stem}", _read_text(path), label) for path in paths)
    return examples


def read_zhang_csv(path: Path, num_classes: int) -> list[Example]:
    """A Zhang et al. (2015) ``train.csv`` / ``test.csv``: class index from 1, then quoted text fields."""
    examples = []
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            for row in reader:
                if not row:
                    continue
                where = f"{path}:{reader.line_num}"
                if len(row) < 2 or not row[0].strip().isdigit() or not 1 <= int(row[0]) <= num_classes:
                    raise HarnessError(f"{where}: expected a class index in 1..{num_classes} and text fields")
                text = " ".join(field.strip() for field in row[1:] if field.strip())
                examples.append(Example(str(len(examples)), text, int(row[0]) - 1))
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: not readable as UTF-8 CSV: {exc}") from None
    return examples


def read_trec(path: Path, classes: Sequence[str]) -> list[Example]:
    """A TREC ``.label`` file: ``COARSE:fine question`` lines, read as latin-1 (the files are not all UTF-8)."""
    examples = []
    for number, line in enumerate(_read_text(path, "latin-1").split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        label, _, question = line.partition(" ")
        coarse, colon, fine = label.partition(":")
        if not colon or coarse not in classes or not fine or not question.strip():
            raise HarnessError(
                f"{path}:{number}: expected 'COARSE:fine question' with COARSE one of {', '.join(classes)}; "
                f"found {line[:60]!r}"
            )
        examples.append(Example(str(len(examples)), question.strip(), classes.index(coarse)))
    return examples


def read_split(task_id: str, root: Path, split: str) -> list[Example]:
    """The ``train`` or ``test`` examples of ``task_id`` under ``root`` (see the module docstring)."""
    spec = layout(task_id)
    if split not in ("train", "test"):
        raise HarnessError(f"{task_id} has no split {split!r}; it has: train, test")
    path = dataset_folder(root, spec) / (spec.train if split == "train" else spec.test)
    if spec.format == "imdb":
        examples = read_imdb(path, spec.classes)
    elif spec.format == "trec":
        examples = read_trec(path, spec.classes)
    else:
        examples = read_zhang_csv(path, len(spec.classes))
    if not examples:
        raise HarnessError(f"{path}: no examples")
    return examples


# --- extra unlabelled text (UDA, arXiv 1904.12848v6, Appendix E.1) -----------------------------------------------

UNLABELLED = -1  # the label of an unlabelled example


def read_unlabelled(path: Path, limit: int | None = None) -> list[Example]:
    """Unlabelled texts (label :data:`UNLABELLED`), the first ``limit`` of them (``None``: all), from

    - a folder: its ``*.txt`` files in natural order of the name, one text each, as IMDb's ``aclImdb/train/unsup``
      (50,000 reviews); id ``unsup/<file stem>``;
    - a ``.json`` / ``.jsonl`` file (or ``.json.gz`` / ``.jsonl.gz``): one review object per line, as McAuley et al.'s
      Amazon product reviews (SIGIR 2015, UDA's external data for Yelp and Amazon): text = ``summary`` then
      ``reviewText``, joined by a space, as the Zhang et al. Amazon CSVs join title and review; lines in the looser
      format of the larger dumps (Python dict literals) are read too; id ``unsup/<line number from 0>``;
    - any other file (gzipped or not): one text per line, blank lines skipped; id ``unsup/<line number from 0>``.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.txt"), key=lambda f: _natural_key(f.stem))[:limit]
        if not files:
            raise HarnessError(f"{path}: no .txt texts in the unlabelled folder")
        return [Example(f"unsup/{f.stem}", _read_text(f), UNLABELLED) for f in files]
    reviews = path.name.removesuffix(".gz").endswith((".json", ".jsonl"))
    examples: list[Example] = []
    for number, line in _lines(path):
        if limit is not None and len(examples) >= limit:
            break
        text = _review_text(line, f"{path}:{number + 1}") if reviews else line.strip()
        if text:
            examples.append(Example(f"unsup/{number}", text, UNLABELLED))
    if not examples:
        raise HarnessError(f"{path}: no unlabelled texts")
    return examples


def _lines(path: Path) -> Any:
    """``(number from 0, line)`` of a UTF-8 text file, gzipped when its name ends in ``.gz``."""
    import gzip

    try:
        handle = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")
        with handle:
            yield from enumerate(handle)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _review_text(line: str, where: str) -> str:
    import ast
    import json

    if not line.strip():
        return ""
    try:
        review = json.loads(line)
    except json.JSONDecodeError:
        try:
            review = ast.literal_eval(line.strip())
        except (ValueError, SyntaxError):
            raise HarnessError(f"{where}: neither JSON nor a Python dict literal") from None
    if not isinstance(review, dict) or not isinstance(review.get("reviewText", ""), str):
        raise HarnessError(f"{where}: expected an object with a reviewText string")
    return " ".join(str(review[k]).strip() for k in ("summary", "reviewText") if str(review.get(k, "")).strip())


# --- the data module ---------------------------------------------------------------------------------------------


class ExampleDataset(Dataset):
    """``(text, label)`` pairs."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.texts = [example.text for example in examples]
        self.labels = torch.tensor([example.label for example in examples], dtype=torch.long)

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int) -> tuple[str, int]:
        return self.texts[index], int(self.labels[index])


def collate(items: Sequence[tuple[str, int]], tokenizer: Callable[[list[str]], Any] | None = None) -> tuple[Any, Any]:
    texts = [text for text, _ in items]
    labels = torch.tensor([label for _, label in items], dtype=torch.long)
    return (tokenizer(texts) if tokenizer is not None else texts), labels


def example_loader(
    owner: object, examples: Sequence[Example] | None, batch_size: int, num_workers: int, tokenizer: Any, shuffle: bool
) -> DataLoader:
    """Batches of ``examples`` as :func:`collate` makes them; ``examples`` None means ``owner`` (a data module) was
    not set up yet."""
    if examples is None:
        raise HarnessError(f"{type(owner).__name__}: call setup() before asking for a dataloader")
    return DataLoader(
        ExampleDataset(examples),
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        collate_fn=functools.partial(collate, tokenizer=tokenizer),
        persistent_workers=num_workers > 0,
    )


class TextClassificationDataModule(pl.LightningDataModule):
    """One of ``imdb``, ``yelp-2``, ``yelp-5``, ``amazon-2``, ``amazon-5``, ``ag-news``, ``dbpedia``, ``trec-6`` from
    ``data_root``.

    Args:
        dataset: the task id.
        data_root: the folder the dataset's archive unpacks to (``aclImdb``, ``ag_news_csv``, ...) or its parent;
            for TREC the folder holding ``train_5500.label`` and ``TREC_10.label`` (or its parent, as ``trec/``).
        batch_size: examples per batch.
        num_workers: data-loader worker processes.
        tokenizer: a callable (or its ``"module:attribute"`` path) applied to each batch's list of texts, or a
            :class:`tasks.tokenizers.Tokenizer` or the path of a stored one (see the module docstring).
        subset_percent: train on this percentage of each class (see :mod:`tasks.imagenet.subsets`).
        subset_seed: seed of the subset's ranking.
        subset_file: where to write the training list file (optional; ``data_hash`` is the same either way).
    """

    def __init__(
        self,
        dataset: str,
        data_root: str | Path,
        batch_size: int = 32,
        num_workers: int = 0,
        tokenizer: str | Callable[[list[str]], Any] | None = None,
        subset_percent: float = 100.0,
        subset_seed: int = 0,
        subset_file: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["tokenizer"] if callable(tokenizer) else None)
        self.spec = layout(dataset)
        subset_size(1, subset_percent)  # validates the percentage now
        self.data_root = Path(data_root)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.tokenizer = batch_tokenizer(tokenizer)
        self.subset_percent = float(subset_percent)
        self.subset_seed = subset_seed
        self.subset_file = Path(subset_file) if subset_file is not None else None
        self.splits: dict[str, list[Example]] = {}
        self.data_hash: str | None = None
        self.train_examples: list[Example] | None = None

    @property
    def classes(self) -> tuple[str, ...]:
        return self.spec.classes

    @property
    def num_classes(self) -> int:
        return len(self.spec.classes)

    def examples(self, split: str) -> list[Example]:
        """All examples of ``train`` or ``test``, read once."""
        if split not in self.splits:
            self.splits[split] = read_split(self.spec.task_id, self.data_root, split)
        return self.splits[split]

    def verify(self) -> None:
        """Read both splits; raise :class:`HarnessError` naming the file (and line) at fault."""
        self.examples("train")
        self.examples("test")

    def setup(self, stage: str | None = None) -> None:
        if self.train_examples is not None:
            return
        train = self.examples("train")
        items = [(example.id, str(example.label)) for example in train]
        if self.subset_percent < 100.0:
            items = sample_subset(items, self.subset_percent, self.subset_seed)
        if self.subset_file is not None:
            self.data_hash = write_list(items, self.subset_file)
        else:
            self.data_hash = hashlib.sha256(format_subset(items)).hexdigest()
        kept = {item_id for item_id, _ in items}
        self.train_examples = [example for example in train if example.id in kept]

    def _loader(self, examples: Sequence[Example] | None, shuffle: bool) -> DataLoader:
        return example_loader(self, examples, self.batch_size, self.num_workers, self.tokenizer, shuffle)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_examples, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """The test split: there is no official validation split (see the module docstring)."""
        return self._loader(self.examples("test"), shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.examples("test"), shuffle=False)

    def test_ids(self) -> list[str]:
        """Test example ids in dataloader order, as the scorer's CSV files use them."""
        return [example.id for example in self.examples("test")]

    def write_references(self, path: Path) -> Path:
        """Write the test labels as the scorer's ``id,label`` references CSV (labels are class indices)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["id", "label"])
            writer.writerows((example.id, example.label) for example in self.examples("test"))
        return path

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: references ``folder/references.csv`` (the test labels),
        ids = the dataset's example ids, labels = class indices."""
        references = self.write_references(Path(folder) / "references.csv")
        return Scoring(self.spec.task_id, references, self.test_ids())
