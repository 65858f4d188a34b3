"""The LightningModule that trains LAS-d-w with SpecAugment (arXiv 1904.08779v3) on a LibriSpeech-layout corpus.

Batches come from :class:`tasks.librispeech.data.LibriSpeechDataModule` (80-bin log-mel). Per utterance, within its
length: :func:`~reproductions.specaugment.features.paper_features` (static + deltas, zero mean), then, in training
only, :func:`~reproductions.specaugment.augment.spec_augment` with the ``policy``'s Table 1 row and a generator
seeded by (seed, epoch, utterance id): on the fly, the same for a given seed whatever the batching.

Targets: a fixed character vocabulary (:data:`CHARS`, ids after ``<unk>``, ``<s>``, ``</s>``), where the paper
uses 16k (LibriSpeech) or 1k (Switchboard) word pieces; README, "What differs". Loss: cross-entropy with label
smoothing ``label_smoothing`` until the schedule's decay starts (:func:`schedules.label_smoothing`). Optimiser:
Adam with the ``schedule`` (B, D, L) shape, its steps multiplied by ``schedule_scale``. Test: beam search
(``beam_size``, length normalisation ``alpha``) of each utterance, a batch decoded together; WER through the task's
metric, whose predictions the runner keeps. Variational weight noise and the LM of shallow fusion are not part of
this system (README).
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence

from harness.errors import HarnessError
from reproductions.specaugment.augment import POLICIES, generator_for, spec_augment
from reproductions.specaugment.features import paper_features
from reproductions.specaugment.model import las, recognize_batch
from reproductions.specaugment.schedules import SCHEDULES, label_smoothing, learning_rate, scaled

CHARS = " ABCDEFGHIJKLMNOPQRSTUVWXYZ'"
UNK, BOS, EOS = 0, 1, 2
VOCAB_SIZE = 3 + len(CHARS)
IGNORE = -100
MAX_WORDS_PER_SECOND = 10.0  # far above read speech (LibriSpeech ~2.7, espeak-ng at 185 wpm ~3.1)


def encode(text: str) -> list[int]:
    return [3 + CHARS.index(c) if c in CHARS else UNK for c in text]


def decode(ids: tuple[int, ...] | list[int]) -> str:
    return "".join(CHARS[i - 3] for i in ids if i >= 3)


def check_rate(utterance: str, transcript: str, frames: int, hop_s: float = 0.01) -> None:
    """A transcript with more than :data:`MAX_WORDS_PER_SECOND` words per second of audio does not match it."""
    seconds = frames * hop_s
    if len(transcript.split()) > MAX_WORDS_PER_SECOND * max(seconds, hop_s):
        raise HarnessError(
            f"utterance {utterance}: {len(transcript.split())} words in {seconds:.2f} s of audio: "
            "the transcript does not match its audio"
        )


class SpecAugmentLAS(pl.LightningModule):
    """LAS-d-w (``model``: a :data:`reproductions.specaugment.model.VARIANTS` id) trained with SpecAugment."""

    def __init__(
        self,
        model: str = "las-2-128",
        policy: str = "LB",
        schedule: str = "B",
        schedule_scale: float = 0.01,
        peak_lr: float = 1e-3,
        label_smoothing: float = 0.1,
        beam_size: int = 8,
        alpha: float = 0.0,
        max_decode_len: int = 200,
        lm_weight: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if policy not in POLICIES or schedule not in SCHEDULES:
            raise HarnessError(f"policy {policy!r} / schedule {schedule!r}: known {list(POLICIES)} / {list(SCHEDULES)}")
        if lm_weight:
            raise HarnessError("lm_weight: shallow fusion needs a trained LM, which this system does not train yet")
        self.model = las(model, vocab_size=VOCAB_SIZE)
        self.schedule = scaled(SCHEDULES[schedule], schedule_scale)
        self.test_metrics = nn.ModuleList()

    def features(self, batch: Any, augment: bool) -> tuple[Tensor, Tensor]:
        """Paper features per utterance ``(B, T, 80, 3)`` (SpecAugment in training), zero-padded, and lengths."""
        out = []
        for inputs, length, text, utterance in zip(
            batch.inputs, batch.lengths, batch.transcripts, batch.ids, strict=True
        ):
            check_rate(utterance, text, int(length))
            x = paper_features(inputs[: int(length)])
            if augment:
                x = spec_augment(
                    x, POLICIES[self.hparams.policy], generator_for(self.hparams.seed, self.current_epoch, utterance)
                )
            out.append(x)
        return pad_sequence(out, batch_first=True), batch.lengths

    def targets(self, transcripts: list[str]) -> tuple[Tensor, Tensor]:
        """Decoder inputs (``<s>`` + y) and labels (y + ``</s>``), padded with ``</s>`` / :data:`IGNORE`."""
        rows = [torch.tensor(encode(t)) for t in transcripts]
        inputs = pad_sequence([F.pad(r, (1, 0), value=BOS) for r in rows], batch_first=True, padding_value=EOS)
        labels = pad_sequence([F.pad(r, (0, 1), value=EOS) for r in rows], batch_first=True, padding_value=IGNORE)
        return inputs.to(self.device), labels.to(self.device)

    def loss(self, batch: Any, augment: bool, smoothing: float) -> Tensor:
        features, lengths = self.features(batch, augment)
        inputs, labels = self.targets(batch.transcripts)
        logits = self.model(features, lengths, inputs)  # (B, U, V)
        return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE, label_smoothing=smoothing)

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        smoothing = label_smoothing(self.global_step, self.schedule, self.hparams.label_smoothing)
        loss = self.loss(batch, augment=True, smoothing=smoothing)
        self.log("train/loss", loss, batch_size=len(batch.ids))
        return loss

    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self.log("val/loss", self.loss(batch, augment=False, smoothing=0.0), batch_size=len(batch.ids))

    def on_test_start(self) -> None:
        from tasks.librispeech.metric import LibriSpeechWER

        self.test_metrics = nn.ModuleList(LibriSpeechWER() for _ in self.trainer.num_test_batches).to(self.device)

    def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        features, lengths = self.features(batch, augment=False)
        hp = self.hparams
        found = recognize_batch(
            self.model,
            features,
            lengths.to(features.device),
            bos=BOS,
            eos=EOS,
            beam_size=hp.beam_size,
            max_len=hp.max_decode_len,
            alpha=hp.alpha,
        )
        hypotheses = [decode(best[0].tokens) for best in found]
        self.test_metrics[dataloader_idx].update(hypotheses, batch.transcripts, batch.ids)

    def on_test_epoch_end(self) -> None:
        for index, metric in enumerate(self.test_metrics):
            suffix = f"/dataloader_idx_{index}" if len(self.test_metrics) > 1 else ""
            for key, value in metric.counts().items():
                self.log(f"test/{key}{suffix}", float(value), add_dataloader_idx=False)

    def configure_optimizers(self) -> dict:
        optimiser = torch.optim.Adam(self.parameters(), lr=self.hparams.peak_lr)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: learning_rate(step, self.schedule, 1.0))
        return {"optimizer": optimiser, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
