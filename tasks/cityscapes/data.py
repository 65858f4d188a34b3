"""Cityscapes fine annotations as people keep them on disk, as a Lightning data module for semantic segmentation.

Dataset: Cordts et al., "The Cityscapes Dataset for Semantic Urban Scene Understanding" (CVPR 2016,
arXiv:1604.01685). Layout under ``data_root`` (the official ``leftImg8bit_trainvaltest.zip`` and
``gtFine_trainvaltest.zip`` unpacked side by side):

- ``leftImg8bit/<split>/<city>/<city>_<seq>_<frame>_leftImg8bit.png``: the camera images (2048x1024 RGB);
- ``gtFine/<split>/<city>/<city>_<seq>_<frame>_gtFine_labelIds.png``: label ids 0..33, one per image.

Samples are ``(image, target)``: ``image`` a float32 ``(3, H, W)`` tensor, scaled to [0, 1] and normalised with
the ImageNet channel mean and standard deviation (``normalize=False``: left in [0, 1]); ``target`` int64
``(H, W)`` train ids 0..18, with 255 for every label the benchmark ignores (``ignoreInEval``): the ``trainId``
column of cityscapesscripts' label table, the ids its ``createTrainIdLabelImgs.py`` writes. Training samples
may be randomly cropped (``crop_size``; images smaller than the crop are padded with 0 after normalisation and
target 255) and flipped left to right (``flip_prob``); validation samples are whole images.

The test dataloader serves the validation split: the test split's labels are not public (its predictions go to the
evaluation server). For the official-format scorer, :attr:`CityscapesDataModule.references` is ``gtFine/val`` and
:meth:`CityscapesDataModule.write_prediction` writes one prediction PNG in label ids.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.cityscapes.score import GT_SUFFIX, IGNORE, NUM_CLASSES, label_table, read_label_ids, train_ids_to_label_ids
from tasks.loaders import make_loader

IMAGE_SUFFIX = "_leftImg8bit.png"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
VERIFY_IMAGES = 20


@dataclass(frozen=True)
class Frame:
    """One annotated frame: its ``<city>_<seq>_<frame>`` name, camera image and label-id file."""

    prefix: str
    image: Path
    labels: Path


def index_split(root: Path, split: str) -> list[Frame]:
    """Every ``leftImg8bit/<split>/<city>/*_leftImg8bit.png`` with its ``gtFine`` labels, sorted by path."""
    image_root, label_root = Path(root) / "leftImg8bit" / split, Path(root) / "gtFine" / split
    for folder in (image_root, label_root):
        if not folder.is_dir():
            raise HarnessError(f"{folder}: missing; expected the Cityscapes {split} split under {root}")
    frames = []
    for image in sorted(image_root.glob(f"*/*{IMAGE_SUFFIX}")):
        prefix = image.name.removesuffix(IMAGE_SUFFIX)
        labels = label_root / image.parent.name / f"{prefix}{GT_SUFFIX}"
        if not labels.is_file():
            raise HarnessError(f"{labels}: missing; the label-id file of {image}")
        frames.append(Frame(prefix, image, labels))
    if not frames:
        raise HarnessError(f"{image_root}: no <city>/*{IMAGE_SUFFIX} images")
    return frames


def load_rgb(path: Path) -> Image.Image:
    """Open, decode and convert one image to RGB; an unreadable file raises a :class:`HarnessError`."""
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ... on corrupt files
        raise HarnessError(f"{path}: unreadable image: {exc}") from None


def load_train_ids(path: Path) -> np.ndarray:
    """A label-id PNG as ``(H, W)`` uint8 train ids (255 for ignored labels); bad values name the file."""
    return label_table().train_id_of[read_label_ids(path, "ground-truth")]


def load_frame(frame: Frame) -> tuple[Image.Image, np.ndarray]:
    image, labels = load_rgb(frame.image), load_train_ids(frame.labels)
    if image.size != (labels.shape[1], labels.shape[0]):
        raise HarnessError(
            f"{frame.labels}: labels are {labels.shape[1]}x{labels.shape[0]}, the image {frame.image} is "
            f"{image.width}x{image.height}"
        )
    return image, labels


