"""COCO 2017 detection data as people keep it on disk, as a Lightning data module.

Dataset: Lin et al., "Microsoft COCO: Common Objects in Context" (arXiv:1405.0312). Layout under ``data_root``
(what the official 2017 zips unpack to, https://cocodataset.org/#download):

- ``annotations/instances_train2017.json``, ``annotations/instances_val2017.json``;
- ``train2017/<file_name>``, ``val2017/<file_name>`` (``000000000139.jpg``, ...), the ``file_name`` of each
  ``images`` entry.

Samples are ``(image, target)``: ``image`` a float32 ``(3, H, W)`` RGB tensor in [0, 1] at the file's own size
(detection models resize and normalise inside, as torchvision's do); ``target`` a dict of tensors:

- ``boxes`` float32 ``(M, 4)``: ``[x1, y1, x2, y2]`` in pixels, from the annotation ``bbox`` ``[x, y, w, h]``;
- ``labels`` int64 ``(M,)``: the COCO ``category_id`` itself (1..90 with gaps, as torchvision's and DETR's COCO
  code use it; ``num_classes`` is 91 on COCO), so predicted labels go into a results file unchanged;
- ``iscrowd`` int64 ``(M,)`` and ``area`` float64 ``(M,)``: as in the file. Crowd regions are kept (a training
  loss should skip them); ``area`` is what pycocotools sorts objects into small / medium / large by;
- ``image_id`` int64 scalar: the COCO image id, for writing results.

Annotations are passed on as they are (no clamping, no dropping of degenerate boxes), so that validation targets
fed to :class:`tasks.coco.metric.CocoDetectionMetric` score exactly as the annotation file does. The training
split gets a horizontal flip with probability ``hflip`` (boxes flipped with it). The test dataloader serves the
validation split: test-dev annotations are not public (its results go to the evaluation server).

Batches are ``(list of images, list of targets)`` (:func:`collate_detection`): image sizes differ.
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.coco.score import check_references, read_json
from tasks.loaders import make_loader

VERIFY_IMAGES = 100


@dataclass(frozen=True)
class CocoSplit:
    """One split as listed by its annotation file: images in id order and the annotations of each."""

    name: str
    image_dir: Path
    annotation_file: Path
    images: list[dict[str, Any]]
    annotations: dict[int, list[dict[str, Any]]]
    categories: dict[int, str]


def read_split(root: Path, split: str, year: str = "2017") -> CocoSplit:
    """Read and check ``annotations/instances_<split><year>.json``; the image folder is checked by verify()."""
    path = Path(root) / "annotations" / f"instances_{split}{year}.json"
    if not path.is_file():
        raise HarnessError(f"{path}: missing; expected the COCO {year} annotation file of the {split} split")
    doc = check_references(read_json(path), path)
    by_image: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for ann in doc["annotations"]:
        by_image[ann["image_id"]].append(ann)
    images = sorted(doc["images"], key=lambda img: img["id"])
    for index, img in enumerate(images):
        if not isinstance(img.get("file_name"), str) or not img["file_name"]:
            raise HarnessError(f"{path}: image id {img['id']} (entry {index} by id) has no file_name")
    categories = {cat["id"]: str(cat.get("name", cat["id"])) for cat in doc["categories"]}
    return CocoSplit(split, Path(root) / f"{split}{year}", path, images, dict(by_image), categories)


def load_rgb(path: Path) -> Image.Image:
    """Open, decode and convert one image to RGB; an unreadable file raises a :class:`HarnessError`."""
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ... on corrupt files
        raise HarnessError(f"{path}: unreadable image: {exc}") from None


def check_images(split: CocoSplit, limit: int = VERIFY_IMAGES) -> int:
    """Every listed file exists; ``limit`` of them, spread evenly (all if ``limit < 0``), decode at their listed
    size. Returns how many were decoded."""
    if not split.image_dir.is_dir():
        raise HarnessError(f"{split.image_dir}: missing; expected the images of {split.annotation_file}")
    present = set(os.listdir(split.image_dir))
    missing = [img["file_name"] for img in split.images if img["file_name"] not in present]
    if missing:
        raise HarnessError(
            f"{split.image_dir / missing[0]}: missing ({len(missing)} of the {len(split.images)} images listed in "
            f"{split.annotation_file} are not in {split.image_dir})"
        )
    count = len(split.images) if limit < 0 else min(limit, len(split.images))
    step = len(split.images) / count if count else 0.0
    for i in range(count):
        img = split.images[int((i + 0.5) * step)]
        decoded = load_rgb(split.image_dir / img["file_name"])
        expected = (img.get("width", decoded.width), img.get("height", decoded.height))
        if decoded.size != expected:
            raise HarnessError(
                f"{split.image_dir / img['file_name']}: decodes to {decoded.width}x{decoded.height}, but "
                f"{split.annotation_file} lists {expected[0]}x{expected[1]}"
            )
    return count


def to_tensor(img: Image.Image) -> torch.Tensor:
    """RGB PIL image -> float32 ``(3, H, W)`` tensor in [0, 1]."""
    array = np.asarray(img, dtype=np.float32) / 255.0  # (H, W, 3)
    return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def make_target(
    image_id: int, xywh: np.ndarray, labels: np.ndarray, iscrowd: np.ndarray, area: np.ndarray
) -> dict[str, torch.Tensor]:
    """The target dict of one image from its annotation columns (see the module docstring)."""
    xywh = np.asarray(xywh, dtype=np.float64).reshape(-1, 4)
    boxes = np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], axis=1)  # (M, 4) x1 y1 x2 y2
    return {
        "boxes": torch.as_tensor(boxes, dtype=torch.float32),
        "labels": torch.as_tensor(labels, dtype=torch.int64),
        "iscrowd": torch.as_tensor(iscrowd, dtype=torch.int64),
        "area": torch.as_tensor(area, dtype=torch.float64),
        "image_id": torch.tensor(image_id, dtype=torch.int64),
    }


def hflip(image: torch.Tensor, target: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Mirror an image ``(3, H, W)`` and its boxes left to right: ``x1' = W - x2``, ``x2' = W - x1``."""
    width = image.shape[-1]
    boxes = target["boxes"].clone()
    boxes[:, [0, 2]] = width - target["boxes"][:, [2, 0]]
    return image.flip(-1), {**target, "boxes": boxes}


