"""CondConv's budget data: Fashion-MNIST's test set as the test loader, training order following the run's seed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reproductions.condconv.data import FashionMNISTDataModule
from reproductions.sgd_width.data import write_digits_idx


@pytest.fixture(scope="module")
def idx_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fashion-layout")
    write_digits_idx(root)  # digits written under Fashion-MNIST's IDX file names: same reader, seconds not minutes
    return root


def test_test_loader_serves_the_whole_test_split(idx_root):
    data = FashionMNISTDataModule(str(idx_root), batch_size=32, train_size=200, eval_batch_size=100)
    data.setup()
    images, labels = zip(*data.test_dataloader(), strict=True)
    assert sum(len(y) for y in labels) == 297  # the digits' test split, every image once
    assert images[0].shape[1:] == (1, 28, 28)


def test_training_order_follows_the_seed(idx_root):
    data = FashionMNISTDataModule(str(idx_root), batch_size=32, train_size=200)
    data.setup()

    def first_labels(seed: int) -> torch.Tensor:
        torch.manual_seed(seed)
        return next(iter(data.train_dataloader()))[1]

    assert torch.equal(first_labels(0), first_labels(0))
    assert not torch.equal(first_labels(0), first_labels(1))
    assert all(len(y) == 32 for _, y in data.train_dataloader())  # last incomplete batch dropped