def to_tensor(img: Image.Image, normalize: bool = True) -> torch.Tensor:
    """RGB PIL image -> float32 ``(3, H, W)``, in [0, 1] or normalised with the ImageNet mean and std."""
    array = np.asarray(img, dtype=np.float32) / 255.0  # (H, W, 3)
    if normalize:
        array = (array - np.asarray(IMAGENET_MEAN, dtype=np.float32)) / np.asarray(IMAGENET_STD, dtype=np.float32)
    return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def random_crop(image: torch.Tensor, target: torch.Tensor, size: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """A random ``size = (h, w)`` window of ``image (3, H, W)`` and ``target (H, W)``, padding (0 / 255) if small."""
    height, width = target.shape
    pad_h, pad_w = max(size[0] - height, 0), max(size[1] - width, 0)
    if pad_h or pad_w:
        image = torch.nn.functional.pad(image, (0, pad_w, 0, pad_h), value=0.0)
        target = torch.nn.functional.pad(target, (0, pad_w, 0, pad_h), value=IGNORE)
        height, width = target.shape
    top, left = random.randint(0, height - size[0]), random.randint(0, width - size[1])
    return image[:, top : top + size[0], left : left + size[1]], target[top : top + size[0], left : left + size[1]]


class CityscapesDataset(Dataset):
    """``(image, train-id target)`` pairs of one split; ``crop_size`` / ``flip_prob`` for training."""

    def __init__(
        self,
        frames: list[Frame],
        normalize: bool = True,
        crop_size: tuple[int, int] | None = None,
        flip_prob: float = 0.0,
    ) -> None:
        self.images = np.array([str(f.image) for f in frames], dtype=str)
        self.labels = np.array([str(f.labels) for f in frames], dtype=str)
        self.prefixes = [f.prefix for f in frames]
        self.normalize = normalize
        self.crop_size = crop_size
        self.flip_prob = flip_prob

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        frame = Frame(self.prefixes[index], Path(str(self.images[index])), Path(str(self.labels[index])))
        img, labels = load_frame(frame)
        image, target = to_tensor(img, self.normalize), torch.from_numpy(labels.astype(np.int64))
        if self.crop_size is not None:
            image, target = random_crop(image, target, self.crop_size)
        if self.flip_prob > 0 and random.random() < self.flip_prob:
            image, target = image.flip(-1), target.flip(-1)
        return image.contiguous(), target.contiguous()


class CityscapesDataModule(pl.LightningDataModule):
    """Cityscapes ``gtFine`` train / val from ``data_root``; batches are ``(float (N, 3, H, W), long (N, H, W))``.

    Args:
        data_root: folder holding ``leftImg8bit/`` and ``gtFine/``.
        batch_size: images per batch, per device.
        num_workers: data-loader worker processes.
        crop_size: training crop, ``h`` or ``(h, w)`` in pixels (None: whole images).
        flip_prob: probability of a left-right flip of a training sample.
        normalize: normalise images with the ImageNet mean and std (False: [0, 1]).
        verify_images: frames ``verify()`` decodes per split, spread evenly (-1: all, 0: none).
    """

    num_classes = NUM_CLASSES
    ignore_index = IGNORE

    def __init__(
        self,
        data_root: str | Path,
        batch_size: int = 2,
        num_workers: int = 0,
        crop_size: int | tuple[int, int] | None = None,
        flip_prob: float = 0.5,
        normalize: bool = True,
        verify_images: int = VERIFY_IMAGES,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.crop_size = (crop_size, crop_size) if isinstance(crop_size, int) else crop_size
        self.flip_prob = flip_prob
        self.normalize = normalize
        self.verify_images = verify_images
        self.frames: dict[str, list[Frame]] = {}
        self.train_dataset: CityscapesDataset | None = None
        self.val_dataset: CityscapesDataset | None = None

    def verify(self) -> None:
        """List both splits, pair every image with its labels and decode a sample; errors name the path."""
        if not self.data_root.is_dir():
            raise HarnessError(f"{self.data_root}: data root missing (expected leftImg8bit/ and gtFine/ in it)")
        for split in ("train", "val"):
            if split not in self.frames:
                self.frames[split] = index_split(self.data_root, split)
            frames = self.frames[split]
            count = len(frames) if self.verify_images < 0 else min(self.verify_images, len(frames))
            for i in range(count):
                load_frame(frames[int((i + 0.5) * len(frames) / count)])

    def setup(self, stage: str | None = None) -> None:
        if self.val_dataset is not None:
            return
        self.verify()
        self.train_dataset = CityscapesDataset(self.frames["train"], self.normalize, self.crop_size, self.flip_prob)
        self.val_dataset = CityscapesDataset(self.frames["val"], self.normalize)

    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        return make_loader(
            dataset, batch_size=self.batch_size, num_workers=self.num_workers, shuffle=shuffle,
            owner="CityscapesDataModule",
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """The validation split: the test split's labels are not public."""
        return self._loader(self.val_dataset, shuffle=False)

    @property
    def references(self) -> Path:
        """``gtFine/val``: the scorer's references for predictions on the val/test loaders."""
        return self.data_root / "gtFine" / "val"

    def write_prediction(self, folder: Path, index: int, train_ids: torch.Tensor | np.ndarray) -> Path:
        """Write validation sample ``index``'s ``(H, W)`` train-id prediction as the scorer reads it:
        ``<folder>/<city>_<seq>_<frame>_leftImg8bit.png`` in label ids (uint8, mode ``L``)."""
        if self.val_dataset is None:
            raise HarnessError("CityscapesDataModule: call setup() before writing predictions")
        values = train_ids.cpu().numpy() if isinstance(train_ids, torch.Tensor) else np.asarray(train_ids)
        path = Path(folder) / f"{self.val_dataset.prefixes[index]}{IMAGE_SUFFIX}"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(train_ids_to_label_ids(values)).save(path)
        return path

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: ``gtFine/val``, ids = the prediction PNGs' file names
        (``<city>_<seq>_<frame>_leftImg8bit.png``) in loader order."""
        if self.val_dataset is None:
            raise HarnessError("CityscapesDataModule: call setup() before asking how predictions are scored")
        return Scoring("cityscapes-semantic", self.references, [p + IMAGE_SUFFIX for p in self.val_dataset.prefixes])
