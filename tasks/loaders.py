"""The one way every task's data module builds its DataLoaders."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError


def make_loader(
    dataset: Dataset | None,
    *,
    batch_size: int,
    num_workers: int,
    shuffle: bool,
    owner: str,
    collate_fn: Callable[[list[Any]], Any] | None = None,
) -> DataLoader:
    """A DataLoader with pinned memory on CUDA and workers kept alive between epochs; ``dataset`` None means the
    data module ``owner`` was asked for a loader before ``setup()``."""
    if dataset is None:
        raise HarnessError(f"{owner}: call setup() before asking for a dataloader")
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        collate_fn=collate_fn,
        pin_memory=torch.cuda.is_available(),
        persistent_workers=num_workers > 0,
    )
