"""The one way every task's data module builds its DataLoaders, and picks the sample its ``verify()`` decodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError

T = TypeVar("T")


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


def spread(items: Sequence[T], limit: int) -> list[T]:
    """``limit`` items spread evenly over ``items``, the middle of each of ``limit`` equal stretches (all of them
    when ``limit < 0`` or there are no more than ``limit``): what a data module's ``verify()`` decodes."""
    if limit < 0 or limit >= len(items):
        return list(items)
    step = len(items) / limit if limit else 0.0
    return [items[int((i + 0.5) * step)] for i in range(limit)]
