"""Lightning systems of ELMo's budget tier (arXiv 1802.05365v2, README.md "Budget tier"), a chain of two stages:

- :class:`BiLMSystem` (stage a): the small biLM (``model.budget_bilm``) trained as the released one was (bilm-tf):
  the average of the forward and backward LMs' cross-entropies, one softmax shared by both, Adagrad with learning
  rate 0.2 and initial accumulator 1.0, gradients clipped to global norm 10 (the config's ``trainer``). The softmax
  is held beside the biLM (``softmax``), so the checkpoint's ``bilm.`` tensors are exactly what a task model's ELMo
  loads. Test: the forward and backward perplexities over the softmax's words and their average (Sec. 3.4 reports
  "averaged forward and backward perplexities"), logged as ``perplexity_fwd``, ``perplexity_bwd``, ``perplexity``;
  they count ``</S>`` and ``<S>`` as predicted tokens and ``<unk>`` as one word, so they are this tier's own measure
  (the config's ``protocol``), not ``debian-lm``'s word-level perplexity.
- :class:`BudgetClassifierSystem` (stage b): the task model of ``classifier.py`` with or without ELMo (the biLM frozen,
  loaded from stage a; its layers of each training text computed once, ``model.Elmo.cache``), cross-entropy plus
  ELMo's ``lambda ||w||^2``, Adam. Test: ``accuracy`` and ``error`` in percent, the predictions kept for
  ``harness rescore``.
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics import Metric

from harness.evaluators import per_test_loader
from reproductions.elmo.classifier import budget_classifier
from reproductions.elmo.model import budget_bilm, char_mask
from tasks.metrics import accuracy_error_metrics


class BiLMPerplexity(Metric):
    """Summed forward and backward negative log-likelihoods and the number of predicted tokens."""

    def __init__(self) -> None:
        super().__init__()
        for name in ("nll_fwd", "nll_bwd", "tokens"):
            self.add_state(name, default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

    def update(self, nll_fwd: torch.Tensor, nll_bwd: torch.Tensor, tokens: int) -> None:
        """Mean NLLs over ``tokens`` predictions of each direction."""
        self.nll_fwd += nll_fwd.double() * tokens
        self.nll_bwd += nll_bwd.double() * tokens
        self.tokens += tokens

    def compute(self) -> dict[str, float]:
        fwd = math.exp(float(self.nll_fwd / self.tokens))
        bwd = math.exp(float(self.nll_bwd / self.tokens))
        return {"perplexity_fwd": fwd, "perplexity_bwd": bwd, "perplexity": (fwd + bwd) / 2}


class BiLMSystem(pl.LightningModule):
    def __init__(self, model: str = "elmo-budget-bilm", vocab_size: int = 10000, lr: float = 0.2) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.bilm = budget_bilm()
        self.softmax = nn.Linear(self.bilm.token.projection.out_features, vocab_size)
        self.test_metric = BiLMPerplexity()

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        return self.bilm(chars)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        chars, ids = batch
        nll_f, nll_b = self.bilm.lm_loss(chars, ids, self.softmax)
        loss = (nll_f + nll_b) / 2
        self.log("train/loss", loss, batch_size=len(ids))
        return loss

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        chars, ids = batch
        mask = char_mask(chars)
        tokens = int((mask[:, 1:] & mask[:, :-1]).sum())
        self.test_metric.update(*self.bilm.lm_loss(chars, ids, self.softmax), tokens)

    def on_test_epoch_end(self) -> None:
        for key, value in self.test_metric.compute().items():
            self.log(f"test/{key}", value)
        self.test_metric.reset()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adagrad(self.parameters(), lr=self.hparams.lr, initial_accumulator_value=1.0)


class BudgetClassifierSystem(pl.LightningModule):
    def __init__(
        self, model: str = "elmo-budget-task-elmo", num_classes: int = 45, lr: float = 1e-2, cache_elmo: bool = True
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = budget_classifier(model, num_classes)
        if cache_elmo and self.model.input.elmo is not None:
            self.model.input.elmo.cache = {}  # the frozen biLM's layers of each training gloss, computed once
        self.test_metrics = nn.ModuleList()

    def forward(self, chars: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        return self.model(chars, words)

    def training_step(self, batch: tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor], batch_idx: int):  # noqa: ANN201
        (chars, words), labels = batch
        loss = F.cross_entropy(self(chars, words), labels) + self.model.penalty()
        self.log("train/loss", loss, batch_size=len(labels))
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: accuracy_error_metrics(self.hparams.num_classes))

    def test_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> None:  # noqa: ANN001
        (chars, words), labels = batch
        self.test_metrics[dataloader_idx].update(self(chars, words), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)
