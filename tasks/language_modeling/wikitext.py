"""WikiText-103's layout as a Lightning data module (also the ``debian-lm`` corpus's, which is written in it).

Files: ``wiki.{train,valid,test}.tokens`` in ``data_root`` (the ``wikitext-103`` folder the archive unpacks to, or
its parent). Each line's tokens and an ``<eos>`` make the stream (as the scorer counts them); the vocabulary is
the whole training stream's tokens, most frequent first (ties by the token), ``<eos>`` and ``<unk>`` included
(WikiText-103 has its rare words as ``<unk>`` already; Merity et al. give its vocabulary as 267,735 types).
Batches are ``(inputs, targets)``, long ``(rows, bptt)``, read ``bptt`` columns at a time and in order (no
shuffling: a recurrent model may carry its state across batches). Training: the stream cut into ``batch_size``
equal rows (the remainder dropped), targets one token ahead. Validation and test: one row, the inputs the stream
behind one ``<eos>`` (the file starts after a line end) and the targets the stream itself, so every token of the
file is predicted exactly once and in order, as the scorer counts them (the last window may be shorter).
``train_tokens`` keeps only the first so many training tokens (a budget run's cap; the vocabulary and the data
hash still come from the whole corpus, and the cap is in the config). The vocabulary (``vocab``, token -> id)
spells the tokens: a model with its own tokenizer maps them itself.

``data_hash`` (after ``setup``): sha256 over ``name\\0size\\0bytes`` of the three files, in the order train, valid,
test (:func:`files_hash`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.language_modeling.score import EOS, text_lines
from tasks.text_files import files_hash

UNK = "<unk>"
SPLITS = ("train", "valid", "test")
FILES = {split: f"wiki.{split}.tokens" for split in SPLITS}
FOLDER = "wikitext-103"


def corpus_folder(root: Path) -> Path:
    """``root/wikitext-103`` when it holds the files, else ``root``."""
    inside = Path(root) / FOLDER
    return inside if (inside / FILES["test"]).is_file() else Path(root)


def lm_file(folder: Path, split: str, hint: str = "the WikiText-103 layout: wiki.{train,valid,test}.tokens") -> Path:
    if split not in FILES:
        raise HarnessError(f"unknown split {split!r}; the corpus has: {', '.join(FILES)}")
    path = Path(folder) / FILES[split]
    if not path.is_file():
        raise HarnessError(f"{path}: missing ({hint})")
    return path


def read_tokens(path: Path, eos: str = EOS) -> list[str]:
    """The token stream of a ``.tokens`` file: each line's tokens, then ``eos``."""
    stream: list[str] = []
    for line in text_lines(path):
        stream += line.split()
        stream.append(eos)
    if len(stream) == stream.count(eos):
        raise HarnessError(f"{path}: no tokens")
    return stream


def build_vocabulary(stream: Iterable[str], specials: Sequence[str] = (EOS, UNK)) -> dict[str, int]:
    """Token -> id: most frequent first, ties by the token; the ``specials`` always present."""
    counts = Counter(stream)
    for special in specials:
        counts.setdefault(special, 0)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {token: index for index, (token, _) in enumerate(ordered)}


def encode(stream: Sequence[str], vocab: dict[str, int], unk: str = UNK) -> torch.Tensor:
    """Long (N,) ids; a token outside the vocabulary is ``unk``."""
    unk_id = vocab[unk]
    return torch.tensor([vocab.get(token, unk_id) for token in stream], dtype=torch.long)


