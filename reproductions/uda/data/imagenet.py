"""UDA on ImageNet (arXiv 1904.12848v6, Section 4.4, Appendix E.3): ILSVRC-2012 images decoded from disk as each
step needs them, each step's batch drawn from its step number alone (:class:`StepSampler`), so workers and devices
share no state.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from harness.errors import HarnessError
from harness.predictions import Scoring
from reproductions.uda.data.batches import UDADataModule, read_ids

UNLABELLED_SOURCES = ("rest", "train", "none")


def list_images(root: Path) -> list[str]:
    """Every image file under ``root`` (any depth; hidden files and folders skipped), as sorted ``/``-separated
    paths relative to ``root``: a folder of extra unlabelled images needs no layout and no labels."""
    from tasks.imagenet.data import image_extensions

    root, extensions, found = Path(root), image_extensions(), []
    if not root.is_dir():
        raise HarnessError(f"{root}: unlabelled image folder missing")
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        relative = Path(folder).relative_to(root)
        found += [(relative / f).as_posix() for f in files
                  if not f.startswith(".") and os.path.splitext(f)[1].lower() in extensions]  # fmt: skip
    if not found:
        raise HarnessError(f"{root}: no image files")
    return sorted(found)


def stream_positions(seed: int, stream: int, n: int, start: int, count: int) -> np.ndarray:
    """Positions ``start .. start + count - 1`` of an endless walk over ``0..n-1`` in fresh permutations: block
    ``j`` (positions ``j n .. (j + 1) n - 1``) is the permutation drawn from ``(seed, stream, j)``. Any step's
    positions follow from its number alone, so data-loader workers and devices need no shared state."""
    out, position = [], start
    while position < start + count:
        block, offset = divmod(position, n)
        take = min(n - offset, start + count - position)
        out.append(_permutation(seed, stream, n, block)[offset : offset + take])
        position += take
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@functools.lru_cache(maxsize=4)
def _permutation(seed: int, stream: int, n: int, block: int) -> np.ndarray:
    return np.random.default_rng([seed, stream, block]).permutation(n)


class StepSampler(DistributedSampler):
    """The global step numbers this device trains on in one epoch: ``(epoch * steps + i) * replicas + rank`` for
    ``i < steps``. A ``DistributedSampler``, so Lightning neither wraps it nor forgets its ``set_epoch``: every
    device and every epoch gets steps (hence images and augmentations) of its own."""

    def __init__(self, steps: int, num_replicas: int | None = None, rank: int | None = None) -> None:
        if num_replicas is None or rank is None:
            distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
            num_replicas = torch.distributed.get_world_size() if distributed else 1
            rank = torch.distributed.get_rank() if distributed else 0
        self.steps, self.num_replicas, self.rank, self.epoch = steps, num_replicas, rank, 0

    def __iter__(self) -> Iterator[int]:
        first = self.epoch * self.steps
        return iter((first + i) * self.num_replicas + self.rank for i in range(self.steps))

    def __len__(self) -> int:
        return self.steps


class ImageNetStepBatches(Dataset):
    """Item ``g``: the whole batch of global step ``g``, read from disk: ``batch_size`` labelled images and
    ``extra`` unlabelled ones (positions from :func:`stream_positions`), augmentations drawn from ``(seed, g)``.
    Holds file lists only (byte strings), never images; its items are step numbers, drawn by :class:`StepSampler`."""

    def __init__(self, owner: ImageNetUDADataModule, seed: int) -> None:
        hp = owner.hparams
        self.seed, self.size = seed, hp.batch_size
        self.extra = round(hp.batch_size * hp.unlabelled_ratio)
        self.labelled = np.array([str(owner.train_root / p).encode() for p, _ in owner.labelled_items])
        self.labels = np.array([owner.class_to_idx[w] for _, w in owner.labelled_items], dtype=np.int64)
        self.unlabelled = np.array([p.encode() for p in owner.unlabelled_paths])
        self.weak, self.strong, self.labelled_transform = owner.transforms()

    def __getitem__(self, step: int) -> dict[str, torch.Tensor]:
        from tasks.imagenet.data import load_rgb

        rng = random.Random(f"{self.seed}:{step}")
        for transform in (self.weak, self.strong, self.labelled_transform):
            transform.rng = rng
            if transform.autoaugment is not None:
                transform.autoaugment.rng = rng
        at = stream_positions(self.seed, 0, len(self.labelled), step * self.size, self.size)
        batch = {
            "labelled": torch.stack([self.labelled_transform(load_rgb(Path(self.labelled[p].decode()))) for p in at]),
            "labels": torch.from_numpy(self.labels[at]),
        }
        if self.extra:
            drawn = stream_positions(self.seed, 1, len(self.unlabelled), step * self.extra, self.extra)
            images = [load_rgb(Path(self.unlabelled[p].decode())) for p in drawn]
            batch["original"] = torch.stack([self.weak(img) for img in images])
            batch["augmented"] = torch.stack([self.strong(img) for img in images])
        return batch


class ImageNetUDADataModule(UDADataModule):
    """UDA on ImageNet (Section 4.4, Appendix E.3) from the ILSVRC-2012 folders (:mod:`tasks.imagenet.data`),
    images decoded from disk as each step needs them.

    Labelled set: ``subset_percent`` of every class (:func:`tasks.imagenet.subsets.sample_subset`, ranked by
    ``subset_seed``; 100 = every training image). Unlabelled set (``unlabelled``): ``rest``, the training images
    outside the labelled subset (the paper's 10% setting: "all other data as unlabeled data"); ``train``, every
    training image; ``none``; plus, with ``unlabelled_root``, every image under that folder (any layout, labels never
    read: the full setting's 1.3M images, which the paper filtered out of JFT by domain relevance; bring your own),
    or only the relative paths listed in ``unlabelled_ids`` (one per line, a filter's output).

    Each step (:class:`ImageNetStepBatches`) gives ``batch_size`` labelled images with the simple augmentation
    (Inception crop to ``image_size``, horizontal flip: :class:`tasks.imagenet.transforms.TrainTransform`), and
    ``unlabelled_ratio * batch_size`` unlabelled images twice: ``original`` with the simple augmentation (the
    paper's target side) and ``augmented`` with another crop and flip, then RandAugment (``augment: randaugment``;
    ``none``: no strong augmentation). ``augment_labelled`` applies it to the labelled images too (Table 5's
    "w. RandAugment" row). ``batch_size`` is per device: the paper's 512 labelled and 15,360 unlabelled images are
    a global batch (its v3-64 TPU pod). Workers (``num_workers``) each assemble whole steps.

    Test (and validation): the ILSVRC-2012 validation images, resized and centre-cropped (``crop_fraction``),
    scored as :class:`tasks.imagenet.data.ImageNetDataModule` scores them (ids = file stems, labels = wnids).
    """

    def __init__(
        self,
        data_root: str = "data/imagenet",
        subset_percent: float = 10.0,
        subset_seed: int = 0,
        unlabelled: str = "rest",
        unlabelled_root: str | None = None,
        unlabelled_ids: str | None = None,
        batch_size: int = 512,
        unlabelled_ratio: float = 30.0,
        steps_per_epoch: int = 1000,
        augment: str = "randaugment",
        augment_labelled: bool = False,
        randaugment_ops: int = 2,
        randaugment_magnitude: float | None = None,
        randaugment_probability: float = 0.5,
        image_size: int = 224,
        crop_fraction: float = 0.875,
        train_min_area: float = 0.08,
        num_workers: int = 0,
        eval_batch_size: int = 256,
        val_layout: str = "auto",
        verify_images: int = 1000,
        seed: int | None = None,
    ) -> None:
        from tasks.imagenet.data import ImageNetDataModule

        super().__init__()
        self.save_hyperparameters()
        if augment not in ("randaugment", "none") or unlabelled not in UNLABELLED_SOURCES:
            raise HarnessError(f"augment must be randaugment or none, unlabelled one of {', '.join(UNLABELLED_SOURCES)}"
                               f"; got {augment!r}, {unlabelled!r}")  # fmt: skip
        if unlabelled_ids is not None and unlabelled_root is None:
            raise HarnessError("unlabelled_ids lists images under unlabelled_root: set unlabelled_root too")
        self.imagenet = ImageNetDataModule(
            data_root, batch_size=eval_batch_size, image_size=image_size, crop_fraction=crop_fraction,
            num_workers=num_workers, subset_percent=subset_percent, subset_seed=subset_seed, val_layout=val_layout,
            verify_images=verify_images,
        )  # fmt: skip
        self.task, self.data_hash = "imagenet-1k", None
        self.train_root = Path(data_root) / "train"

    @property
    def num_classes(self) -> int:
        return self.imagenet.num_classes

    def verify(self) -> None:
        self.imagenet.verify()
        if self.hparams.unlabelled_root is not None:
            list_images(Path(self.hparams.unlabelled_root))

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.imagenet.subsets import format_subset, sample_subset

        hp = self.hparams
        self.imagenet.setup()
        index = self.imagenet.index
        self.class_to_idx = {wnid: i for i, wnid in enumerate(index.classes)}
        self.labelled_items = (
            sample_subset(index.train, hp.subset_percent, hp.subset_seed) if hp.subset_percent < 100 else index.train
        )
        self.unlabelled_paths = self._unlabelled(index.train) if hp.unlabelled_ratio else []
        self.num_labelled, self.num_unlabelled = len(self.labelled_items), len(self.unlabelled_paths)
        listing = format_subset(self.labelled_items) + "".join(f"{p}\n" for p in self.unlabelled_paths).encode()
        self.data_hash = hashlib.sha256(listing).hexdigest()

    def _unlabelled(self, train: Sequence[tuple[str, str]]) -> list[str]:
        """Paths of the unlabelled images: the training ones as ``data_root/train/...``, the extra ones under
        ``unlabelled_root``."""
        hp = self.hparams
        kept = {path for path, _ in self.labelled_items} if hp.unlabelled == "rest" else set()
        paths = [str(self.train_root / p) for p, _ in train if p not in kept] if hp.unlabelled != "none" else []
        if hp.unlabelled_root is not None:
            extra = list_images(Path(hp.unlabelled_root))
            if hp.unlabelled_ids is not None:
                wanted = set(read_ids(Path(hp.unlabelled_ids)))
                unknown = wanted - set(extra)
                if unknown:
                    raise HarnessError(f"{hp.unlabelled_ids}: not images under {hp.unlabelled_root}, e.g. "
                                       f"{sorted(unknown)[:3]}")  # fmt: skip
                extra = [p for p in extra if p in wanted]
            paths += [str(Path(hp.unlabelled_root) / p) for p in extra]
        return paths

    def transforms(self) -> tuple[Any, Any, Any]:
        """The simple augmentation, the strong one (crop, flip, RandAugment) and the labelled images' one."""
        from tasks.imagenet.randaugment import RandAugment
        from tasks.imagenet.transforms import TrainTransform

        hp = self.hparams

        def transform(strong: bool) -> TrainTransform:
            augment = RandAugment(hp.randaugment_ops, hp.randaugment_magnitude, hp.randaugment_probability)
            return TrainTransform(hp.image_size, hp.crop_fraction, min_area=hp.train_min_area,
                                  augment=augment if strong and hp.augment == "randaugment" else None)  # fmt: skip

        return transform(False), transform(True), transform(hp.augment_labelled)

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        if self.data_hash is None:
            raise HarnessError(f"{type(self).__name__}: call setup() before asking for a dataloader")
        if hp.unlabelled_ratio and not self.num_unlabelled:
            raise HarnessError("unlabelled_ratio > 0 but the unlabelled set is empty")
        seed = hp.seed if hp.seed is not None else torch.initial_seed()
        return DataLoader(ImageNetStepBatches(self, seed), batch_size=None, sampler=StepSampler(hp.steps_per_epoch),
                          num_workers=hp.num_workers, pin_memory=torch.cuda.is_available(),
                          persistent_workers=hp.num_workers > 0)  # fmt: skip

    def test_dataloader(self) -> DataLoader:
        return self.imagenet.test_dataloader()

    def val_dataloader(self) -> DataLoader:
        return self.imagenet.val_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        return self.imagenet.scoring(dataloader_idx, folder)
