"""Toy model: 64 → hidden → 10 MLP with ReLU. Params: 64·h + h + 10·h + 10; multiply-adds: 74·h."""

from torch import nn


class ToyMLP(nn.Sequential):
    def __init__(self, hidden: int = 16, num_classes: int = 10):
        super().__init__(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
