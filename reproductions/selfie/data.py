"""Data for Selfie's two phases: every training image, unlabelled, for pre-training; the few-label subset for
fine-tuning; the test split for evaluation.

:class:`SelfieDataModule` wraps a task's data module (``tasks.imagenet.data:ImageNetDataModule`` or
``tasks.classification.data:ClassificationDataModule``) twice: once as configured (its ``subset_percent`` picks the
labelled subset with :mod:`tasks.imagenet.subsets`, deterministic and nested across percentages) and once with
``subset_percent = 100`` for pre-training, whose labels are never used. During the first ``pretrain_epochs``
epochs the training loader is the full set's, afterwards the subset's; the trainer must reload the training
loader every epoch (``reload_dataloaders_every_n_epochs: 1``). ``data_hash`` is the labelled subset's.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.registry import load_object


class SelfieDataModule(pl.LightningDataModule):
    """``data_class`` (``"module:Class"``) built from ``data_root`` and ``options``, plus its 100% twin."""

    def __init__(
        self, data_class: str, data_root: str, pretrain_epochs: int = 0, options: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        options = dict(options or {})
        cls = load_object(data_class)
        self.labelled = cls(data_root=data_root, **options)
        self.unlabelled = cls(data_root=data_root, **{**options, "subset_percent": 100.0}) if pretrain_epochs else None
        self.pretrain_epochs = pretrain_epochs
        self.data_hash: str | None = None

    @property
    def num_classes(self) -> int:
        return self.labelled.num_classes

    def verify(self) -> None:
        if hasattr(self.labelled, "verify"):
            self.labelled.verify()

    def setup(self, stage: str | None = None) -> None:
        self.labelled.setup(stage)
        if self.unlabelled is not None:
            self.unlabelled.setup(stage)
        self.data_hash = getattr(self.labelled, "data_hash", None)

    def pretraining(self) -> bool:
        trainer = self.trainer
        if trainer is None:
            raise HarnessError("SelfieDataModule: the training loader depends on the epoch; use it inside a Trainer")
        return self.unlabelled is not None and trainer.current_epoch < self.pretrain_epochs

    def train_dataloader(self) -> DataLoader:
        return (self.unlabelled if self.pretraining() else self.labelled).train_dataloader()

    def val_dataloader(self) -> DataLoader:
        return self.labelled.val_dataloader()

    def test_dataloader(self) -> DataLoader:
        return self.labelled.test_dataloader()

    def scoring(self, dataloader_idx: int, folder: Any) -> Any:
        """The labelled data's (see harness.predictions): the test loader is the labelled data module's."""
        return self.labelled.scoring(dataloader_idx, folder)
