"""The LightningModule that trains LAS-d-w with SpecAugment (arXiv 1904.08779v3) on a LibriSpeech-layout corpus or on
Switchboard-1.

Batches come from :class:`tasks.librispeech.data.LibriSpeechDataModule` or
:class:`tasks.switchboard.train.SwitchboardDataModule` (80-bin log-mel). Per utterance, within its
length: :func:`~reproductions.specaugment.features.paper_features` (static + deltas, zero mean), then, in training
only, :func:`~reproductions.specaugment.augment.spec_augment` with the ``policy``'s Table 1 row and a generator
seeded by (seed, epoch, utterance id): on the fly, the same for a given seed whatever the batching.

Targets (:mod:`reproductions.specaugment.vocab`): ``wordpieces`` word pieces (the paper's 16k for LibriSpeech, 1k
for Switchboard), a SentencePiece model learnt from the training splits' transcripts when the run starts (``setup``)
and cited by the run's records; ``wordpieces = 0``: characters (the budget tier). Hypotheses are decoded back to
words, which the WER is computed on. Loss: cross-entropy with label smoothing ``label_smoothing`` until the
schedule's decay starts (:func:`schedules.label_smoothing`; LibriSpeech's reading), or for the whole training with
``label_smoothing_off_at_decay=False`` (the paper's Switchboard state of the art). Variational weight noise: from
the schedule's ``s_noise`` on, every training step runs on the weights plus Gaussian noise of std ``weight_noise``
(0.075), one draw per step from a generator seeded by (seed, step), the gradient applied to the clean weights
(lingvo's global variational noise; :func:`~reproductions.specaugment.model.noisy_weights` lists the weights);
validation and test use the clean weights. Optimiser: Adam with the ``schedule`` (B, D, L) shape, its steps
multiplied by ``schedule_scale``. Test: beam search (``beam_size``, length normalisation ``alpha``, coverage penalty
``coverage_penalty``) of each utterance, a batch decoded together, with shallow fusion (``lm_weight``) with the LSTM
LM ``lm`` when one is named: its weights come from the LM's own stage (:mod:`reproductions.specaugment.lm`) through
the config's ``init_from`` (``prefixes: [lm]``), frozen, and must have been trained on this vocabulary. WER through
the test data's metric (:func:`wer_metric`), whose predictions the runner keeps: LibriSpeech's, or Hub5'00's (NIST's
Hub-5 normalisation and GLM) for a data module whose ``task`` is ``switchboard``
(:class:`tasks.switchboard.train.SwitchboardDataModule`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pad_sequence

from harness.errors import HarnessError
from harness.evaluators import counted, per_test_loader
from nets.beam_search import BeamConfig
from reproductions.specaugment.augment import POLICIES, generator_for, spec_augment
from reproductions.specaugment.features import paper_features
from reproductions.specaugment.model import las, lstm_lm, noisy_weights, recognize_batch
from reproductions.specaugment.schedules import (
    SCHEDULES,
    WEIGHT_NOISE_STD,
    label_smoothing,
    learning_rate,
    scaled,
    weight_noise_on,
)
from reproductions.specaugment.vocab import BOS, CHARS, EOS, UNK, Characters, WordPieces, decode, encode, vocabulary

__all__ = ["BOS", "CHARS", "EOS", "UNK", "SpecAugmentLAS", "check_rate", "decode", "encode", "wer_metric"]
VOCAB_SIZE = Characters().vocab_size
IGNORE = -100
MAX_WORDS_PER_SECOND = 10.0  # far above read speech (LibriSpeech ~2.7, espeak-ng at 185 wpm ~3.1)


def noise_generator(seed: int, step: int, device: torch.device | str = "cpu") -> torch.Generator:
    """The weight noise's generator of one training step, seeded from (seed, step) by sha256."""
    digest = hashlib.sha256(f"specaugment-weight-noise:{seed}:{step}".encode()).digest()
    return torch.Generator(device=device).manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))


