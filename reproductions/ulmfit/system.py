"""ULMFiT's training loops (arXiv 1801.06146v5, Sections 3 and 4.1) as LightningModules: one for the language model
(stage a, general-domain pre-training, and stage b, target-task LM fine-tuning) and one for the classifier (stage c).

Shared recipe (Section 4.1): Adam with ``β1 = 0.7``, ``β2 = 0.99``; base learning rate 0.004 for fine-tuning the
LM and 0.01 for the classifier; discriminative learning rates ``η^{l-1} = η^l / 2.6`` over the layer groups
(``model.layer_groups()``); slanted triangular learning rates over the whole run (``cut_frac = 0.1``,
``ratio = 32``); "the same practices used in (Merity et al., 2017a)": activation regularisation (``α = 2``, on the
dropped last-layer outputs) and temporal activation regularisation (``β = 1``, on the last layer's raw outputs),
gradient clipping (the config's ``trainer.gradient_clip_val``).

The classifier's ``recipe`` is one row of Table 7: whether layers are unfrozen gradually (``freez``), whether
learning rates are discriminative (``discr``), and the schedule (``stlr``, ``cos``, or constant). Learning rates as
Section 5 gives them: ``η^L = 0.01`` with ``discr``, ``η_max = 0.01`` with a schedule (Section 3.2's STLR), "and a
learning rate of 0.001 otherwise". ``from-scratch`` trains every layer at once with STLR (no pre-trained weights:
its config has no ``init_from``); ``last`` trains the head only; ``chain-thaw`` (Felbo et al.) trains the head, then
each layer alone from the bottom up, then all, at 0.001 for the head and 0.0001 below.

Test metrics: the LM logs ``test/perplexity`` with :class:`StreamPerplexity` (``tasks.debian_corpora``'s
``TokenPerplexity``, written in the references' order); the classifier ``test/accuracy`` and ``test/error``
(percent), the keys of the classification tasks' scorers. Both keep their predictions (``harness.predictions``), so
``harness rescore`` gives a run's metrics back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from harness.evaluators import named, per_test_loader
from harness.predictions import Scoring, check_count
from nets.finetune import (
    chain_thaw,
    cosine_annealing,
    discriminative_lrs,
    set_trainable,
    slanted_triangular,
    trainable_groups,
)
from nets.weights import read_state
from reproductions.ulmfit.model import LanguageModel, TextClassifier, detach_state, reverse_documents
from reproductions.ulmfit.variants import MODELS, build
from tasks.debian_corpora.metric import TokenPerplexity
from tasks.language_modeling.score import write_log_probs
from tasks.metrics import accuracy_error_metrics as classification_metrics

BETAS = (0.7, 0.99)


@dataclass(frozen=True)
class Recipe:
    """A row of Table 7: gradual unfreezing, discriminative learning rates, schedule."""

    unfreeze: str  # "gradual", "none" (all layers at once), "last" (the head only) or "chain" (chain-thaw)
    discriminative: bool
    schedule: str  # "stlr", "cos" or "constant"


RECIPES = {
    "from-scratch": Recipe("none", False, "stlr"),
    "full": Recipe("none", False, "constant"),
    "full+discr": Recipe("none", True, "constant"),
    "last": Recipe("last", False, "constant"),
    "chain-thaw": Recipe("chain", False, "constant"),
    "freez": Recipe("gradual", False, "constant"),
    "freez+discr": Recipe("gradual", True, "constant"),
    "freez+stlr": Recipe("gradual", False, "stlr"),
    "freez+cos": Recipe("gradual", False, "cos"),
    "freez+discr+stlr": Recipe("gradual", True, "stlr"),  # ULMFiT
}


def top_lr(recipe: Recipe, lr: float | None) -> float:
    """Section 5: 0.01 for 'Discr' (η^L) and for a schedule's peak, "a learning rate of 0.001 otherwise"."""
    if lr is not None:
        return lr
    return 0.01 if recipe.discriminative or recipe.schedule != "constant" else 0.001


