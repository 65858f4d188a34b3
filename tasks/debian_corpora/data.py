"""Lightning data modules over the built Debian corpora (see ``tasks.debian_corpora`` and docs/corpora.md).

- :class:`DebianLMDataModule` reads ``wiki.{train,valid,test}.tokens``: it is WikiText-103's data module
  (:class:`tasks.language_modeling.wikitext.WikiTextDataModule`, whose docstring gives the stream, vocabulary and
  window rules) under the task id ``debian-lm``.
- :class:`DebianTextDataModule` reads a classification corpus (``wordnet-lexname``, ``fortune-category``) in
  Zhang et al.'s CSV layout with ``tasks.text_classification.data.read_zhang_csv`` (ids = 0-based row numbers,
  labels = 0-based class indices, class names from ``classes.txt``). ``per_class = N`` keeps N training examples
  of every class (all of a smaller class), drawn by seed as :mod:`tasks.imagenet.subsets` draws ImageNet's
  few-label subsets: within each class the ids are ranked by ``sha256("<seed>:<id>")`` and the first N kept, so
  subsets with one seed are nested (N=10 lies inside N=20). Batches are ``(texts, labels)`` (or
  ``(tokenizer(texts), labels)``), as ``tasks.text_classification`` serves them. The validation and test loaders
  serve ``test.csv`` (there is no validation split, as in the Zhang et al. datasets).

``data_hash`` (after ``setup``): the LM module's is the corpus's (sha256 of its three files,
``tasks.debian_corpora.corpus.folder_hash``, the value ``corpus.json`` records); the classification module's is
the sha256 of the corpus hash, a new line, and the training list (``<id> <label>`` lines sorted by id, the list
file of :mod:`tasks.imagenet.subsets`), so it names both the corpus and the subset.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.debian_corpora.corpus import CLASSIFICATION_FILES, folder_hash
from tasks.imagenet.subsets import format_subset, write_list
from tasks.language_modeling import wikitext
from tasks.language_modeling.wikitext import WikiTextDataModule, build_vocabulary, read_tokens
from tasks.text_classification.data import Example, example_loader, read_zhang_csv
from tasks.tokenizers import batch_tokenizer

__all__ = [
    "DebianLMDataModule",
    "DebianTextDataModule",
    "build_vocabulary",
    "read_tokens",
    "lm_file",
    "prepare_text",
    "prepare_corpus",
    "prepare_smoke",
]

# --- building the corpora (a tier config's ``prepare``) ------------------------------------------------------------


def prepare_text(root: Path) -> None:
    """Build the three text corpora under ``root`` from the installed Debian packages unless all three are there
    (about 20 s; ``corpus.build_text``)."""
    from tasks.debian_corpora.corpus import CORPORA, build_text

    if not all((Path(root) / corpus / "corpus.json").is_file() for corpus in CORPORA):
        build_text(Path(root))


def prepare_corpus(root: Path) -> None:
    """``root`` is one corpus folder (``.../wordnet-lexname``): build it, with its siblings, unless it is there (a
    classification data module's ``prepare``, whose ``data_root`` is the corpus folder itself)."""
    if not (Path(root) / "corpus.json").is_file():
        from tasks.debian_corpora.corpus import build_text

        build_text(Path(root).parent)


def prepare_smoke(root: Path) -> None:
    """A smoke tier's corpora: the tiny copy of the Debian sources in their own formats (``root/debian-src``,
    ``fixtures.write_debian_tree``), built into ``root`` as the real corpora are (a few seconds)."""
    from tasks.debian_corpora.corpus import CORPORA, build_text
    from tasks.debian_corpora.fixtures import write_debian_tree

    if not all((Path(root) / corpus / "corpus.json").is_file() for corpus in CORPORA):
        build_text(Path(root), write_debian_tree(Path(root) / "debian-src"), min_count=2, min_fortunes=5)


# --- language modelling ------------------------------------------------------------------------------------------

BUILD_HINT = "build it: python -m tasks.debian_corpora text OUT"


def lm_file(folder: Path, split: str) -> Path:
    return wikitext.lm_file(folder, split, BUILD_HINT)


class DebianLMDataModule(WikiTextDataModule):
    """``debian-lm`` from ``data_root`` (the built corpus folder): WikiText-103's data module
    (:class:`tasks.language_modeling.wikitext.WikiTextDataModule`), scored as ``debian-lm``.

    Args:
        data_root: the corpus folder.
        batch_size: rows of the training stream (and of each training batch).
        bptt: tokens per window.
        train_tokens: keep only the first so many training tokens (``None``: all).
    """

    task = "debian-lm"
    missing_hint = BUILD_HINT


# --- classification ----------------------------------------------------------------------------------------------


def read_classes(folder: Path) -> tuple[str, ...]:
    path = Path(folder) / "classes.txt"
    try:
        names = tuple(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read class names: {exc}") from None
    if not names:
        raise HarnessError(f"{path}: no class names")
    return names


def read_classification(folder: Path, split: str) -> list[Example]:
    """The ``train`` or ``test`` examples of a classification corpus folder."""
    if split not in ("train", "test"):
        raise HarnessError(f"unknown split {split!r}; the corpus has: train, test")
    path = Path(folder) / f"{split}.csv"
    if not path.is_file():
        raise HarnessError(f"{path}: missing (build it: python -m tasks.debian_corpora text OUT)")
    examples = read_zhang_csv(path, len(read_classes(folder)))
    if not examples:
        raise HarnessError(f"{path}: no examples")
    return examples


def per_class_subset(items: Sequence[tuple[str, str]], per_class: int, seed: int = 0) -> list[tuple[str, str]]:
    """``per_class`` ``(id, label)`` items of every label (all of a smaller class), ranked by
    ``sha256("<seed>:<id>")`` within the class; sorted by id. Input order does not matter."""
    if per_class < 1:
        raise HarnessError(f"per_class must be at least 1; got {per_class}")
    by_class: dict[str, list[str]] = {}
    for item_id, label in items:
        by_class.setdefault(label, []).append(item_id)
    kept = []
    for label, ids in by_class.items():
        ranked = sorted(ids, key=lambda i: (hashlib.sha256(f"{seed}:{i}".encode()).digest(), i))
        kept += [(item_id, label) for item_id in ranked[:per_class]]
    return sorted(kept)


class DebianTextDataModule(pl.LightningDataModule):
    """A classification corpus (``wordnet-lexname`` or ``fortune-category``) from ``data_root``.

    Args:
        data_root: the corpus folder (``train.csv``, ``test.csv``, ``classes.txt``).
        batch_size: examples per batch.
        num_workers: data-loader worker processes.
        tokenizer: a callable (or its ``"module:attribute"`` path) applied to each batch's list of texts, or a
            :class:`tasks.tokenizers.Tokenizer` or the path of a stored one (``tasks.text_classification.data``).
        per_class: training examples kept per class (``None``: all), drawn by ``subset_seed``.
        subset_seed: seed of the per-class ranking.
        subset_file: where to write the training list file (optional).
    """

    def __init__(
        self,
        data_root: str | Path,
        batch_size: int = 32,
        num_workers: int = 0,
        tokenizer: str | Callable[[list[str]], Any] | None = None,
        per_class: int | None = None,
        subset_seed: int = 0,
        subset_file: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=["tokenizer"] if callable(tokenizer) else None)
        if per_class is not None and per_class < 1:
            raise HarnessError(f"per_class must be at least 1; got {per_class}")
        self.data_root = Path(data_root)
        self.tokenizer = batch_tokenizer(tokenizer)
        self.splits: dict[str, list[Example]] = {}
        self.train_examples: list[Example] | None = None
        self.data_hash: str | None = None

    @property
    def classes(self) -> tuple[str, ...]:
        return read_classes(self.data_root)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def examples(self, split: str) -> list[Example]:
        if split not in self.splits:
            self.splits[split] = read_classification(self.data_root, split)
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
        if self.hparams.per_class is not None:
            items = per_class_subset(items, self.hparams.per_class, self.hparams.subset_seed)
        if self.hparams.subset_file is not None:
            write_list(items, Path(self.hparams.subset_file))
        corpus = folder_hash(self.data_root, CLASSIFICATION_FILES)
        self.data_hash = hashlib.sha256(corpus.encode() + b"\n" + format_subset(items)).hexdigest()
        kept = {item_id for item_id, _ in items}
        self.train_examples = [example for example in train if example.id in kept]

    def _loader(self, examples: Sequence[Example] | None, shuffle: bool) -> DataLoader:
        hp = self.hparams
        return example_loader(self, examples, hp.batch_size, hp.num_workers, self.tokenizer, shuffle)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_examples, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.examples("test"), shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.examples("test"), shuffle=False)

    def test_ids(self) -> list[str]:
        return [example.id for example in self.examples("test")]

    @property
    def task(self) -> str:
        """The task id, from the corpus's ``corpus.json`` (``wordnet-lexname`` or ``fortune-category``)."""
        path = self.data_root / "corpus.json"
        try:
            return json.loads(path.read_text(encoding="utf-8"))["corpus"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"{path}: cannot read the corpus name: {exc}") from None

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """The test loader scores against the corpus folder (its ``test.csv``): ids = row numbers, labels = class
        indices."""
        return Scoring(self.task, self.data_root, self.test_ids())
