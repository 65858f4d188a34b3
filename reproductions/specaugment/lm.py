"""The shallow-fusion LM's own stage: an LSTM language model trained on text, for SpecAugment's LAS (arXiv
1904.08779v3, Section 3.3: ``y* = argmax_y log P(y|x) + lambda log P_LM(y)``, an LSTM LM; LibriSpeech's is trained
on the LibriSpeech LM corpus, whose ``librispeech-lm-norm.txt`` holds one normalised upper-case sentence per line).

:class:`SentenceLMDataModule` reads such files: ``data_root/<train_file>`` and ``<test_file>``, one sentence per
line, in the ASR system's vocabulary (:mod:`reproductions.specaugment.vocab`: characters, or ``wordpieces`` word
pieces learnt from the transcripts of the speech corpus's training splits, ``speech_root`` / ``speech_splits``: the
very model the ASR system learns, since training is deterministic). Each sentence is one sequence ``<s> y </s>``, so
the LM scores a hypothesis from its first token on, as beam search asks it to.

:class:`FusionLMSystem` trains :func:`reproductions.specaugment.model.lstm_lm` by cross-entropy with Adam (the
paper's LM recipe was not read: ours). It holds the LM as ``lm`` and the sha256 of its vocabulary as the buffer
``lm_vocabulary``, so an ASR config loads both with ``init_from: {config: <this stage>, prefixes: [lm]}`` and the
ASR system can check that the LM speaks its vocabulary. Test: the word-level perplexity of the test file, ``exp``
of the summed negative log-likelihood of every piece (``</s>`` included) over the number of words plus one ``</s>``
per sentence (the count ``debian-lm``'s scorer uses): comparable across vocabularies. A word's log-probability is
the sum of its pieces' (:func:`word_numbers`: a piece belongs to the word it begins in; a character-level space to
the word after it), ``</s>`` a word of its own; :class:`~tasks.debian_corpora.metric.TokenPerplexity` accumulates
them, logged as ``perplexity``, ``nll`` (per word) and ``tokens`` (words counted), and keeps them as the run's
predictions: ``log_probs.tsv``, one ``<word><TAB><log-probability>`` line per word, scored by ``debian-lm``'s scorer
(WikiText-103's: each line's words, then ``<eos>``) against the test sentences, which
:meth:`SentenceLMDataModule.scoring` writes one per line as the references.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.evaluators import counted, per_test_loader
from harness.predictions import Scoring
from reproductions.specaugment.model import lstm_lm
from reproductions.specaugment.vocab import (
    BOS,
    EOS,
    Characters,
    WordPieces,
    digest_tensor,
    training_transcripts,
    vocabulary,
)
from tasks.debian_corpora.metric import TokenPerplexity
from tasks.debian_corpora.score import EOS as END_OF_LINE

IGNORE = -100


def read_sentences(path: Path, limit: int | None = None) -> list[str]:
    """The non-empty lines of a one-sentence-per-line text file (the first ``limit``)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the LM text: {exc}") from None
    sentences = [line.strip() for line in lines if line.strip()]
    if not sentences:
        raise HarnessError(f"{path}: no sentences")
    return sentences[:limit]


def frame(vocab: Characters | WordPieces, sentences: Sequence[str]) -> tuple[Tensor, Tensor]:
    """Inputs ``<s> y`` and labels ``y </s>`` ``(B, U)``, padded with ``</s>`` / :data:`IGNORE`."""
    rows = [torch.tensor(vocab.encode(s), dtype=torch.long) for s in sentences]
    inputs = pad_sequence([F.pad(r, (1, 0), value=BOS) for r in rows], batch_first=True, padding_value=EOS)
    labels = pad_sequence([F.pad(r, (0, 1), value=EOS) for r in rows], batch_first=True, padding_value=IGNORE)
    return inputs, labels


def word_numbers(text: str, starts: Sequence[int]) -> list[int]:
    """The word of ``text.split()`` (0-based) each piece belongs to, given the character each begins at
    (``vocab.starts``): the word holding that character; white space goes with the word after it."""
    begins = [match.start() for match in re.finditer(r"\S+", text)]
    inside = [a < len(text) and not text[a].isspace() for a in starts]
    return [min(bisect_right(begins, a) - flag, len(begins) - 1) for a, flag in zip(starts, inside, strict=True)]


def word_positions(vocab: Characters | WordPieces, sentences: Sequence[str]) -> Tensor:
    """Each label's word ``(B, U)`` as :func:`frame` lays the labels out, counted from the batch's first word: its
    piece's word (:func:`word_numbers`), then ``</s>``, a word of its own; padding -1. Every sentence has
    ``len(s.split()) + 1`` words, so the last sentence's ``</s>`` is the batch's last word."""
    rows, first = [], 0
    for s in sentences:
        words = len(s.split())
        rows.append(torch.tensor([first + w for w in word_numbers(s, vocab.starts(s))] + [first + words]))
        first += words + 1
    return pad_sequence(rows, batch_first=True, padding_value=-1)


