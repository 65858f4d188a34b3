"""Budget-tier data for CondConv: Fashion-MNIST (Xiao, Rasul & Vollgraf, arXiv 1708.07747) from its distributed IDX
files, held in memory by the SGD-width study's :class:`~reproductions.sgd_width.data.ArrayDataModule`.

Two things differ from that module, for the harness runner: the test loader serves the official 10,000-image test set
(``Trainer.test`` reads ``test_dataloader``), and the order of training batches follows the run's seed (the runner
seeds torch before the loaders are built), so seeds differ in data order as well as in initialisation.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

from reproductions.sgd_width.data import ArrayDataModule


class FashionMNISTDataModule(ArrayDataModule):
    """Fashion-MNIST 28x28 grey images, standardised by the training subset's mean and std; test = the test set."""

    def __init__(
        self,
        data_root: str | None = None,
        batch_size: int = 128,
        train_size: int | None = 10_000,
        eval_batch_size: int = 1000,
    ) -> None:
        super().__init__("fashion-mnist", data_root, batch_size, train_size, None, eval_batch_size)

    def train_dataloader(self) -> DataLoader:
        """Shuffled by the run's seed (``pl.seed_everything``), last incomplete batch dropped; a plain ``batch_size``
        loader, since the system scales its learning rate by the loader's batch size."""
        generator = torch.Generator().manual_seed(torch.initial_seed())
        data = TensorDataset(self.x_train, self.y_train)
        return DataLoader(data, self.hparams.batch_size, shuffle=True, generator=generator, drop_last=True)

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()
