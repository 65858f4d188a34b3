"""Fashion-MNIST for the budget tier (AA vs plain convolution at small scale).

The IDX files of the Debian package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``), read and
held in memory by ``reproductions.sgd_width.data``: a fixed, class-balanced subset of ``train_size`` training images
(the same for every run and seed), pixels standardised by the subset's mean and standard deviation, batches drawn
in a fresh random order every epoch (``seed``; by default the run's seed, so each seed also draws its own batch
order). The test loader serves the 10,000 test images.
Batches are ``(float (N, 1, 28, 28), long (N,))``.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from reproductions.sgd_width.data import ArrayDataModule


class FashionMNISTDataModule(ArrayDataModule):
    """:class:`ArrayDataModule` with the test set as the test loader too (one ``evaluate`` entry: test), and a
    training loader that states its batch size (the learning rate is given per 256 images and scaled by it)."""

    def setup(self, stage: str | None = None) -> None:
        if self.hparams.seed is None:  # the seed the runner gave pl.seed_everything
            self.hparams.seed = torch.initial_seed() % 2**32
        super().setup(stage)

    def train_dataloader(self) -> DataLoader:
        generator = torch.Generator().manual_seed(self.hparams.seed)
        data = TensorDataset(self.x_train, self.y_train)
        return DataLoader(data, batch_size=self.hparams.batch_size, shuffle=True, drop_last=True, generator=generator)

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()
