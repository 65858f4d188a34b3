"""Lightning system for UDA (arXiv 1904.12848v6): supervised cross-entropy with Training Signal Annealing plus
``lambda`` times the masked, sharpened consistency loss on unlabelled examples
(:func:`reproductions.uda.model.uda_objective`).

Model ids are ``uda-<network>``; ``objective: uda`` trains with the objective above, ``objective: supervised`` the
same network on the labelled examples alone (the paper's "without UDA" rows; TSA still applies when configured).
Claims tell the two apart by the condition ``system.init_args.objective``. A training batch is the dict of
:mod:`reproductions.uda.data`; the labelled, original and augmented inputs go through the network in one forward
pass (one set of batch-norm statistics), and the originals' logits are the detached target.

Optimisation (Appendix E): SGD with Nesterov momentum 0.9 and the cosine decay ``lr * cos(7 pi t / (16 T))`` for
Wide-ResNet-28-2 (``schedule: cosine-7/16``), or Adam with a linear warm-up and linear decay (``optimizer: adamw``,
``schedule: linear``); ``t`` counts optimizer steps, ``T`` is the trainer's total. Fine-tuning released BERT weights
(``init_checkpoint``: a :mod:`nets.bert_weights` conversion, loaded into the encoder; the classifier stays random)
uses BERT's optimiser as google-research/uda's ``optimization.py`` sets it (``optimizer: bert-adamw``: Adam with
decoupled weight decay, epsilon 1e-6, no decay on LayerNorm weights and biases) and schedule (``bert-linear``:
``lr * t / t_w`` during the warm-up, ``lr * (1 - t / T)`` after it); the gradient clipping at global norm 1 is the
trainer's ``gradient_clip_val``. ImageNet (Appendix E.3: "a base learning rate of 0.3 that is decayed by 10 for
four times") uses ``schedule: step``: the rate divided by 10 at each of ``milestones`` (fractions of training),
after an optional linear warm-up. TSA's progress is the same ``t / T``.

Exponential moving average of the weights (Appendix E.2: "a decay rate of 0.9999" for Wide-ResNet-28-2;
``ema_decay``, 0 = off): Lightning's ``WeightAveraging`` callback keeps the average of every parameter and of the
batch-norm statistics (google-research/uda's image code averages both, with a constant decay: TensorFlow's
``ExponentialMovingAverage`` without ``num_updates``, :func:`nets.optim.tf_ema_avg_fn` with ``ramp=False``);
validation runs on the average, and it replaces the weights when training ends, so the test metrics and the kept
predictions are the averaged weights'. One departure: the average starts as a copy of the weights after the first
step (``AveragedModel``'s first update) where TensorFlow's starts from the initial weights. Test metrics:
``top1``, ``top5``, ``error`` (percent); the text tasks' scorers read ``error`` and ``accuracy`` from the same
predictions.
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback, WeightAveraging
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

from harness.errors import HarnessError
from harness.evaluators import per_test_loader
from nets.bert import BertEncoder
from nets.optim import tf_ema_avg_fn
from nets.systems.steps import l2_param_groups
from reproductions.uda.model import (
    NETWORKS,
    OBJECTIVES,
    TSA_SCHEDULES,
    build,
    network_name,
    tsa_threshold,
    uda_objective,
)
from tasks.metrics import ClassificationMetrics, GuessKeepingAccuracy, accuracy_metrics

SCHEDULES = ("cosine-7/16", "linear", "bert-linear", "step", "constant")
OPTIMIZERS = ("sgd", "adamw", "bert-adamw")


def schedule_factor(schedule: str, progress: float, warmup: float = 0.0, milestones: tuple[float, ...] = ()) -> float:
    """The learning-rate multiplier at ``progress = t / T``: a linear warm-up over ``warmup``, then
    ``cos(7 pi p / 16)`` (the paper's Wide-ResNet schedule), a linear decay from 1 to 0 over the rest, BERT's
    ``1 - p`` (its decay runs over all of training, the warm-up overriding its start), ``0.1 ** (milestones
    passed)`` (``step``), or 1."""
    p = min(1.0, max(0.0, progress))
    if p < warmup:
        return p / warmup
    if schedule == "cosine-7/16":
        return math.cos(7 * math.pi * p / 16)
    if schedule == "linear":
        return max(0.0, (1 - p) / max(1e-8, 1 - warmup))
    if schedule == "bert-linear":
        return 1 - p
    if schedule == "step":
        return 0.1 ** sum(p >= m for m in milestones)
    return 1.0


class UDASystem(pl.LightningModule):
    """UDA (``objective: uda``) or its supervised baseline (``supervised``) on a network of ``model.NETWORKS``."""

    def __init__(
        self,
        model: str = "uda-wrn-28-2",
        objective: str = "uda",
        num_classes: int = 10,
        vocab_size: int | None = None,
        uda_weight: float = 1.0,
        tsa: str = "none",
        temperature: float = 0.4,
        confidence: float = 0.8,
        optimizer: str = "sgd",
        lr: float = 0.03,
        momentum: float = 0.9,
        weight_decay: float = 5e-4,
        schedule: str = "cosine-7/16",
        warmup: float = 0.0,
        milestones: tuple[float, ...] = (),
        entropy_weight: float = 0.0,
        ema_decay: float = 0.0,
        init_checkpoint: str | None = None,
        num_threads: int | None = None,
    ) -> None:
        """``uda_weight`` is lambda, ``temperature`` tau, ``confidence`` beta; ``tsa`` one of none/linear/log/exp;
        ``milestones`` the fractions of training where ``schedule: step`` divides the rate by 10;
        ``entropy_weight`` the weight of entropy minimisation on the unlabelled originals (0: none); ``ema_decay``
        the decay of the weights' moving average that is evaluated (0: none); ``init_checkpoint`` the encoder's
        pre-trained weights (BERT models only)."""
        super().__init__()
        self.save_hyperparameters()
        if objective not in OBJECTIVES:
            raise HarnessError(f"objective must be one of {OBJECTIVES}; got {objective!r}")
        if tsa not in TSA_SCHEDULES or schedule not in SCHEDULES or optimizer not in OPTIMIZERS:
            raise HarnessError(
                f"tsa must be one of {TSA_SCHEDULES}, schedule one of {SCHEDULES}, optimizer one of {OPTIMIZERS}; "
                f"got {tsa!r}, {schedule!r}, {optimizer!r}"
            )
        if not 0.0 <= ema_decay < 1.0 or any(not 0.0 < m <= 1.0 for m in milestones):
            raise HarnessError(f"need 0 <= ema_decay < 1 and milestones in (0, 1]; got {ema_decay}, {milestones}")
        if num_threads:
            torch.set_num_threads(num_threads)
        self.model = build(model, num_classes, vocab_size)
        if init_checkpoint is not None:
            load_encoder(self.model, init_checkpoint)
        self.text = NETWORKS[network_name(model)].kind in ("bert", "bow")
        self.val_metrics = self.metrics("val/")
        self.test_metrics = nn.ModuleList()

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.model(inputs)  # images (N, C, H, W) or token ids (N, T) -> (N, num_classes)

    def progress(self) -> float:
        total = self.trainer.estimated_stepping_batches if self.trainer is not None else 0
        return self.global_step / total if total and math.isfinite(total) else 0.0

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        hp = self.hparams
        labelled, labels = batch["labelled"], batch["labels"]
        eta = tsa_threshold(hp.tsa, self.progress(), hp.num_classes)
        if hp.objective == "supervised" or "original" not in batch:
            result = uda_objective(self(labelled), labels, tsa_eta=eta)
        else:
            parts = (labelled, batch["original"], batch["augmented"])
            logits = self(pad_cat(parts)).split([len(p) for p in parts])
            result = uda_objective(*logits[:1], labels, *logits[1:], hp.uda_weight, eta, hp.temperature, hp.confidence,
                                   hp.entropy_weight)  # fmt: skip
        self.log_dict(
            {"train/loss": result.loss, "train/supervised": result.supervised, "train/consistency": result.consistency,
             "train/tsa_threshold": eta, "train/tsa_kept": result.tsa_kept, "train/unmasked": result.unmasked},
            prog_bar=False,
        )  # fmt: skip
        if result.entropy is not None:
            self.log("train/entropy", result.entropy)
        return result.loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        inputs, labels = batch
        self.val_metrics.update(self(inputs), labels)
        self.log_dict(self.val_metrics, prog_bar=True)

    def on_test_start(self) -> None:
        """One metric collection per test dataloader (they keep the run's predictions; harness.evaluators)."""
        self.test_metrics = per_test_loader(self, lambda _: self.metrics())

    def metrics(self, prefix: str = "") -> ClassificationMetrics:
        """``top1``, ``top5``, ``error`` for images; ``top1`` and ``error`` for text (the text scorers' keys)."""
        if not self.text:
            return accuracy_metrics(self.hparams.num_classes, prefix)
        top1 = GuessKeepingAccuracy(num_classes=self.hparams.num_classes, top_k=1, average="micro")
        plain = MulticlassAccuracy(num_classes=self.hparams.num_classes, top_k=1, average="micro")
        metrics = {"top1": 100 * top1, "error": 100 - 100 * plain}
        return ClassificationMetrics(metrics, prefix=prefix, compute_groups=False)

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        inputs, labels = batch
        self.test_metrics[dataloader_idx].update(self(inputs), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        if hp.optimizer == "sgd":
            groups = l2_param_groups(self.model, hp.weight_decay)
            optimizer = torch.optim.SGD(groups, lr=hp.lr, momentum=hp.momentum, nesterov=True)
        elif hp.optimizer == "bert-adamw":
            optimizer = bert_adamw(self.model, hp.lr, hp.weight_decay)
        else:
            optimizer = torch.optim.AdamW(self.model.parameters(), lr=hp.lr, weight_decay=hp.weight_decay)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        milestones = tuple(hp.milestones)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: schedule_factor(hp.schedule, step / total, hp.warmup, milestones)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def configure_callbacks(self) -> list[Callback]:
        """The moving average of the weights and batch-norm statistics (constant decay, no ramp), when on."""
        if not self.hparams.ema_decay:
            return []
        return [WeightAveraging(avg_fn=tf_ema_avg_fn(self.hparams.ema_decay, ramp=False), use_buffers=True)]


def pad_cat(parts: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Concatenate batches along the batch axis; token-id batches of different lengths are padded with 0 first."""
    if parts[0].dtype.is_floating_point or len({p.shape[1] for p in parts}) == 1:
        return torch.cat(parts)
    width = max(p.shape[1] for p in parts)
    return torch.cat([nn.functional.pad(p, (0, width - p.shape[1])) for p in parts])


def load_encoder(model: nn.Module, path: str) -> None:
    """Pre-trained encoder weights (a :mod:`nets.bert_weights` conversion of released BERT weights: every tensor of
    the encoder, nothing else) into a BERT classifier; errors name the file."""
    from nets.weights import read_state

    encoder = getattr(model, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        raise HarnessError(f"{path}: init_checkpoint holds BERT encoder weights; the model is a {type(model).__name__}")
    try:
        encoder.load_state_dict(read_state(path))
    except RuntimeError as exc:
        raise HarnessError(f"{path}: weights do not fit the model's BERT encoder: {exc}") from None


def bert_adamw(model: nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """BERT's optimiser (``bert-adamw``): Adam with decoupled weight decay on :func:`bert_param_groups`, epsilon
    1e-6, as fine-tuning and the further pre-training both use it."""
    return torch.optim.AdamW(bert_param_groups(model, weight_decay), lr=lr, betas=(0.9, 0.999), eps=1e-6)


def bert_param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """BERT's decay groups: LayerNorm weights and every bias without weight decay, the other weights with it."""
    no_decay = {id(m.weight) for m in model.modules() if isinstance(m, nn.LayerNorm)}
    no_decay |= {id(p) for name, p in model.named_parameters() if name.endswith("bias")}
    params = list(model.parameters())
    return [
        {"params": [p for p in params if id(p) not in no_decay], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) in no_decay], "weight_decay": 0.0},
    ]


class BertPretrainSystem(pl.LightningModule):
    """BERT_FINETUNE's first stage (Appendix E.1): BERT large's masked-LM (and next-sentence) pre-training continued
    from the released weights on the task's unlabelled text (:mod:`nets.masked_lm`). Its checkpoint's
    ``model.encoder.`` tensors start the fine-tuning configs' ``uda-bert-finetune`` (``init_from``).

    A batch is :class:`reproductions.uda.data.MaskedLMDataModule`'s: fixed-length ``input_ids``, ``token_type_ids``,
    ``attention_mask``, ``candidates`` (the WordPieces that may be masked) and ``next_sentence_label``. The masks are
    drawn here, per step, from ``(seed, rank, step, batch_idx)`` (dynamic: a text gets new masks each time it is
    read; the test set's masks are fixed by ``eval_seed`` alone, so every run is scored on the same masked tokens).
    ``mask_id`` is the vocabulary's ``[MASK]`` (103 in the released files; checked against the data module's).
    The loss is BERT's: the masked-LM cross-entropy plus, with ``next_sentence``, the next-sentence one. Optimiser and
    schedule as fine-tuning's (``bert-adamw``, ``bert-linear`` with a ``warmup`` fraction), as the release's
    ``run_pretraining.py`` uses the same ``optimization.py``. Test metrics (held-out texts): ``loss`` (BERT's, what
    the paper picks checkpoints by), ``mlm_loss``, ``mlm_accuracy``, ``nsp_loss``, ``nsp_accuracy`` (percent)."""

    def __init__(
        self,
        model: str = "uda-bert-finetune",
        vocab_size: int | None = None,
        next_sentence: bool = True,
        mask_rate: float = 0.15,
        max_predictions: int | None = None,
        mask_id: int = 103,
        lr: float = 5e-5,
        weight_decay: float = 0.01,
        warmup: float = 0.1,
        init_checkpoint: str | None = None,
        init_heads: str | None = None,
        seed: int | None = None,
        eval_seed: int = 0,
        num_threads: int | None = None,
    ) -> None:
        """``init_checkpoint``: converted encoder weights (:mod:`nets.bert_weights`); ``init_heads``: the release's
        pre-training heads converted with ``--heads`` (without it the heads start at N(0, 0.02)); ``seed``: the
        masks' seed (default: the run's, ``torch.initial_seed()``)."""
        super().__init__()
        self.save_hyperparameters()
        from nets.bert import SIZES
        from nets.masked_lm import BertPreTraining

        row = NETWORKS[network_name(model)]
        if row.kind != "bert" or not 0.0 < mask_rate < 1.0:
            raise HarnessError(f"masked-LM pre-training needs a BERT model and 0 < mask_rate < 1; got {model!r}, "
                               f"{mask_rate}")  # fmt: skip
        if num_threads:
            torch.set_num_threads(num_threads)
        size = SIZES[row.args["size"]]
        self.model = BertPreTraining(size._replace(vocab=vocab_size) if vocab_size else size, next_sentence)
        if init_checkpoint is not None:
            load_encoder(self.model, init_checkpoint)
        if init_heads is not None:
            load_heads(self.model, init_heads)
        self.seed = seed if seed is not None else torch.initial_seed()
        self.test_sums: dict[str, float] = {}

    def setup(self, stage: str) -> None:
        datamodule = getattr(self.trainer, "datamodule", None) if self.trainer is not None else None
        found = getattr(datamodule, "mask_id", self.hparams.mask_id)
        if found != self.hparams.mask_id:
            raise HarnessError(f"mask_id is {self.hparams.mask_id} but the data module's vocabulary has [MASK] {found}")

    def losses(self, batch: dict[str, torch.Tensor], generator: torch.Generator) -> dict[str, torch.Tensor]:
        """The masked-LM and next-sentence losses of one batch, with what the test metrics count."""
        from nets.masked_lm import mask_tokens, masked_lm_loss

        hp = self.hparams
        vocab = self.model.encoder.tokens.num_embeddings
        masked = mask_tokens(batch["input_ids"], batch["candidates"], generator, hp.mask_id, vocab, 0, hp.mask_rate,
                             hp.max_predictions)  # fmt: skip
        out = self.model(masked.inputs, masked.labels, batch["attention_mask"], batch["token_type_ids"])
        mlm = masked_lm_loss(out.mlm_logits, out.mlm_targets)
        parts = {"mlm_loss": mlm, "mlm_correct": (out.mlm_logits.argmax(-1) == out.mlm_targets).sum(),
                 "mlm_count": torch.tensor(out.mlm_targets.numel()), "loss": mlm}  # fmt: skip
        if out.nsp_logits is not None:
            labels = batch["next_sentence_label"]
            parts["nsp_loss"] = nn.functional.cross_entropy(out.nsp_logits.float(), labels)
            parts["nsp_correct"] = (out.nsp_logits.argmax(-1) == labels).sum()
            parts["loss"] = mlm + parts["nsp_loss"]
        return parts

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        from nets.masked_lm import step_generator

        parts = self.losses(batch, step_generator(self.seed, self.global_rank, self.global_step, batch_idx))
        self.log_dict({f"train/{k}": v for k, v in parts.items() if k.endswith("loss")}, prog_bar=False)
        return parts["loss"]

    def on_test_start(self) -> None:
        self.test_sums = {}

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Sums over the held-out set (losses weighted by what they average over), reduced at the epoch's end."""
        from nets.masked_lm import step_generator

        parts = self.losses(batch, step_generator(self.hparams.eval_seed, batch_idx))
        rows, count = len(batch["input_ids"]), float(parts["mlm_count"])
        sums = {"mlm_loss": float(parts["mlm_loss"]) * count, "mlm_correct": float(parts["mlm_correct"]),
                "mlm_count": count, "rows": float(rows)}  # fmt: skip
        if "nsp_loss" in parts:
            sums |= {"nsp_loss": float(parts["nsp_loss"]) * rows, "nsp_correct": float(parts["nsp_correct"])}
        for key, value in sums.items():
            self.test_sums[key] = self.test_sums.get(key, 0.0) + value

    def on_test_epoch_end(self) -> None:
        sums = {k: torch.tensor(v, dtype=torch.float64, device=self.device) for k, v in self.test_sums.items()}
        sums = {k: self.all_gather(v).sum() for k, v in sums.items()}  # several devices: each held-out text once
        metrics = {"mlm_loss": sums["mlm_loss"] / sums["mlm_count"],
                   "mlm_accuracy": 100 * sums["mlm_correct"] / sums["mlm_count"]}  # fmt: skip
        if "nsp_loss" in sums:
            rows = sums["rows"]
            metrics |= {"nsp_loss": sums["nsp_loss"] / rows, "nsp_accuracy": 100 * sums["nsp_correct"] / rows}
        metrics["loss"] = metrics["mlm_loss"] + metrics.get("nsp_loss", 0.0)
        self.log_dict({f"test/{k}": float(v) for k, v in metrics.items()}, rank_zero_only=True)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        optimizer = bert_adamw(self.model, hp.lr, hp.weight_decay)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: schedule_factor("bert-linear", step / total, hp.warmup)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def load_heads(model: nn.Module, path: str) -> None:
    """The release's pre-training heads (``nets.bert_weights --heads``) into a :class:`nets.masked_lm.BertPreTraining`
    (the next-sentence layer's left out when the model has none); every head tensor must be there."""
    from nets.weights import read_state

    state = read_state(path)
    if getattr(model, "next_sentence", None) is None:
        state = {k: v for k, v in state.items() if not k.startswith("next_sentence.")}
    expected = {k for k in model.state_dict() if not k.startswith("encoder.")}
    if set(state) != expected:
        raise HarnessError(f"{path}: pre-training heads {sorted(state)}; the model's are {sorted(expected)}")
    try:
        model.load_state_dict(state, strict=False)
    except RuntimeError as exc:
        raise HarnessError(f"{path}: heads do not fit the model: {exc}") from None
