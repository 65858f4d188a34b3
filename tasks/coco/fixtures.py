"""A tiny COCO 2017 copy in the exact on-disk layout, for tests and the smoke tier.

The layout is the one the COCO 2017 download unpacks to (https://cocodataset.org/#download) and that
:class:`tasks.coco.data.CocoDetectionDataModule` reads:

- ``annotations/instances_{train,val}2017.json``: ``{"info", "licenses", "images", "annotations", "categories"}``;
  images ``{"license", "file_name", "coco_url", "height", "width", "date_captured", "flickr_url", "id"}``;
  annotations ``{"segmentation", "area", "iscrowd", "image_id", "bbox": [x, y, width, height], "category_id",
  "id"}`` with a polygon ``segmentation`` for single objects and an uncompressed RLE (``{"counts", "size"}``,
  column-major runs starting with background) for crowd regions; categories ``{"supercategory", "id", "name"}``.
- ``{train,val}2017/<12-digit image id>.jpg``.

The three categories are real COCO ones with their real, non-contiguous ids (person 1, car 3, dog 18). Each
object is a filled rectangle painted in its category's colour on a plain background, so its mask area equals its
box area; the validation split holds small (< 32²), medium and large (> 96²) objects and one crowd region.

Writing is deterministic (fixed tables, Pillow's JPEG encoder at quality 95) and idempotent: calling it again
rewrites the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

WIDTH, HEIGHT = 160, 120
JPEG_QUALITY = 95
CATEGORIES = (
    {"supercategory": "person", "id": 1, "name": "person"},
    {"supercategory": "vehicle", "id": 3, "name": "car"},
    {"supercategory": "animal", "id": 18, "name": "dog"},
)
COLOURS = {1: (220, 20, 60), 3: (0, 0, 142), 18: (119, 11, 32)}

# split -> image id -> objects (category id, x, y, width, height, iscrowd), painted in this order
OBJECTS: dict[str, dict[int, tuple[tuple[int, int, int, int, int, int], ...]]] = {
    "val": {
        139: ((1, 20, 10, 110, 100, 0), (3, 135, 90, 16, 16, 0)),  # large person, small car
        285: ((1, 0, 80, 90, 40, 1), (18, 30, 30, 50, 40, 0), (1, 100, 20, 40, 60, 0)),  # crowd, medium dog, person
        632: ((3, 10, 10, 60, 40, 0), (3, 100, 70, 20, 15, 0), (18, 130, 10, 25, 25, 0)),  # medium car, 2 small
    },
    "train": {
        9: ((1, 10, 10, 60, 90, 0), (18, 90, 60, 50, 40, 0)),
        25: ((3, 5, 50, 100, 60, 0),),
        30: ((18, 40, 20, 30, 30, 0), (1, 100, 5, 30, 80, 0), (3, 10, 90, 24, 20, 0)),
        34: ((1, 0, 0, 40, 40, 1), (1, 60, 30, 45, 70, 0)),
    },
}


def annotation_path(root: Path, split: str, year: str = "2017") -> Path:
    return Path(root) / "annotations" / f"instances_{split}{year}.json"


def file_name(image_id: int) -> str:
    return f"{image_id:012d}.jpg"


def _uncompressed_rle(mask: np.ndarray) -> dict[str, Any]:
    """COCO's uncompressed RLE: run lengths of the column-major flattened mask, the first run being zeros."""
    flat = mask.flatten(order="F").astype(np.int8)
    change = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    counts = np.diff(bounds).tolist()
    if flat[0] == 1:
        counts = [0, *counts]
    return {"counts": counts, "size": [int(mask.shape[0]), int(mask.shape[1])]}


def _annotation(ann_id: int, image_id: int, obj: tuple[int, int, int, int, int, int]) -> dict[str, Any]:
    category, x, y, w, h, crowd = obj
    if crowd:
        mask = np.zeros((HEIGHT, WIDTH), dtype=bool)
        mask[y : y + h, x : x + w] = True
        segmentation: Any = _uncompressed_rle(mask)
    else:
        segmentation = [[float(v) for v in (x, y, x + w, y, x + w, y + h, x, y + h)]]
    return {
        "segmentation": segmentation,
        "area": float(w * h),
        "iscrowd": crowd,
        "image_id": image_id,
        "bbox": [float(x), float(y), float(w), float(h)],
        "category_id": category,
        "id": ann_id,
    }


