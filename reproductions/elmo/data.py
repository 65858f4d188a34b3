"""ELMo's budget data (arXiv 1802.05365v2, README.md "Budget tier"): the biLM's sentences from ``debian-lm`` and the
task model's few-label glosses from ``wordnet-lexname`` (docs/corpora.md), both tokenised as ``debian-lm`` is.

- :class:`BiLMDataModule` (stage a): the non-blank, non-heading lines of ``wiki.<split>.tokens``, each cut into
  pieces of at most ``max_tokens`` tokens (bilm-tf trains on windows of 20 tokens, its ``unroll_steps``) and framed
  by ``<S>`` and ``</S>``. The training pieces come from ``train_lines`` lines drawn once with a fixed generator (the
  same lines for every seed; the run's seed orders them), the test pieces from the first ``test_lines`` lines of the
  test split. Batches: ``(chars (B, T + 2, 50), ids (B, T + 2))``, the characters as
  ``tasks.tokenizers.elmo.batch_char_ids`` writes them and the word ids of the softmax: ``<S>``, ``</S>``,
  ``<unk>`` (bilm-tf's vocabulary file starts with ``<S>``, ``</S>``, ``<UNK>``; ``<unk>`` is the corpus's own spelling)
  then the ``vocab_size - 3`` most frequent training tokens (ties by the token), every other token ``<unk>``.
- :func:`encode_texts` (stage b, the ``tokenizer`` of ``tasks.debian_corpora``'s classification module): texts ->
  ``(chars (B, N + 2, 50), words (B, N))``, each text tokenised by ``tasks.debian_corpora.tokenize`` (so the biLM reads
  what it was trained on, rare words kept as written: the character CNN reads any word) and cut to its first
  :data:`MAX_TEXT_TOKENS` tokens; ``words`` are the task model's hashed word ids (``layers.word_ids``).

``data_hash`` (after ``setup``) is the corpus's (``tasks.debian_corpora.corpus.folder_hash``), as ``corpus.json``
records it; the sample of lines and the vocabulary follow from it and the config.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from reproductions.elmo.layers import word_ids
from tasks.debian_corpora.corpus import LM_FILES, folder_hash
from tasks.debian_corpora.data import lm_file
from tasks.debian_corpora.tokenize import UNK, tokenize
from tasks.language_modeling.score import text_lines
from tasks.tokenizers.elmo import batch_char_ids

BOS, EOS = "<S>", "</S>"
SPECIALS = (BOS, EOS, UNK)
MAX_TEXT_TOKENS = 60  # glosses: 99.9% are shorter (the classification texts' cut)
LINE_SAMPLE_SEED = 0  # the training lines drawn, the same for every run


def is_text(line: str) -> bool:
    """A paragraph line of the WikiText layout (not blank, not a `` = Title = `` heading)."""
    stripped = line.strip()
    return bool(stripped) and not (stripped.startswith("= ") and stripped.endswith(" ="))


def pieces(lines: Sequence[str], max_tokens: int) -> list[list[str]]:
    """Each line's tokens cut into consecutive pieces of at most ``max_tokens``."""
    out = []
    for line in lines:
        tokens = line.split()
        out += [tokens[i : i + max_tokens] for i in range(0, len(tokens), max_tokens)]
    return out


def softmax_vocabulary(lines: Sequence[str], size: int) -> dict[str, int]:
    """Token -> id: :data:`SPECIALS` first, then the ``size - 3`` most frequent tokens of ``lines`` (ties by token)."""
    if size <= len(SPECIALS):
        raise HarnessError(f"vocab_size must exceed {len(SPECIALS)}; got {size}")
    counts = Counter(token for line in lines for token in line.split())
    ranked = sorted((t for t in counts if t not in SPECIALS), key=lambda t: (-counts[t], t))
    return {token: index for index, token in enumerate([*SPECIALS, *ranked[: size - len(SPECIALS)]])}


class BiLMDataModule(pl.LightningDataModule):
    """``debian-lm`` as framed sentence pieces for the biLM (see the module docstring).

    Args:
        data_root: the folder holding the built ``debian-lm`` corpus (``python -m tasks.debian_corpora text OUT``).
        vocab_size: words of the softmax, the three specials included.
        max_tokens: tokens per piece, ``<S>`` and ``</S>`` not counted.
        train_lines: training lines drawn (``None``: all).
        test_lines: first lines of the test split evaluated.
        batch_size / test_batch_size: pieces per batch.
    """

    def __init__(
        self,
        data_root: str | Path,
        vocab_size: int = 10000,
        max_tokens: int = 20,
        train_lines: int | None = 50000,
        test_lines: int = 2000,
        batch_size: int = 32,
        test_batch_size: int = 64,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.folder = Path(data_root) / "debian-lm"
        self.vocab: dict[str, int] = {}
        self.train_pieces: list[list[str]] = []
        self.test_pieces: list[list[str]] = []
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in ("train", "test"):
            lm_file(self.folder, split)

    def setup(self, stage: str | None = None) -> None:
        if self.vocab:
            return
        hp = self.hparams
        train = [line for line in text_lines(lm_file(self.folder, "train")) if is_text(line)]
        self.vocab = softmax_vocabulary(train, hp.vocab_size)
        if hp.train_lines is not None and hp.train_lines < len(train):
            chosen = sorted(random.Random(LINE_SAMPLE_SEED).sample(range(len(train)), hp.train_lines))
            train = [train[i] for i in chosen]
        self.train_pieces = pieces(train, hp.max_tokens)
        test = [line for line in text_lines(lm_file(self.folder, "test")) if is_text(line)][: hp.test_lines]
        self.test_pieces = pieces(test, hp.max_tokens)
        self.data_hash = folder_hash(self.folder, LM_FILES.values())

    def collate(self, batch: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor]:
        chars = batch_char_ids(batch)
        ids = torch.zeros(chars.shape[:2], dtype=torch.long)
        unk = self.vocab[UNK]
        for row, tokens in enumerate(batch):
            framed = [BOS, *tokens, EOS]
            ids[row, : len(framed)] = torch.tensor([self.vocab.get(token, unk) for token in framed])
        return chars, ids

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_pieces, self.hparams.batch_size, shuffle=True, collate_fn=self.collate)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_pieces, self.hparams.test_batch_size, collate_fn=self.collate)


def encode_texts(texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Classification texts (paragraphs joined by the two characters ``\\n``) -> ``(chars, words)``; see the
    module docstring."""
    sentences = [tokenize(text.replace("\\n", " "))[:MAX_TEXT_TOKENS] or [UNK] for text in texts]
    return batch_char_ids(sentences), word_ids(sentences)
