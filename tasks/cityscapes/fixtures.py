"""A tiny Cityscapes copy in the exact on-disk layout, for tests and the smoke tier.

The layout is that of the official ``leftImg8bit_trainvaltest.zip`` and ``gtFine_trainvaltest.zip``
(https://www.cityscapes-dataset.com/downloads/), which :class:`tasks.cityscapes.data.CityscapesDataModule` reads
and whose ``gtFine/<split>`` folder the scorer takes as references:

- ``leftImg8bit/<split>/<city>/<city>_<seq:06d>_<frame:06d>_leftImg8bit.png``: RGB;
- ``gtFine/<split>/<city>/<city>_<seq:06d>_<frame:06d>_gtFine_labelIds.png``: 8-bit ``L``, label ids 0..33;
- ``gtFine/<split>/<city>/<city>_<seq:06d>_<frame:06d>_gtFine_color.png``: RGBA, each label's colour.

(The real ``gtFine`` also holds ``_instanceIds.png`` and ``_polygons.json``; nothing here reads them.)

Two cities per split (train: aachen, bochum; val: frankfurt, lindau), two frames per city, each 48x24 pixels:
a 12x6 grid of 4x4 cells holding every label id 0..33 at least twice, in an order drawn from a seeded generator,
so every one of the 19 evaluated classes is in every image. The camera image is each pixel's label colour plus
seeded noise, so a model can learn it. Writing is deterministic and idempotent (the same bytes every time).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from tasks.cityscapes.score import NUM_IDS

WIDTH, HEIGHT, CELL = 48, 24, 4
CITIES = {"train": ("aachen", "bochum"), "val": ("frankfurt", "lindau")}
SEQUENCES = (0, 1)
FRAME = 19  # the annotated 20th frame of each 30-frame snippet, as in the real file names


def frames(split: str) -> list[tuple[str, str]]:
    """``(city, <city>_<seq>_<frame>)`` of every image of a split, sorted."""
    return [(city, f"{city}_{seq:06d}_{FRAME:06d}") for city in CITIES[split] for seq in SEQUENCES]


def label_map(index: int) -> np.ndarray:
    """The ``(HEIGHT, WIDTH)`` uint8 label-id map of image ``index`` (every id 0..33 in at least two cells)."""
    rows, cols = HEIGHT // CELL, WIDTH // CELL
    ids = np.random.default_rng(1000 + index).permutation(np.arange(rows * cols) % NUM_IDS).astype(np.uint8)
    return np.kron(ids.reshape(rows, cols), np.ones((CELL, CELL), dtype=np.uint8))


def _colours() -> np.ndarray:
    from cityscapesscripts.helpers.labels import labels

    table = np.zeros((256, 3), dtype=np.uint8)
    for lab in labels:
        if lab.id >= 0:
            table[lab.id] = lab.color
    return table


def camera_image(labels: np.ndarray, index: int) -> np.ndarray:
    """``(H, W, 3)`` uint8: the label colours plus noise in [-20, 20]."""
    noise = np.random.default_rng(2000 + index).integers(-20, 21, size=(*labels.shape, 3))
    return np.clip(_colours()[labels].astype(np.int64) + noise, 0, 255).astype(np.uint8)


def write_tiny_cityscapes(root: Path | str) -> Path:
    """Write the tiny copy (train and val, 4 images each) under ``root`` and return ``root``."""
    root = Path(root)
    index = 0
    for split in CITIES:
        for city, prefix in frames(split):
            labels = label_map(index)
            image_dir, gt_dir = root / "leftImg8bit" / split / city, root / "gtFine" / split / city
            image_dir.mkdir(parents=True, exist_ok=True)
            gt_dir.mkdir(parents=True, exist_ok=True)
            Image.fromarray(camera_image(labels, index)).save(image_dir / f"{prefix}_leftImg8bit.png")
            Image.fromarray(labels).save(gt_dir / f"{prefix}_gtFine_labelIds.png")
            rgba = np.concatenate([_colours()[labels], np.full((*labels.shape, 1), 255, np.uint8)], axis=2)
            Image.fromarray(rgba).save(gt_dir / f"{prefix}_gtFine_color.png")
            index += 1
    return root


def example(root: Path | str, task_id: str) -> dict[str, Path]:
    """A tiny scoring example: ``gtFine/val`` and predictions equal to the ground truth except in the top row of
    cells, shifted by one cell. The first city's predictions lie flat in ``results/``, the second's in
    ``results/<city>/``: the scorer searches the folder recursively, as the official script does."""
    root = write_tiny_cityscapes(root)
    results = root / "results"
    for number, (city, prefix) in enumerate(frames("val")):
        gt = np.array(Image.open(root / "gtFine" / "val" / city / f"{prefix}_gtFine_labelIds.png"))
        pred = gt.copy()
        pred[:CELL] = np.roll(gt[:CELL], CELL, axis=1)
        folder = results if number < len(SEQUENCES) else results / city
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pred).save(folder / f"{prefix}_leftImg8bit.png")
    return {"references": root / "gtFine" / "val", "predictions": results}