class Windows(Dataset):
    """``(inputs, targets)`` windows of ``bptt`` columns of two ``(rows, length)`` id matrices, in order."""

    def __init__(self, inputs: torch.Tensor, targets: torch.Tensor, bptt: int) -> None:
        self.inputs, self.targets, self.bptt = inputs, targets, bptt

    @classmethod
    def training(cls, ids: torch.Tensor, rows: int, bptt: int) -> Windows:
        """The stream in ``rows`` equal rows (remainder dropped), targets one token ahead."""
        length = len(ids) // rows
        if length < 2:
            raise HarnessError(f"{len(ids)} tokens are too few for {rows} rows")
        data = ids[: rows * length].view(rows, length)
        return cls(data[:, :-1], data[:, 1:], bptt)

    @classmethod
    def scoring(cls, ids: torch.Tensor, eos: int, bptt: int) -> Windows:
        """One row: inputs ``<eos>`` then the stream but its last token, targets the whole stream."""
        inputs = torch.cat([torch.tensor([eos], dtype=ids.dtype), ids[:-1]])
        return cls(inputs[None], ids[None], bptt)

    def __len__(self) -> int:
        return -(-self.inputs.shape[1] // self.bptt)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        columns = slice(index * self.bptt, (index + 1) * self.bptt)
        return self.inputs[:, columns], self.targets[:, columns]


def window_loader(
    owner: str, ids: dict[str, torch.Tensor], split: str, hparams: Any, eos_id: Callable[[], int]
) -> DataLoader:
    """The loader of ``split``'s windows: training rows of ``hparams.batch_size``, or the one scoring row that
    starts with ``eos_id()``; ``owner`` names the data module in the error raised before its ``setup``."""
    if split not in ids:
        raise HarnessError(f"{owner}: call setup() before asking for a dataloader")
    if split == "train":
        windows = Windows.training(ids[split], hparams.batch_size, hparams.bptt)
    else:
        windows = Windows.scoring(ids[split], eos_id(), hparams.bptt)
    return DataLoader(windows, batch_size=None, shuffle=False)


class WikiTextDataModule(pl.LightningDataModule):
    """``wikitext-103`` from ``data_root``: the folder holding ``wiki.{train,valid,test}.tokens`` (or its parent).

    Args:
        data_root: the corpus folder.
        batch_size: rows of the training stream (and of each training batch).
        bptt: tokens per window.
        train_tokens: keep only the first so many training tokens (``None``: all).
    """

    task = "wikitext-103"
    missing_hint = "the WikiText-103 layout: wiki.{train,valid,test}.tokens"

    def __init__(
        self, data_root: str | Path, batch_size: int = 32, bptt: int = 70, train_tokens: int | None = None
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = corpus_folder(Path(data_root))
        self.vocab: dict[str, int] | None = None
        self.ids: dict[str, torch.Tensor] = {}
        self.data_hash: str | None = None

    def file(self, split: str) -> Path:
        return lm_file(self.data_root, split, self.missing_hint)

    def verify(self) -> None:
        """The three files are there, UTF-8 and hold tokens (errors name the file)."""
        for split in FILES:
            read_tokens(self.file(split))

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        streams = {split: read_tokens(self.file(split)) for split in FILES}
        self.vocab = build_vocabulary(streams["train"])
        self.ids = {split: encode(stream, self.vocab) for split, stream in streams.items()}
        if self.hparams.train_tokens is not None:
            self.ids["train"] = self.ids["train"][: self.hparams.train_tokens]
        self.data_hash = files_hash(self.data_root, FILES.values())

    @property
    def vocab_size(self) -> int:
        if self.vocab is None:
            raise HarnessError(f"{type(self).__name__}: call setup() first")
        return len(self.vocab)

    def _loader(self, split: str) -> DataLoader:
        return window_loader(type(self).__name__, self.ids, split, self.hparams, lambda: self.vocab[EOS])

    def train_dataloader(self) -> DataLoader:
        return self._loader("train")

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid")

    def test_dataloader(self) -> DataLoader:
        return self._loader("test")

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """The test loader scores against ``wiki.test.tokens``: ids = token positions, labels = the vocabulary
        (id -> token), which :class:`~tasks.language_modeling.metric.TokenPerplexity` writes the tokens with."""
        if self.vocab is None:
            raise HarnessError(f"{type(self).__name__}: call setup() before scoring")
        return Scoring(self.task, self.file("test"), range(len(self.ids["test"])), list(self.vocab))