def tiny_instances(split: str) -> dict[str, Any]:
    """The ``instances_<split>2017.json`` document of the tiny copy (``split``: ``"train"`` or ``"val"``)."""
    images, annotations = [], []
    ann_id = 1000 if split == "val" else 1  # annotation ids are positive and unique across the whole copy
    for image_id, objects in OBJECTS[split].items():
        images.append(
            {
                "license": 1,
                "file_name": file_name(image_id),
                "coco_url": "",
                "height": HEIGHT,
                "width": WIDTH,
                "date_captured": "2017-01-01 00:00:00",
                "flickr_url": "",
                "id": image_id,
            }
        )
        for obj in objects:
            annotations.append(_annotation(ann_id, image_id, obj))
            ann_id += 1
    info = {"description": "tiny COCO-format fixture (not COCO data)", "version": "1.0", "year": 2017}
    licenses = [{"url": "", "id": 1, "name": "fixture"}]
    return {
        "info": info,
        "licenses": licenses,
        "images": images,
        "annotations": annotations,
        "categories": [dict(c) for c in CATEGORIES],
    }


def _image(image_id: int, objects: tuple[tuple[int, int, int, int, int, int], ...]) -> Image.Image:
    pixels = np.full((HEIGHT, WIDTH, 3), 60 + (image_id * 37) % 120, dtype=np.uint8)  # (H, W, 3)
    for category, x, y, w, h, crowd in objects:
        colour = np.asarray(COLOURS[category], dtype=np.uint8)
        pixels[y : y + h, x : x + w] = colour // 2 + 100 if crowd else colour
    return Image.fromarray(pixels)


def write_tiny_coco(root: Path | str, year: str = "2017") -> Path:
    """Write the tiny copy (4 train images, 3 val images) under ``root`` and return ``root``."""
    root = Path(root)
    for split, images in OBJECTS.items():
        folder = root / f"{split}{year}"
        folder.mkdir(parents=True, exist_ok=True)
        for image_id, objects in images.items():
            _image(image_id, objects).save(folder / file_name(image_id), format="JPEG", quality=JPEG_QUALITY)
        path = annotation_path(root, split, year)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(tiny_instances(split)) + "\n", encoding="utf-8")
    return root


def example_detections() -> list[dict[str, Any]]:
    """Detections for the tiny val split: most objects found exactly, one box shifted by 5 px (IoU 0.82), two
    objects missed, one false positive, and a high-scoring detection inside the crowd region (ignored)."""
    return [
        {"image_id": 139, "category_id": 1, "bbox": [20.0, 10.0, 110.0, 100.0], "score": 0.9},
        {"image_id": 139, "category_id": 3, "bbox": [135.0, 90.0, 16.0, 16.0], "score": 0.8},
        {"image_id": 285, "category_id": 18, "bbox": [35.0, 30.0, 50.0, 40.0], "score": 0.7},
        {"image_id": 285, "category_id": 1, "bbox": [10.0, 85.0, 30.0, 30.0], "score": 0.95},
        {"image_id": 632, "category_id": 3, "bbox": [10.0, 10.0, 60.0, 40.0], "score": 0.9},
        {"image_id": 632, "category_id": 18, "bbox": [130.0, 10.0, 25.0, 25.0], "score": 0.6},
        {"image_id": 632, "category_id": 18, "bbox": [60.0, 60.0, 30.0, 30.0], "score": 0.5},
    ]


def example(root: Path | str, task_id: str) -> dict[str, Path]:
    """A tiny scoring example: the tiny copy's ``instances_val2017.json`` and a results file for it."""
    root = Path(root)
    write_tiny_coco(root)
    predictions = root / "detections_val2017_example_results.json"
    predictions.write_text(json.dumps(example_detections()) + "\n", encoding="utf-8")
    return {"references": annotation_path(root, "val"), "predictions": predictions}
