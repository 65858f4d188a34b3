"""UDA's few-label image classification data (arXiv 1904.12848v6, Section 2.3, Appendix A.2): Fashion-MNIST,
MNIST, digits, CIFAR-10 or SVHN held in memory, RandAugment (or Cutout, or the simple augmentation alone) on the
unlabelled copies.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from harness.errors import HarnessError
from reproductions.uda.data.batches import UDADataModule, labelled_positions, unlabelled_positions

IMAGE_AUGMENTS = ("randaugment", "cutout", "crop-flip")


def load_images(dataset: str, root: str | None, split: str) -> tuple[np.ndarray, np.ndarray]:
    """uint8 ``(N, C, H, W)`` and int64 labels: Fashion-MNIST / MNIST / digits (IDX) or CIFAR-10 / SVHN."""
    if dataset in ("svhn", "cifar-100"):
        from tasks.classification.data import load_split

        arrays = load_split(dataset, Path(root or f"data/{dataset}"), split)
        return arrays.images, arrays.labels.astype(np.int64)
    from tasks.fashion_mnist.data import load_split

    return load_split(dataset, split, root)


def weak_augment(images: torch.Tensor, pad: int, hflip: bool, generator: torch.Generator) -> torch.Tensor:
    """The simple augmentation of labelled and original unlabelled images: a random ``pad``-pixel translation
    (reflection padding, then a random crop back to size) and a horizontal flip with probability 1/2."""
    n, _, h, w = images.shape
    if pad:
        padded = torch.nn.functional.pad(images, (pad, pad, pad, pad), mode="reflect")
        dx, dy = torch.randint(0, 2 * pad + 1, (2, n), generator=generator).tolist()
        images = torch.stack([padded[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(n)])
    if hflip:
        flip = torch.rand(n, generator=generator) < 0.5
        images = torch.where(flip[:, None, None, None], images.flip(-1), images)
    return images


class ImageUDADataModule(UDADataModule):
    """Few-label image classification with RandAugment on the unlabelled copies (Section 2.3, Appendix A.2).

    Args:
        dataset: ``fashion-mnist``, ``mnist``, ``digits``, ``cifar-10``, ``svhn``.
        data_root: the dataset's folder (``None``: its default, e.g. Debian's Fashion-MNIST).
        per_class: labelled training examples per class (``None``: all).
        label_seed: seed of the labelled subset (the same for a UDA run and its baseline).
        unlabelled_size: unlabelled training examples (``None``: the whole training split).
        unlabelled_ids: a file of kept training positions (a domain-relevance filter's output) instead.
        batch_size: labelled examples per step; ``unlabelled_ratio``: unlabelled per labelled example (0: none).
        steps_per_epoch: training steps per epoch.
        augment: the unlabelled copies' augmentation (Table 1): ``randaugment``, ``cutout`` (one 16/32-side gray
            square, always) or ``crop-flip`` (the simple augmentation alone).
        augment_labelled: apply it to the labelled images too (the supervised rows "with RandAugment").
        randaugment_ops, randaugment_magnitude, randaugment_probability: the arguments of
            :class:`tasks.imagenet.randaugment.RandAugment` (UDA's: 2 operations, magnitude drawn from [1, 10),
            probability 0.5).
        pad, hflip: the simple augmentation (``pad``-pixel translation, horizontal flip).
        pool: average ``pool x pool`` pixel blocks after augmenting (2: 28x28 -> 14x14, the budget tier's cheaper
            input), as :func:`tasks.fashion_mnist.data.prepare_tensors` does.
        test_size: test examples kept (``None``: all); seed: order of the batches (``None``: the run's seed).
    """

    def __init__(
        self,
        dataset: str = "fashion-mnist",
        data_root: str | None = None,
        per_class: int | None = 4,
        label_seed: int = 0,
        unlabelled_size: int | None = None,
        unlabelled_ids: str | None = None,
        batch_size: int = 64,
        unlabelled_ratio: float = 7.0,
        steps_per_epoch: int = 100,
        augment: str = "randaugment",
        augment_labelled: bool = False,
        randaugment_ops: int = 2,
        randaugment_magnitude: float | None = None,
        randaugment_probability: float = 0.5,
        pad: int = 2,
        hflip: bool = True,
        pool: int = 1,
        test_size: int | None = None,
        eval_batch_size: int = 500,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if augment not in IMAGE_AUGMENTS:
            raise HarnessError(f"augment must be one of {', '.join(IMAGE_AUGMENTS)}; got {augment!r}")
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in ("train", "test"):
            load_images(self.hparams.dataset, self.hparams.data_root, split)

    @property
    def num_classes(self) -> int:
        return int(self.train_labels.max()) + 1

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.fashion_mnist.data import arrays_hash

        hp = self.hparams
        images, labels = load_images(hp.dataset, hp.data_root, "train")
        ids = [str(i) for i in range(len(labels))]
        self.labelled_at = labelled_positions(labels.tolist(), ids, hp.per_class, hp.label_seed)
        self.unlabelled_at = (
            unlabelled_positions(ids, hp.unlabelled_size, hp.unlabelled_ids) if hp.unlabelled_ratio else []
        )
        self.train_images, self.train_labels = images, labels
        scaled = images[self.unlabelled_at or self.labelled_at].astype(np.float32) / 255
        self.mean = torch.tensor(scaled.mean((0, 2, 3)))[:, None, None]
        self.std = torch.tensor(scaled.std((0, 2, 3)) + 1e-6)[:, None, None]
        test_images, test_labels = load_images(hp.dataset, hp.data_root, "test")
        keep = np.arange(len(test_labels))[: hp.test_size]
        self.test_inputs, self.test_labels = self.normalise(test_images[keep]), torch.from_numpy(test_labels[keep])
        self.test_ids = [str(i) for i in keep]
        self.task = (
            hp.dataset if hp.dataset in ("cifar-10", "svhn", "fashion-mnist") else "fashion-mnist"
        )  # mnist, digits: its format
        self.strong = self._strong_augmentation()
        self.num_labelled, self.num_unlabelled = len(self.labelled_at), len(self.unlabelled_at)
        labelled = np.asarray(self.labelled_at)
        self.data_hash = arrays_hash(
            images[labelled], labels[labelled], np.asarray(self.unlabelled_at), test_labels[keep]
        )

    def _strong_augmentation(self) -> Callable[[Image.Image], Image.Image] | None:
        from tasks.imagenet.randaugment import RandAugment

        hp = self.hparams
        if hp.augment == "randaugment":
            return RandAugment(hp.randaugment_ops, hp.randaugment_magnitude, hp.randaugment_probability)
        if hp.augment == "cutout":
            return RandAugment(1, 10, 1.0, ops=("Cutout",))
        return None

    def _strongly(self, images: np.ndarray, rng: random.Random) -> np.ndarray:
        """uint8 ``(N, C, H, W)`` through the strong augmentation (unchanged for ``crop-flip``)."""
        if self.strong is None:
            return images
        self.strong.rng = rng
        return np.stack([pil_to_array(self.strong(array_to_pil(image))) for image in images])

    def normalise(self, images: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 ``(N, C, H, W)`` -> standardised floats, pooled to ``(N, C, H / pool, W / pool)``."""
        scaled = (torch.as_tensor(images).float() / 255 - self.mean) / self.std
        pool = self.hparams.pool
        return torch.nn.functional.avg_pool2d(scaled, pool) if pool > 1 else scaled

    def _weak(self, images: torch.Tensor, rng: random.Random) -> torch.Tensor:
        generator = torch.Generator().manual_seed(rng.getrandbits(62))
        return weak_augment(images.float(), self.hparams.pad, self.hparams.hflip, generator)

    def labelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = [self.labelled_at[p] for p in positions]
        raw = self.train_images[chosen]
        raw = self._strongly(raw, rng) if self.hparams.augment_labelled else raw
        images = self.normalise(self._weak(torch.from_numpy(raw), rng))
        return images, torch.from_numpy(self.train_labels[chosen])

    def unlabelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        images = self.train_images[[self.unlabelled_at[p] for p in positions]]  # uint8 (N, C, H, W)
        strong = self._strongly(images, rng)
        original, augmented = self._weak(torch.from_numpy(images), rng), self._weak(torch.from_numpy(strong), rng)
        return self.normalise(original), self.normalise(augmented)


def array_to_pil(image: np.ndarray) -> Image.Image:
    """uint8 ``(C, H, W)`` (C = 1 or 3) -> a PIL ``L`` or ``RGB`` image."""
    return Image.fromarray(image[0]) if image.shape[0] == 1 else Image.fromarray(image.transpose(1, 2, 0))


def pil_to_array(img: Image.Image) -> np.ndarray:
    array = np.asarray(img)
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)
