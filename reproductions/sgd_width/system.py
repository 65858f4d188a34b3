"""Lightning system for the SGD width study (Park, Sohl-Dickstein, Le & Smith, arXiv 1905.03776v1).

The protocol the paper's introduction states: "constant SGD" (plain SGD, no learning-rate decay), and a network's
performance is its test accuracy at late times, averaged over runs; the optimal hyper-parameters are those that
maximise it on the test set. Here: SGD without momentum or weight decay at a constant learning rate ``lr`` for the
trainer's epoch budget; the test set is evaluated after each of the last ``late_epochs`` epochs and the run's
``accuracy`` is their mean (percent).

Divergence (the sweep records such runs as ``diverged``): a training loss that is not finite or exceeds
``blowup_factor`` times the first step's loss raises :class:`Diverged` at once; a run whose mean training loss over
its last epoch is still above the first step's loss (SGD made the loss worse, e.g. exploded and saturated) is
diverged too (:meth:`WidthSGDSystem.diverged`). Large ReLU networks at too large a learning rate mostly do the
latter: their logits explode and the loss stays large but finite.

Batches are ``(images, labels)``: float ``(N, C, H, W)`` and long ``(N,)``.
"""

from __future__ import annotations

import math

import pytorch_lightning as pl
import torch
import torch.nn.functional as F

from harness.errors import HarnessError
from reproductions.sgd_width.model import SIGMA_B, SIGMA_W, build
from reproductions.sgd_width.variants import parse_model_id


class Diverged(RuntimeError):
    """The training loss became NaN or infinite."""

    def __init__(self, step: int, loss: float) -> None:
        super().__init__(f"training loss {loss} at step {step}")
        self.step, self.loss = step, loss


class WidthSGDSystem(pl.LightningModule):
    """One member of a width family trained with constant-learning-rate SGD and scored by late-time test accuracy."""

    def __init__(
        self,
        model: str = "mlp-w1-standard",
        lr: float = 0.1,
        sigma_w: float = SIGMA_W,
        sigma_b: float = SIGMA_B,
        in_channels: int = 1,
        image_size: int = 28,
        num_classes: int = 10,
        base_width: int | None = None,
        late_epochs: int = 3,
        blowup_factor: float = 100.0,
    ) -> None:
        """``model`` is a harness model id (``mlp-w4-ntk``); ``base_width`` overrides the family's width at factor 1."""
        super().__init__()
        self.save_hyperparameters()
        try:
            family, width, parameterization = parse_model_id(model)
        except ValueError as exc:
            raise HarnessError(str(exc)) from None
        self.model = build(
            family, width, parameterization, in_channels, image_size, num_classes, sigma_w, sigma_b, base_width
        )
        self.fan_in: int = self.model.fan_in
        self.late_accuracy: list[float] = []  # test accuracy (%) after each epoch of the late window
        self.last_train_loss = float("nan")
        self.initial_loss: float | None = None
        self._reset_counts()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, C, H, W) -> (N, num_classes)

    def _reset_counts(self) -> None:
        self._correct, self._seen, self._loss_sum, self._steps = 0, 0, 0.0, 0

    def _late(self) -> bool:
        return self.current_epoch >= self.trainer.max_epochs - self.hparams.late_epochs

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        images, labels = batch
        loss = F.cross_entropy(self(images), labels)
        value = float(loss.detach())
        if self.initial_loss is None:
            self.initial_loss = value
        if not math.isfinite(value) or value > self.hparams.blowup_factor * max(self.initial_loss, 1.0):
            raise Diverged(self.global_step, value)
        self._loss_sum, self._steps = self._loss_sum + value, self._steps + 1
        return loss

    def on_train_epoch_end(self) -> None:
        self.last_train_loss = self._loss_sum / max(self._steps, 1)
        self._loss_sum, self._steps = 0.0, 0

    def diverged(self) -> bool:
        """After fit: the last epoch's mean training loss is above the first step's loss."""
        return self.initial_loss is None or not self.last_train_loss <= self.initial_loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        if not self._late():
            return
        images, labels = batch
        self._correct += int((self(images).argmax(dim=1) == labels).sum())
        self._seen += len(labels)

    def on_validation_epoch_end(self) -> None:
        if self._late() and self._seen:
            self.late_accuracy.append(100.0 * self._correct / self._seen)
        self._correct, self._seen = 0, 0

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        images, labels = batch
        accuracy = 100.0 * (self(images).argmax(dim=1) == labels).float().mean()
        self.log("test/accuracy", accuracy, batch_size=len(labels))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.0, weight_decay=0.0)
