"""Lightning systems for GPT (Radford et al. 2018): generative pre-training (Eq. 1), then discriminative
fine-tuning with the auxiliary LM objective (Eq. 5), as two stages of a chain (``init_from``, docs/plugins.md).

- :class:`GPTPretrainSystem`: ``L_1(U)``, next-symbol cross-entropy over contiguous sequences; Adam (the released
  optimiser, :class:`~reproductions.gpt.optim.OpenAIAdam`: decoupled weight decay 0.01 on matrices, gradients
  clipped to norm 1), max lr 2.5e-4, linear warm-up over ``warmup_steps`` updates then cosine annealing to 0
  (:func:`nets.schedules.warmup_cosine`). Test: word-level perplexity of ``debian-lm`` (a word's log-probability is
  the sum of its BPE symbols'; :class:`~reproductions.gpt.data.GPTLMDataModule`).
- :class:`GPTFineTuneSystem`: ``L_3(C) = L_2(C) + lambda L_1(C)`` with ``lambda = lm_coef`` (0.5; 0 drops the
  auxiliary objective); lr 6.25e-5 with a linear warm-up over 0.2% of training then linear decay
  (:func:`nets.schedules.warmup_linear`); classifier dropout 0.1. ``transfer_layers`` keeps the pre-trained token
  and position embeddings and the first ``k`` blocks and re-initialises the rest before training (Figure 2, left;
  the release's ``n_transfer``): ``None`` keeps all, ``-1`` none (Table 5's "w/o pre-training").

Batches: pre-training ``(ids (B, T+1),)``; test ``(inputs, targets, word ends, mask)`` rows; fine-tuning
``((ids, mask), labels)``. Test metrics: ``perplexity``, ``nll``, ``tokens`` (LM); ``accuracy``, ``error`` (the Debian
classification corpora); with a ``task`` of Tables 2-5, each test task's own (``finetune.test_metric``: GLUE's
``accuracy``, ``f1``, ``mcc``, ``pearson``, ``spearman``; ``accuracy`` elsewhere).
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from harness.evaluators import counted, per_test_loader
from nets.schedules import warmup_cosine, warmup_linear
from nets.weights import read_state
from reproductions.gpt.finetune import REGRESSION, predictions, task_input, test_metric
from reproductions.gpt.model import GPT, language_model, lm_loss, task_model
from reproductions.gpt.optim import OpenAIAdam
from reproductions.gpt.variants import VARIANTS
from tasks.debian_corpora.metric import TokenPerplexity
from tasks.metrics import accuracy_error_metrics as classification_metrics

NEW = ("special.", "classifier.")  # what fine-tuning adds to the LM (Section 3.2)


def variant(model: str):  # noqa: ANN201 (a variants.Variant)
    if model not in VARIANTS:
        raise HarnessError(f"unknown GPT model id {model!r}; known: {', '.join(VARIANTS)}")
    return VARIANTS[model]


def optimizer(module: nn.Module, lr: float, l2: float, schedule, trainer: pl.Trainer) -> dict:  # noqa: ANN001
    """The released Adam with a per-update ``LambdaLR`` over the run's total number of updates."""
    total = int(trainer.estimated_stepping_batches)
    opt = OpenAIAdam(module.parameters(), lr=lr, l2=l2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, schedule(total))
    return {"optimizer": opt, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def word_log_probs(
    symbols: torch.Tensor, ends: torch.Tensor, partial: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each word's log-probability, the sum of its symbols': ``symbols`` (N,) in stream order, ``ends`` (N,) True
    at a word's last symbol, ``partial`` the sum of the symbols of a word begun before them. Returns the words
    completed here and the new ``partial``."""
    totals = symbols.double().cumsum(0)
    at_ends = totals[ends]  # the running sum at each word's last symbol
    words = at_ends - torch.cat([at_ends.new_zeros(1), at_ends[:-1]])
    if not len(words):
        return words, partial + (totals[-1] if len(totals) else 0)
    words[0] += partial
    return words, totals[-1] - at_ends[-1]


class GPTPretrainSystem(pl.LightningModule):
    """Generative pre-training of the LM ``model`` (its size from :data:`~reproductions.gpt.variants.VARIANTS`)."""

    def __init__(self, model: str = "gpt", lr: float = 2.5e-4, warmup_steps: int = 2000, l2: float = 0.01) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model: GPT = language_model(variant(model).size)
        self._partial, self._words = torch.zeros((), dtype=torch.float64), 0  # a word begun in the last batch

    def training_step(self, batch: tuple[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (ids,) = batch
        logits = self.model(ids[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.transpose(1, 2), ids[:, 1:])
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: TokenPerplexity(), counted)
        self._partial, self._words = torch.zeros((), dtype=torch.float64), 0

    def test_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int, dataloader_idx: int = 0) -> None:
        window, ends, mask = batch  # (B, T + 1): each row's targets led by the symbol before them
        inputs, targets = window[:, :-1], window[:, 1:]
        log_probs = self.model(inputs).log_softmax(-1).gather(-1, targets[..., None])[..., 0]  # (B, T)
        words, self._partial = word_log_probs(log_probs[mask], ends[mask], self._partial)
        ids = torch.arange(self._words, self._words + len(words), device=words.device)
        self._words += len(words)
        self.test_metrics[dataloader_idx].update(words, targets=ids)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        warmup = self.hparams.warmup_steps
        return optimizer(self, self.hparams.lr, self.hparams.l2, lambda t: warmup_cosine(t, warmup / t), self.trainer)


class GPTFineTuneSystem(pl.LightningModule):
    """Fine-tuning the LM ``model`` with Figure 1's head for task ``kind`` and ``classes`` outputs."""

    def __init__(
        self,
        model: str = "gpt",
        classes: int = 2,
        kind: str = "classification",
        lr: float = 6.25e-5,
        warmup: float = 0.002,
        lm_coef: float = 0.5,
        l2: float = 0.01,
        transfer_layers: int | None = None,
        checkpoint: str | None = None,
        task: str | None = None,
    ) -> None:
        """``checkpoint``: pre-trained LM weights to start from (e.g. the released ones, converted by
        ``python -m reproductions.gpt.weights``), instead of a chain's ``init_from``. ``task``: a task of Tables
        2-5 (:data:`reproductions.gpt.finetune.TASKS`, whose ``kind`` and ``classes`` must be these): each test loader
        is scored by its task's own metric (``finetune.test_metric``), STS-B trained as a regression (squared error);
        without it, the Debian corpora's classification metrics."""
        super().__init__()
        self.save_hyperparameters()
        if task is not None:
            expected = task_input(task)
            if (kind, classes) != expected[:2]:
                raise HarnessError(
                    f"task {task} is a {expected.kind} task with {expected.classes} outputs; got kind {kind!r}, "
                    f"classes {classes}"
                )
        self.model = task_model(variant(model).size, classes, kind)
        if checkpoint is not None:
            self._load_lm(checkpoint)
        layers = self.model.config.layers
        if transfer_layers is not None and not -1 <= transfer_layers <= layers:
            raise HarnessError(f"transfer_layers is -1 .. {layers} (or null: all); got {transfer_layers}")
        self._fresh = {name: t.detach().clone() for name, t in self.state_dict().items() if self._reset(name)}

    def _load_lm(self, checkpoint: str) -> None:
        """The LM's tensors (tokens, positions, blocks) from ``checkpoint``; the head and special tokens stay new."""
        state = read_state(checkpoint)
        missing = set(self.model.state_dict()) - set(state) - {n for n in self.model.state_dict() if n.startswith(NEW)}
        if missing:
            raise HarnessError(f"{checkpoint}: no tensor {sorted(missing)[0]!r} of the GPT language model")
        try:
            self.model.load_state_dict({k: v for k, v in state.items() if not k.startswith(NEW)}, strict=False)
        except RuntimeError as exc:
            raise HarnessError(f"{checkpoint}: weights do not fit {self.hparams.model}: {exc}") from exc

    def _reset(self, name: str) -> bool:
        """Whether tensor ``name`` goes back to its fresh initialisation before training (not transferred)."""
        k = self.hparams.transfer_layers
        if k is None:
            return False
        if name.startswith(("model.tokens.", "model.positions.")):
            return k < 0
        return name.startswith("model.blocks.") and int(name.split(".")[2]) >= max(k, 0)

    def on_fit_start(self) -> None:
        """Undo the parent's weights where they are not transferred (they were loaded after ``__init__``)."""
        if self._fresh:
            self.load_state_dict({**self.state_dict(), **self._fresh})

    def training_step(self, batch: tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor], batch_idx: int):  # noqa: ANN201
        (ids, mask), labels = batch
        aux = bool(self.hparams.lm_coef)
        scores, lm_logits = self.model.logits(ids, mask, lm=aux)
        task = self._task_loss(scores, labels)
        loss = task + self.hparams.lm_coef * lm_loss(lm_logits, ids, mask) if aux else task
        self.log_dict({"train/loss": loss, "train/task_loss": task}, prog_bar=True)
        return loss

    def _task_loss(self, scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.hparams.task in REGRESSION:
            return F.mse_loss(scores.squeeze(-1), labels)
        return F.cross_entropy(scores, labels)

    def _test_tasks(self, loaders: int) -> list[str]:
        tasks = list(getattr(self.trainer.datamodule, "test_tasks", None) or [self.hparams.task] * loaders)
        if len(tasks) != loaders:
            raise HarnessError(f"{loaders} test loaders for the {len(tasks)} test tasks {tasks}")
        return tasks

    def on_test_start(self) -> None:
        if self.hparams.task is not None:
            self.tested = self._test_tasks(len(self.trainer.num_test_batches))
            self.test_metrics = per_test_loader(self, lambda index: test_metric(self.tested[index]))
            return
        classes = 1 if self.hparams.kind == "multiple_choice" else self.hparams.classes
        self.test_metrics = per_test_loader(self, lambda _: classification_metrics(classes))

    def test_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> None:  # noqa: ANN001
        (ids, mask), labels = batch
        metrics = self.test_metrics[dataloader_idx]
        if self.hparams.task is not None:
            metrics.update(predictions(self.model(ids, mask), self.tested[dataloader_idx]), labels)
            return
        metrics.update(self.model(ids, mask), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        warmup = self.hparams.warmup
        return optimizer(self, self.hparams.lr, self.hparams.l2, lambda t: warmup_linear(t, warmup), self.trainer)