def wer_metric(datamodule: Any) -> nn.Module:
    """A test loader's WER metric: Hub5'00's (with the data's GLM) where the data module's ``task`` is
    ``switchboard``, LibriSpeech's (also the espeak-ng corpus's) otherwise."""
    if getattr(datamodule, "task", None) == "switchboard":
        from tasks.switchboard.metric import Hub5WER

        return Hub5WER(glm=datamodule.glm)
    from tasks.librispeech.metric import LibriSpeechWER

    return LibriSpeechWER()


def check_rate(
    utterance: str, transcript: str, frames: int, hop_s: float = 0.01, limit: float | None = MAX_WORDS_PER_SECOND
) -> None:
    """A transcript with more than ``limit`` words per second of audio does not match it (``None``: no check, for
    data whose segments are cut at their own transcription's times)."""
    seconds = frames * hop_s
    if limit is not None and len(transcript.split()) > limit * max(seconds, hop_s):
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
        label_smoothing_off_at_decay: bool = True,
        wordpieces: int = 16384,
        weight_noise: float = WEIGHT_NOISE_STD,
        beam_size: int = 8,
        alpha: float = 0.0,
        max_decode_len: int = 200,
        lm: str | None = None,
        lm_weight: float = 0.0,
        coverage_penalty: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if policy not in POLICIES or schedule not in SCHEDULES:
            raise HarnessError(f"policy {policy!r} / schedule {schedule!r}: known {list(POLICIES)} / {list(SCHEDULES)}")
        if (lm is None) != (lm_weight == 0):
            raise HarnessError(f"lm {lm!r}, lm_weight {lm_weight}: shallow fusion needs both an LM and a weight > 0")
        if weight_noise < 0 or coverage_penalty < 0:
            raise HarnessError(f"weight_noise {weight_noise}, coverage_penalty {coverage_penalty}: both must be >= 0")
        self.vocab: Characters | WordPieces | None = vocabulary(0) if wordpieces == 0 else None  # else: in setup
        vocab_size = wordpieces or VOCAB_SIZE
        self.model = las(model, vocab_size=vocab_size)
        self.lm = None if lm is None else lstm_lm(lm, vocab_size).requires_grad_(False)  # frozen, loaded by init_from
        if lm is not None:
            self.register_buffer("lm_vocabulary", torch.zeros(32, dtype=torch.uint8))  # set by the LM's stage
        self.schedule = scaled(SCHEDULES[schedule], schedule_scale)
        self.test_metrics = nn.ModuleList()

    def setup(self, stage: str) -> None:
        """Word pieces: learnt from the training splits' transcripts (deterministic), cited by the run's records."""
        if self.vocab is None:
            data = self.trainer.datamodule
            self.learn_vocabulary([u.transcript for split in data.train_splits for u in data.utterances(split)])

    def learn_vocabulary(self, transcripts: list[str]) -> None:
        """The ``wordpieces`` word pieces of these training transcripts, stored (``results/tokenizers``) and cited."""
        from tasks.tokenizers import register

        self.vocab = vocabulary(self.hparams.wordpieces, transcripts)
        register(self, self.vocab.tokenizer)

    def check_lm(self) -> None:
        """The fusion LM was loaded (``init_from``) and trained on this system's vocabulary."""
        if self.lm is None:
            return
        loaded = bytes(self.lm_vocabulary.tolist()).hex()
        if loaded == "00" * 32:
            raise HarnessError(
                f"lm {self.hparams.lm!r}: no trained weights were loaded; name the LM's stage in init_from "
                "(prefixes: [lm])"
            )
        if loaded != self.vocab.digest:
            raise HarnessError(
                f"lm {self.hparams.lm!r} was trained on another vocabulary (sha256 {loaded}; this system's: "
                f"{self.vocab.digest}): train the LM with the same wordpieces and training transcripts"
            )

    def features(self, batch: Any, augment: bool) -> tuple[Tensor, Tensor]:
        """Paper features per utterance ``(B, T, 80, 3)`` (SpecAugment in training), zero-padded, and lengths."""
        data = self._trainer.datamodule if self._trainer is not None else None
        limit = getattr(data, "max_words_per_second", MAX_WORDS_PER_SECOND)
        out = []
        for inputs, length, text, utterance in zip(
            batch.inputs, batch.lengths, batch.transcripts, batch.ids, strict=True
        ):
            check_rate(utterance, text, int(length), limit=limit)
            x = paper_features(inputs[: int(length)])
            if augment:
                x = spec_augment(
                    x, POLICIES[self.hparams.policy], generator_for(self.hparams.seed, self.current_epoch, utterance)
                )
            out.append(x)
        return pad_sequence(out, batch_first=True), batch.lengths

    def targets(self, transcripts: list[str]) -> tuple[Tensor, Tensor]:
        """Decoder inputs (``<s>`` + y) and labels (y + ``</s>``), padded with ``</s>`` / :data:`IGNORE`."""
        rows = [torch.tensor(self.vocab.encode(t), dtype=torch.long) for t in transcripts]
        inputs = pad_sequence([F.pad(r, (1, 0), value=BOS) for r in rows], batch_first=True, padding_value=EOS)
        labels = pad_sequence([F.pad(r, (0, 1), value=EOS) for r in rows], batch_first=True, padding_value=IGNORE)
        return inputs.to(self.device), labels.to(self.device)

    def noisy_weights(self, step: int) -> dict[str, Tensor] | None:
        """Training step ``step``'s weights: from ``s_noise`` on, each of :func:`model.noisy_weights` plus Gaussian
        noise of std ``weight_noise`` drawn for this step (differentiable in the clean weights); before, ``None``."""
        std = self.hparams.weight_noise
        if not std or not weight_noise_on(step, self.schedule):
            return None
        generator = noise_generator(self.hparams.seed, step, self.device)
        weights = dict(self.model.named_parameters())
        return {
            name: weights[name] + std * torch.randn(weights[name].shape, generator=generator, device=self.device)
            for name in noisy_weights(self.model)
        }

    def loss(self, batch: Any, augment: bool, smoothing: float, weights: dict[str, Tensor] | None = None) -> Tensor:
        """Label-smoothed cross-entropy of a batch; ``weights`` (noisy ones) replace the model's own where given."""
        features, lengths = self.features(batch, augment)
        inputs, labels = self.targets(batch.transcripts)
        if weights is None:
            logits = self.model(features, lengths, inputs)  # (B, U, V)
        else:
            logits = torch.func.functional_call(self.model, weights, (features, lengths, inputs))
        return F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE, label_smoothing=smoothing)

    def training_step(self, batch: Any, batch_idx: int) -> Tensor:
        step = self.global_step
        hp = self.hparams
        smoothing = label_smoothing(step, self.schedule, hp.label_smoothing, hp.label_smoothing_off_at_decay)
        loss = self.loss(batch, augment=True, smoothing=smoothing, weights=self.noisy_weights(step))
        self.log("train/loss", loss, batch_size=len(batch.ids))
        return loss

    def validation_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        self.log("val/loss", self.loss(batch, augment=False, smoothing=0.0), batch_size=len(batch.ids))

    def on_test_start(self) -> None:
        self.check_lm()
        self.test_metrics = per_test_loader(self, lambda _: wer_metric(self.trainer.datamodule), counted)

    def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        features, lengths = self.features(batch, augment=False)
        hp = self.hparams
        search = BeamConfig(BOS, EOS, hp.beam_size, hp.max_decode_len, alpha=hp.alpha, lm_weight=hp.lm_weight)
        found = recognize_batch(
            self.model, features, lengths.to(features.device), search, lm=self.lm, coverage_penalty=hp.coverage_penalty
        )
        hypotheses = [self.vocab.decode(best[0].tokens) for best in found]
        self.test_metrics[dataloader_idx].update(hypotheses, batch.transcripts, batch.ids)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)  # wer and the counts it comes from

    def configure_optimizers(self) -> dict:
        optimiser = torch.optim.Adam(self.model.parameters(), lr=self.hparams.peak_lr)  # not the frozen LM
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: learning_rate(step, self.schedule, 1.0))
        return {"optimizer": optimiser, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