def schedule_factor(schedule: str, step: int, total: int, cut_frac: float, ratio: float) -> float:
    if schedule == "stlr":
        return slanted_triangular(step, total, cut_frac, ratio)
    if schedule == "cos":
        return cosine_annealing(step, total)
    return 1.0


def param_groups(groups: list[list[nn.Module]], lrs: list[float]) -> list[dict]:
    """One optimizer group per layer group; a tied tensor is listed once (in the lowest group holding it)."""
    seen: set[int] = set()
    result = []
    for modules, lr in zip(groups, lrs, strict=True):
        params = []
        for parameter in (p for module in modules for p in module.parameters()):
            if id(parameter) not in seen:
                seen.add(id(parameter))
                params.append(parameter)
        result.append({"params": params, "lr": lr, "initial_lr": lr})
    return result


def scheduled_optimizer(module: pl.LightningModule, groups: list[dict], schedule: str) -> dict:
    """Adam (β1 0.7, β2 0.99) over ``groups`` with ``schedule`` stepped every batch over the whole fit."""
    hp = module.hparams
    optimizer = torch.optim.Adam(groups, betas=tuple(hp.betas), weight_decay=hp.weight_decay)
    total = max(1, int(module.trainer.estimated_stepping_batches))

    def factor(step: int) -> float:
        return schedule_factor(schedule, step, total, hp.cut_frac, hp.ratio)

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def set_threads(num_threads: int | None) -> None:
    """CPU threads for torch's kernels (``None``: torch's default). The budget configs use one: an LSTM's small
    per-step products gain little from a second thread and lose much when the cores are shared."""
    if num_threads is not None:
        torch.set_num_threads(num_threads)


def load_language_model(model: LanguageModel, path: str) -> None:
    """Load a whole LM state (read safely, ``nets.weights``); a file without ``decoder.weight`` (it is the tied
    embedding) gets it from ``encoder.embedding.weight``."""
    state = read_state(path)
    state.setdefault("decoder.weight", state.get("encoder.embedding.weight"))
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise HarnessError(f"{path}: weights do not fit the model: {exc}") from None


class StreamPerplexity(TokenPerplexity):
    """``TokenPerplexity`` whose predictions are written in the order of the references: ``Scoring.ids`` give each
    kept target's position there (a backward LM reads the stream, and keeps its targets, from the end)."""

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        if not self.kept_targets:
            return super().write_predictions(folder, scoring)  # its error: no predictions kept
        targets, log_probs = torch.cat(self.kept_targets), torch.cat(self.kept_log_probs)
        check_count(len(targets), scoring, "token log-probabilities")
        order = torch.tensor(list(scoring.ids)[: len(targets)]).argsort()
        tokens = [scoring.label(target) for target in targets[order].tolist()]
        return {"predictions": write_log_probs(Path(folder) / "log_probs.tsv", tokens, log_probs[order].tolist())}


