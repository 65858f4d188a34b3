"""Toy LightningModule and data module over scikit-learn's digits (written to the data root as an .npz)."""

from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from harness.errors import HarnessError
from harness.registry import load_object

MODELS = {"toy-mlp": 16, "toy-mlp-wide": 64}


def write_digits(root: Path) -> None:
    from sklearn.datasets import load_digits

    if (root / "digits.npz").exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    digits = load_digits()
    np.savez(root / "digits.npz", x=digits.data.astype("float32") / 16.0, y=digits.target)


class ToySystem(pl.LightningModule):
    def __init__(self, model: str = "toy-mlp", lr: float = 0.1, hidden: int | None = None):
        super().__init__()
        self.save_hyperparameters()
        self.net = load_object("toy_paper.model:ToyMLP")(hidden=hidden or MODELS[model])

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train/loss", loss)
        return loss

    def test_step(self, batch, batch_idx):
        x, y = batch
        accuracy = (self(x).argmax(1) == y).float().mean() * 100
        self.log("test/accuracy", accuracy)
        self.log("test/error", 100 - accuracy)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class DigitsData(pl.LightningDataModule):
    def __init__(self, data_root: str, batch_size: int = 64):
        super().__init__()
        self.root = Path(data_root)
        self.batch_size = batch_size
        self.data_hash = None

    def verify(self):
        if not (self.root / "digits.npz").is_file():
            raise HarnessError(f"{self.root / 'digits.npz'}: missing")

    def setup(self, stage=None):
        data = np.load(self.root / "digits.npz")
        x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"]).long()
        self.train, self.test = TensorDataset(x[:1400], y[:1400]), TensorDataset(x[1400:], y[1400:])
        self.data_hash = "toy-digits-v1"

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def test_dataloader(self):
        return DataLoader(self.test, batch_size=256)
