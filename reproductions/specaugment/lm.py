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
per sentence (the count ``debian-lm``'s scorer uses): comparable across vocabularies. Logged as ``perplexity``,
``nll`` (per word) and ``tokens`` (words counted).
"""

from __future__ import annotations

import math
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


def frame(vocab: Characters | WordPieces, sentences: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
    """Inputs ``<s> y`` and labels ``y </s>`` ``(B, U)`` (padded with ``</s>`` / :data:`IGNORE`) and each
    sentence's words plus one for ``</s>`` ``(B,)``."""
    rows = [torch.tensor(vocab.encode(s), dtype=torch.long) for s in sentences]
    inputs = pad_sequence([F.pad(r, (1, 0), value=BOS) for r in rows], batch_first=True, padding_value=EOS)
    labels = pad_sequence([F.pad(r, (0, 1), value=EOS) for r in rows], batch_first=True, padding_value=IGNORE)
    return inputs, labels, torch.tensor([len(s.split()) + 1 for s in sentences])


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

    def collate(self, sentences: list[str]) -> tuple[Tensor, Tensor, Tensor]:
        return frame(self.vocab, sentences)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            self.train_sentences, batch_size=self.hparams.batch_size, shuffle=True, collate_fn=self.collate,
            drop_last=len(self.train_sentences) > self.hparams.batch_size,
        )  # fmt: skip

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_sentences, batch_size=self.hparams.test_batch_size, collate_fn=self.collate)


class FusionLMSystem(pl.LightningModule):
    """The fusion LM ``model`` (:data:`reproductions.specaugment.model.LM_VARIANTS`) over ``wordpieces`` pieces (0:
    characters), trained by cross-entropy with Adam at ``lr``."""

    def __init__(self, model: str = "lstm-lm-2-256", wordpieces: int = 0, lr: float = 1e-3) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.lm = lstm_lm(model, wordpieces or Characters().vocab_size)
        self.register_buffer("lm_vocabulary", torch.zeros(32, dtype=torch.uint8))
        self.nll = self.words = 0.0

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

    def summed_nll(self, inputs: Tensor, labels: Tensor) -> Tensor:
        """The summed negative log-likelihood of every label piece."""
        logits = self.lm(inputs)  # (B, U, V)
        return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE, reduction="sum")

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        inputs, labels, _ = batch
        loss = self.summed_nll(inputs, labels) / (labels != IGNORE).sum()
        self.log("train/loss", loss, batch_size=len(inputs))
        return loss

    def on_test_epoch_start(self) -> None:
        self.nll = self.words = 0.0

    def test_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> None:
        inputs, labels, words = batch
        self.nll += float(self.summed_nll(inputs, labels))
        self.words += float(words.sum())

    def on_test_epoch_end(self) -> None:
        nll = self.nll / self.words
        metrics = {"perplexity": math.exp(nll), "nll": nll, "tokens": self.words}
        for key, value in metrics.items():
            self.log(f"test/{key}", value)

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.lm.parameters(), lr=self.hparams.lr)
