"""Tiny Food-101 and Oxford-IIIT Pets copies written in the files and formats their authors distribute.

- :func:`write_tiny_food101`: ``images/<class>/<id>.jpg``, ``meta/classes.txt`` (all 101 lines: the first
  ``classes`` are the real first class names, the rest placeholders), ``meta/labels.txt``, ``meta/train.txt`` /
  ``test.txt`` (``<class>/<id>`` lines, no extension) and ``meta/train.json`` / ``test.json`` (class -> entries).
- :func:`write_tiny_pets`: ``images/<Breed>_<n>.jpg`` and ``annotations/list.txt`` (with the official ``#`` header
  lines), ``trainval.txt`` and ``test.txt`` (``<image> <CLASS-ID> <SPECIES> <BREED ID>`` lines) for the first
  ``classes`` breeds with their real ids (capitalised names are cats).

Images are small JPEGs of a class colour plus noise, deterministic in ``seed``. Writing is atomic and idempotent
(``tasks.imagenet.fixtures.atomic_fixture``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from harness.errors import HarnessError
from tasks.imagenet.fixtures import atomic_fixture

FOOD101_FIRST = ("apple_pie", "baby_back_ribs", "baklava", "beef_carpaccio", "beef_tartare")
PETS_FIRST = (  # (name, SPECIES 1 cat / 2 dog, BREED ID): CLASS-ID is the position from 1
    ("Abyssinian", 1, 1),
    ("american_bulldog", 2, 1),
    ("american_pit_bull_terrier", 2, 2),
    ("basset_hound", 2, 3),
    ("beagle", 2, 4),
)
PETS_HEADER = (
    "#Image CLASS-ID SPECIES BREED ID",
    "#ID: 1:37 Class ids",
    "#SPECIES: 1:Cat 2:Dog",
    "#BREED ID: 1-25:Cat 1:12:Dog",
    "#All images with 1st letter as captial are cat images",  # sic, as distributed
    "#images with small first letter are dog images",
)


def _jpeg(rng: np.random.Generator, colour: np.ndarray, path: Path, size: tuple[int, int] = (40, 30)) -> None:
    noise = rng.integers(-40, 41, size=(size[1], size[0], 3))
    pixels = np.clip(colour[None, None, :] + noise, 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format="JPEG", quality=90)


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


def _check(classes: int, most: int, per_class: int, test_per_class: int) -> None:
    if not 1 <= classes <= most or per_class < 1 or test_per_class < 1:
        raise HarnessError(f"need 1 <= classes <= {most} and at least one image per class and split")


def _food101(root: Path, params: dict) -> None:
    rng = np.random.default_rng(params["seed"])
    names = list(FOOD101_FIRST[: params["classes"]])
    all_names = names + [f"placeholder_{i:03d}" for i in range(len(names), 101)]
    _write_lines(root / "meta" / "classes.txt", all_names)
    _write_lines(root / "meta" / "labels.txt", [name.replace("_", " ").capitalize() for name in all_names])
    image_id = 1000
    for split, count in (("train", params["per_class"]), ("test", params["test_per_class"])):
        entries: dict[str, list[str]] = {}
        for name in names:
            colour = rng.integers(48, 208, size=3)
            for _ in range(count):
                image_id += 7
                entries.setdefault(name, []).append(f"{name}/{image_id}")
                _jpeg(rng, colour, root / "images" / name / f"{image_id}.jpg")
        _write_lines(root / "meta" / f"{split}.txt", [entry for name in names for entry in entries[name]])
        (root / "meta" / f"{split}.json").write_text(json.dumps(entries))


def _pets(root: Path, params: dict) -> None:
    rng = np.random.default_rng(params["seed"])
    rows: dict[str, list[str]] = {"trainval": [], "test": []}
    for class_id, (name, species, breed) in enumerate(PETS_FIRST[: params["classes"]], start=1):
        colour = rng.integers(48, 208, size=3)
        counts = (("trainval", params["per_class"]), ("test", params["test_per_class"]))
        number = 0
        for split, count in counts:
            for _ in range(count):
                number += 1
                rows[split].append(f"{name}_{number} {class_id} {species} {breed}")
                _jpeg(rng, colour, root / "images" / f"{name}_{number}.jpg")
    _write_lines(root / "annotations" / "list.txt", [*PETS_HEADER, *sorted(rows["trainval"] + rows["test"])])
    for split, lines in rows.items():
        _write_lines(root / "annotations" / f"{split}.txt", lines)


def write_tiny_food101(
    root: Path, classes: int = 3, per_class: int = 2, test_per_class: int = 1, seed: int = 0
) -> Path:
    """Write a tiny Food-101 (the unpacked ``food-101/`` folder) at ``root``; returns ``root``."""
    _check(classes, len(FOOD101_FIRST), per_class, test_per_class)
    params = dict(
        fixture="tiny-food-101", classes=classes, per_class=per_class, test_per_class=test_per_class, seed=seed
    )
    return atomic_fixture(Path(root), params, lambda tmp: _food101(tmp, params))


def write_tiny_pets(root: Path, classes: int = 3, per_class: int = 2, test_per_class: int = 1, seed: int = 0) -> Path:
    """Write a tiny Oxford-IIIT Pets (``images/`` and ``annotations/``) at ``root``; returns ``root``."""
    _check(classes, len(PETS_FIRST), per_class, test_per_class)
    params = dict(
        fixture="tiny-oxford-pets", classes=classes, per_class=per_class, test_per_class=test_per_class, seed=seed
    )
    return atomic_fixture(Path(root), params, lambda tmp: _pets(tmp, params))