class CocoDetectionDataset(Dataset):
    """``(image, target)`` pairs of one split; ``flip_prob`` > 0 mirrors images at random (training).

    Annotations are kept as flat numpy columns with per-image offsets, not as Python objects, so that forked
    data-loader workers do not copy them page by page through reference counting.
    """

    def __init__(self, split: CocoSplit, flip_prob: float = 0.0) -> None:
        self.image_dir = split.image_dir
        self.files = np.array([img["file_name"] for img in split.images], dtype=str)
        self.image_ids = np.array([img["id"] for img in split.images], dtype=np.int64)
        per_image = [split.annotations.get(img["id"], []) for img in split.images]
        self.offsets = np.cumsum([0] + [len(anns) for anns in per_image])
        flat = [ann for anns in per_image for ann in anns]
        self.xywh = np.array([ann["bbox"] for ann in flat], dtype=np.float64).reshape(-1, 4)
        self.labels = np.array([ann["category_id"] for ann in flat], dtype=np.int64)
        self.iscrowd = np.array([ann["iscrowd"] for ann in flat], dtype=np.int64)
        self.area = np.array([ann["area"] for ann in flat], dtype=np.float64)
        self.flip_prob = flip_prob

    def __len__(self) -> int:
        return len(self.files)

    def target(self, index: int) -> dict[str, torch.Tensor]:
        rows = slice(self.offsets[index], self.offsets[index + 1])
        columns = (self.xywh[rows], self.labels[rows], self.iscrowd[rows], self.area[rows])
        return make_target(int(self.image_ids[index]), *columns)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        image = to_tensor(load_rgb(self.image_dir / str(self.files[index])))
        target = self.target(index)
        if self.flip_prob > 0 and random.random() < self.flip_prob:
            image, target = hflip(image, target)
        return image, target


def collate_detection(batch: list[tuple[torch.Tensor, dict]]) -> tuple[list[torch.Tensor], list[dict]]:
    """``[(image, target), ...]`` -> ``([images], [targets])``; images keep their own sizes."""
    return [image for image, _ in batch], [target for _, target in batch]


class CocoDetectionDataModule(pl.LightningDataModule):
    """COCO detection from ``data_root`` in the 2017 layout; batches are ``(list of images, list of targets)``.

    Args:
        data_root: folder holding ``annotations/`` and the ``<split><year>/`` image folders.
        batch_size: images per batch, per device.
        num_workers: data-loader worker processes.
        year: the release suffix of the folder and file names (``"2017"``).
        train_split / val_split: split names (``"train"``, ``"val"``).
        flip_prob: probability of a horizontal flip of a training image.
        verify_images: images ``verify()`` decodes per split (-1: all, 0: none); every file's presence is checked.
    """

    def __init__(
        self,
        data_root: str | Path,
        batch_size: int = 2,
        num_workers: int = 0,
        year: str = "2017",
        train_split: str = "train",
        val_split: str = "val",
        flip_prob: float = 0.5,
        verify_images: int = VERIFY_IMAGES,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.year = str(year)
        self.split_names = {"train": train_split, "val": val_split}
        self.flip_prob = flip_prob
        self.verify_images = verify_images
        self.splits: dict[str, CocoSplit] = {}
        self.train_dataset: CocoDetectionDataset | None = None
        self.val_dataset: CocoDetectionDataset | None = None

    def _split(self, which: str) -> CocoSplit:
        if which not in self.splits:
            self.splits[which] = read_split(self.data_root, self.split_names[which], self.year)
        return self.splits[which]

    def verify(self) -> None:
        """Read both annotation files, check every listed image exists and decode a sample; errors name the path."""
        if not self.data_root.is_dir():
            raise HarnessError(f"{self.data_root}: data root missing (expected annotations/ and the image folders)")
        for which in ("train", "val"):
            check_images(self._split(which), self.verify_images)

    @property
    def categories(self) -> dict[int, str]:
        """COCO category id -> name, from the validation annotation file."""
        return dict(self._split("val").categories)

    @property
    def num_classes(self) -> int:
        """Largest category id + 1 (91 on COCO): labels are category ids, 0 is free for a background class."""
        return max(self.categories) + 1

    def setup(self, stage: str | None = None) -> None:
        if self.val_dataset is not None:
            return
        self.verify()
        self.train_dataset = CocoDetectionDataset(self._split("train"), flip_prob=self.flip_prob)
        self.val_dataset = CocoDetectionDataset(self._split("val"))

    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        return make_loader(
            dataset, batch_size=self.batch_size, num_workers=self.num_workers, shuffle=shuffle,
            owner="CocoDetectionDataModule", collate_fn=collate_detection,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """The validation split: test-dev annotations are not public."""
        return self._loader(self.val_dataset, shuffle=False)

    @property
    def references(self) -> Path:
        """The validation annotation file: the scorer's references for predictions on the val/test loaders."""
        return self._split("val").annotation_file

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: the validation annotation file, ids = its image ids in
        loader order."""
        if self.val_dataset is None:
            raise HarnessError("CocoDetectionDataModule: call setup() before asking how predictions are scored")
        return Scoring("coco-detection", self.references, [int(i) for i in self.val_dataset.image_ids])