def ar_tar(dropped: torch.Tensor, raw: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """Merity et al.'s AR ``α · mean(dropped²)`` and TAR ``β · mean((h_t - h_{t-1})²)`` of the last layer."""
    loss = alpha * dropped.pow(2).mean() if alpha else dropped.new_zeros(())
    if beta and raw.shape[1] > 1:
        loss = loss + beta * (raw[:, 1:] - raw[:, :-1]).pow(2).mean()
    return loss


class LanguageModelSystem(pl.LightningModule):
    """Stages a and b: an AWD-LSTM LM trained on a token stream whose state carries across windows."""

    def __init__(
        self,
        model: str = "ulmfit-awd-lstm-lm",
        vocab_size: int = 60_000,
        lr: float = 0.004,
        discriminative: bool = True,
        schedule: str = "stlr",
        factor: float = 2.6,
        cut_frac: float = 0.1,
        ratio: float = 32.0,
        betas: tuple[float, float] = BETAS,
        weight_decay: float = 0.0,
        alpha: float = 2.0,
        beta: float = 1.0,
        num_threads: int | None = None,
        checkpoint: str | None = None,
        init_checkpoint: str | None = None,
        pad_id: int = 0,
    ) -> None:
        """``checkpoint`` (weights to evaluate) or ``init_checkpoint`` (weights to fine-tune from): this model's
        state as ``.safetensors`` (e.g. the released WikiText-103 LM converted by ``reproductions.ulmfit.weights``).
        ``pad_id``: the vocabulary's padding token (0 for the budget vocabulary, 1 for ULMFiT's ``xxpad``)."""
        super().__init__()
        self.save_hyperparameters()
        set_threads(num_threads)
        if MODELS.get(model, (None,))[0] != "lm":
            raise HarnessError(f"{model!r} is not a ULMFiT language model; known: {', '.join(lm_ids())}")
        self.model: LanguageModel = build(model, vocab_size, pad_id=pad_id)
        if checkpoint or init_checkpoint:
            load_language_model(self.model, checkpoint or init_checkpoint)
        self.state = None
        self.test_metrics = nn.ModuleList()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids)

    def on_train_epoch_start(self) -> None:
        self.state = None

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        inputs, targets = batch
        logits, state, raw, dropped = self.model.step(inputs, self.state)
        self.state = detach_state(state)
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss = nll + ar_tar(dropped, raw[-1], self.hparams.alpha, self.hparams.beta)
        self.log_dict({"train/nll": nll, "train/lr": self.lr_schedulers().get_last_lr()[-1]}, prog_bar=True)
        return loss

    def _log_probs(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits, state, _, _ = self.model.step(inputs, self.state)
        self.state = detach_state(state)
        return logits.log_softmax(-1).gather(-1, targets[..., None])[..., 0]

    def on_validation_epoch_start(self) -> None:
        self.state = None
        self.val_perplexity = TokenPerplexity().to(self.device)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        self.val_perplexity.update(self._log_probs(*batch))
        self.log("val/perplexity", self.val_perplexity, prog_bar=True)

    def on_test_start(self) -> None:
        self.state = None
        self.test_metrics = per_test_loader(self, lambda _: StreamPerplexity(), named("perplexity"))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        inputs, targets = batch
        self.test_metrics[dataloader_idx].update(self._log_probs(inputs, targets), targets)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        groups = self.model.layer_groups()
        lrs = discriminative_lrs(len(groups), hp.lr, hp.factor if hp.discriminative else 1.0)
        return scheduled_optimizer(self, param_groups(groups, lrs), hp.schedule)


class ClassifierSystem(pl.LightningModule):
    """Stage c: the classifier fine-tuned with one of Table 7's recipes (default: ULMFiT's)."""

    def __init__(
        self,
        model: str = "ulmfit-classifier",
        vocab_size: int = 60_000,
        num_classes: int = 2,
        recipe: str = "freez+discr+stlr",
        lr: float | None = None,
        factor: float = 2.6,
        cut_frac: float = 0.1,
        ratio: float = 32.0,
        betas: tuple[float, float] = BETAS,
        weight_decay: float = 0.0,
        bptt: int = 70,
        num_threads: int | None = None,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        set_threads(num_threads)
        if recipe not in RECIPES:
            raise HarnessError(f"unknown recipe {recipe!r}; Table 7's rows here: {', '.join(RECIPES)}")
        if MODELS.get(model, (None,))[0] != "classifier":
            raise HarnessError(f"{model!r} is not a ULMFiT classifier; known: {', '.join(classifier_ids())}")
        self.recipe = RECIPES[recipe]
        self.model: TextClassifier = build(model, vocab_size, num_classes=num_classes, bptt=bptt, pad_id=pad_id)
        self.test_metrics = nn.ModuleList()

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        return self.model(input_ids, lengths)

    def on_train_epoch_start(self) -> None:
        groups = self.model.layer_groups()
        if self.recipe.unfreeze == "gradual":
            set_trainable(groups, trainable_groups(self.current_epoch, len(groups)))
        elif self.recipe.unfreeze == "last":
            set_trainable(groups, 1)
        elif self.recipe.unfreeze == "chain":
            set_trainable(groups, chain_thaw(self.current_epoch, len(groups)))

    def training_step(self, batch: tuple, batch_idx: int) -> torch.Tensor:
        (ids, lengths), labels = batch
        loss = F.cross_entropy(self(ids, lengths), labels)
        self.log_dict({"train/loss": loss, "train/lr": self.lr_schedulers().get_last_lr()[-1]}, prog_bar=True)
        return loss

    def on_validation_epoch_start(self) -> None:
        self.val_metrics = classification_metrics(self.hparams.num_classes, prefix="val/").to(self.device)

    def validation_step(self, batch: tuple, batch_idx: int) -> None:
        (ids, lengths), labels = batch
        self.val_metrics.update(self(ids, lengths), labels)
        self.log_dict(self.val_metrics, prog_bar=True)

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: classification_metrics(self.hparams.num_classes))

    def test_step(self, batch: tuple, batch_idx: int, dataloader_idx: int = 0) -> None:
        (ids, lengths), labels = batch
        self.test_metrics[dataloader_idx].update(self(ids, lengths), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp, recipe = self.hparams, self.recipe
        groups = self.model.layer_groups()
        factor = hp.factor if recipe.discriminative else 1.0
        lrs = discriminative_lrs(len(groups), top_lr(recipe, hp.lr), factor)
        if recipe.unfreeze == "chain":  # Section 5: "0.001 and 0.0001 for the last and all other layers"
            lrs = [lr / 10 for lr in lrs[:-1]] + lrs[-1:]
        return scheduled_optimizer(self, param_groups(groups, lrs), recipe.schedule)


class EnsembleSystem(pl.LightningModule):
    """Section 3.3's bidirectional model: "We fine-tune a classifier for each LM independently using BPT3C and average
    the classifier predictions". Evaluation only (``fit: false``): a forward classifier (``fwd``) and a backward one
    (``bwd``), loaded from their runs (``init_from``, a list of the two with ``into: fwd.`` and ``into: bwd.``); the
    test batches are read left to right, ``bwd`` gets each document reversed; their class probabilities are averaged.
    """

    def __init__(
        self,
        model: str = "ulmfit-classifier",
        vocab_size: int = 60_000,
        num_classes: int = 2,
        bptt: int = 70,
        num_threads: int | None = None,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        set_threads(num_threads)
        if MODELS.get(model, (None,))[0] != "classifier":
            raise HarnessError(f"{model!r} is not a ULMFiT classifier; known: {', '.join(classifier_ids())}")
        kwargs = {"num_classes": num_classes, "bptt": bptt, "pad_id": pad_id}
        self.fwd: TextClassifier = build(model, vocab_size, **kwargs)
        self.bwd: TextClassifier = build(model, vocab_size, **kwargs)
        self.test_metrics = nn.ModuleList()

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The averaged class probabilities (B, classes) of the two classifiers."""
        backward = reverse_documents(input_ids, lengths, self.hparams.pad_id)
        return (self.fwd(input_ids, lengths).softmax(-1) + self.bwd(backward, lengths).softmax(-1)) / 2

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: classification_metrics(self.hparams.num_classes))

    def test_step(self, batch: tuple, batch_idx: int, dataloader_idx: int = 0) -> None:
        (ids, lengths), labels = batch
        self.test_metrics[dataloader_idx].update(self(ids, lengths), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)


def lm_ids() -> list[str]:
    return [name for name, (kind, *_) in MODELS.items() if kind == "lm"]


def classifier_ids() -> list[str]:
    return [name for name, (kind, *_) in MODELS.items() if kind == "classifier"]