class SentenceLMDataModule(pl.LightningDataModule):
    """One-sentence-per-line text for the fusion LM (module docstring).

    Args:
        data_root: the folder holding ``train_file`` and ``test_file``.
        speech_root, speech_splits: the speech corpus whose training transcripts the word pieces are learnt from
            (the ASR system's ``data_root`` and ``train_splits``); unused for characters.
        wordpieces: the vocabulary (0: characters), as the ASR system's.
        max_len: training sentences of more pieces are left out (the test scores every sentence).
        train_lines, test_lines: read only so many sentences (``None``: all).
    """

    def __init__(
        self,
        data_root: str | Path,
        train_file: str = "lm-train.txt",
        test_file: str = "lm-test.txt",
        speech_root: str | Path | None = None,
        speech_splits: str | Sequence[str] = ("train",),
        wordpieces: int = 0,
        batch_size: int = 64,
        test_batch_size: int = 128,
        max_len: int = 200,
        train_lines: int | None = None,
        test_lines: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.vocab: Characters | WordPieces | None = None
        self.train_sentences: list[str] = []
        self.test_sentences: list[str] = []
        self.data_hash: str | None = None

    def verify(self) -> None:
        for name in (self.hparams.train_file, self.hparams.test_file):
            if not (self.data_root / name).is_file():
                raise HarnessError(f"{self.data_root / name}: missing (the LM text, one sentence per line)")

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        import hashlib

        hp = self.hparams
        splits = (hp.speech_splits,) if isinstance(hp.speech_splits, str) else tuple(hp.speech_splits)
        if hp.wordpieces and hp.speech_root is None:
            raise HarnessError("wordpieces: the word pieces are learnt from speech_root's transcripts; give it")
        transcripts = training_transcripts(hp.speech_root, splits) if hp.wordpieces else ()
        self.vocab = vocabulary(hp.wordpieces, transcripts)
        train = read_sentences(self.data_root / hp.train_file, hp.train_lines)
        self.train_sentences = [s for s in train if len(self.vocab.encode(s)) < hp.max_len]
        self.test_sentences = read_sentences(self.data_root / hp.test_file, hp.test_lines)
        text = "\n".join([*self.train_sentences, "", *self.test_sentences])
        self.data_hash = hashlib.sha256(f"{text}\n{self.vocab.digest}".encode()).hexdigest()

    def collate(self, sentences: list[str]) -> tuple[Tensor, Tensor]:
        return frame(self.vocab, sentences)

    def test_collate(self, sentences: list[str]) -> tuple[Tensor, Tensor, Tensor]:
        """:func:`frame`'s inputs and labels and each label's word (:func:`word_positions`)."""
        inputs, labels = frame(self.vocab, sentences)
        positions = word_positions(self.vocab, sentences)
        if positions.shape != labels.shape:
            raise HarnessError(f"the vocabulary's piece offsets ({positions.shape}) do not match its pieces")
        return inputs, labels, positions

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            self.train_sentences, batch_size=self.hparams.batch_size, shuffle=True, collate_fn=self.collate,
            drop_last=len(self.train_sentences) > self.hparams.batch_size,
        )  # fmt: skip

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_sentences, batch_size=self.hparams.test_batch_size, collate_fn=self.test_collate)

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """Word ``i`` of the test sentences (each followed by ``<eos>``, as the scorer counts ``</s>``) is target
        ``i``; the references are the sentences scored, one per line, written to ``folder/<test_file>``."""
        references = Path(folder) / Path(self.hparams.test_file).name
        references.write_text("".join(f"{s}\n" for s in self.test_sentences), encoding="utf-8")
        words = [word for s in self.test_sentences for word in [*s.split(), END_OF_LINE]]
        return Scoring("debian-lm", references, range(len(words)), words)


class FusionLMSystem(pl.LightningModule):
    """The fusion LM ``model`` (:data:`reproductions.specaugment.model.LM_VARIANTS`) over ``wordpieces`` pieces (0:
    characters), trained by cross-entropy with Adam at ``lr``."""

    def __init__(self, model: str = "lstm-lm-2-256", wordpieces: int = 0, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.lm = lstm_lm(model, wordpieces or Characters().vocab_size)
        self.register_buffer("lm_vocabulary", torch.zeros(32, dtype=torch.uint8))
        self._words = 0  # words of the test file scored so far (the next batch's first word)

    def setup(self, stage: str) -> None:
        """Take the data module's vocabulary: its size must be the LM's; its sha256 goes into ``lm_vocabulary``."""
        vocab = self.trainer.datamodule.vocab
        if vocab.vocab_size != self.lm.output.out_features:
            raise HarnessError(
                f"the LM text's vocabulary has {vocab.vocab_size} ids, the LM {self.lm.output.out_features}"
            )
        self.lm_vocabulary.copy_(digest_tensor(vocab.digest))
        if isinstance(vocab, WordPieces):
            from tasks.tokenizers import register

            register(self, vocab.tokenizer)

    def training_step(self, batch: tuple[Tensor, Tensor], batch_idx: int) -> Tensor:
        inputs, labels = batch
        logits = self.lm(inputs)  # (B, U, V)
        summed = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE, reduction="sum")
        loss = summed / (labels != IGNORE).sum()  # per label piece
        self.log("train/loss", loss, batch_size=len(inputs))
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: TokenPerplexity(), counted)
        self._words = 0

    def test_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> None:
        """Each word's log-probability, the sum of its pieces' (float64), kept with its number in the test file."""
        inputs, labels, positions = batch
        scored = labels != IGNORE
        pieces = self.lm(inputs).log_softmax(-1).gather(-1, labels.clamp(min=0)[..., None])[..., 0]  # (B, U)
        count = int(positions.max()) + 1  # the last sentence's </s>
        words = pieces.new_zeros(count, dtype=torch.float64).index_add_(0, positions[scored], pieces[scored].double())
        self.test_metrics[0].update(words, targets=torch.arange(self._words, self._words + count, device=self.device))
        self._words += count

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.lm.parameters(), lr=self.hparams.lr)
