"""The COCO data module and the tiny COCO fixture (tasks.coco.data, tasks.coco.fixtures)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from tasks.coco.data import CocoDetectionDataModule, hflip
from tasks.coco.fixtures import OBJECTS, annotation_path, file_name, tiny_instances, write_tiny_coco


@pytest.fixture(scope="module")
def coco_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_coco(tmp_path_factory.mktemp("coco"))


def tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return digest.hexdigest()


def test_fixture_layout_is_the_coco_2017_one_and_deterministic(coco_root: Path, tmp_path: Path) -> None:
    assert annotation_path(coco_root, "val") == coco_root / "annotations" / "instances_val2017.json"
    assert sorted(p.name for p in (coco_root / "val2017").iterdir()) == [
        "000000000139.jpg",
        "000000000285.jpg",
        "000000000632.jpg",
    ]
    doc = json.loads(annotation_path(coco_root, "train").read_text())
    assert set(doc) == {"info", "licenses", "images", "annotations", "categories"}
    assert [c["id"] for c in doc["categories"]] == [1, 3, 18]
    again = write_tiny_coco(tmp_path / "again")
    assert tree_hash(again) == tree_hash(coco_root)
    write_tiny_coco(again)  # idempotent
    assert tree_hash(again) == tree_hash(coco_root)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' own numpy 2 copy= warning
def test_crowd_region_is_an_uncompressed_rle_of_its_box() -> None:
    from pycocotools import mask as mask_utils

    (crowd,) = [a for a in tiny_instances("val")["annotations"] if a["iscrowd"]]
    height, width = crowd["segmentation"]["size"]
    decoded = mask_utils.decode(mask_utils.frPyObjects(crowd["segmentation"], height, width))
    x, y, w, h = map(int, crowd["bbox"])
    assert decoded.sum() == crowd["area"] == w * h and decoded[y : y + h, x : x + w].all()


def test_one_batch_of_each_split(coco_root: Path) -> None:
    dm = CocoDetectionDataModule(coco_root, batch_size=2, flip_prob=0.0)
    dm.setup("fit")
    images, targets = next(iter(dm.train_dataloader()))
    assert len(images) == len(targets) == 2
    assert all(img.shape == (3, 120, 160) and img.dtype == torch.float32 for img in images)
    images, targets = next(iter(dm.val_dataloader()))
    assert [int(t["image_id"]) for t in targets] == [139, 285]  # id order
    first = targets[0]
    assert set(first) == {"boxes", "labels", "iscrowd", "area", "image_id"}
    assert first["boxes"].tolist() == [[20.0, 10.0, 130.0, 110.0], [135.0, 90.0, 151.0, 106.0]]  # xyxy
    assert first["labels"].tolist() == [1, 3] and first["labels"].dtype == torch.int64  # COCO category ids
    assert targets[1]["iscrowd"].tolist() == [1, 0, 0]
    assert float(images[0].max()) <= 1.0 and float(images[0].min()) >= 0.0
    assert dm.num_classes == 19 and dm.categories == {1: "person", 3: "car", 18: "dog"}
    assert len(dm.val_dataset) == len(OBJECTS["val"]) and dm.references.name == "instances_val2017.json"


def test_pixels_under_a_box_have_its_colour(coco_root: Path) -> None:
    dm = CocoDetectionDataModule(coco_root, flip_prob=0.0)
    dm.setup()
    image, target = dm.val_dataset[0]
    x1, y1, x2, y2 = (int(v) for v in target["boxes"][0])
    patch = image[:, y1 + 5 : y2 - 5, x1 + 5 : x2 - 5].mean(dim=(1, 2)) * 255
    assert np.allclose(patch.numpy(), (220, 20, 60), atol=6)  # the person colour, through JPEG


def test_hflip_mirrors_boxes() -> None:
    image = torch.zeros(3, 10, 20)
    image[:, :, :5] = 1.0
    target = {"boxes": torch.tensor([[0.0, 0.0, 5.0, 10.0]]), "labels": torch.tensor([1])}
    flipped, out = hflip(image, target)
    assert out["boxes"].tolist() == [[15.0, 0.0, 20.0, 10.0]]
    assert flipped[:, :, 15:].eq(1).all() and target["boxes"].tolist() == [[0.0, 0.0, 5.0, 10.0]]


def test_verify_names_what_is_missing_or_broken(coco_root: Path, tmp_path: Path) -> None:
    root = write_tiny_coco(tmp_path / "broken")
    annotation_path(root, "train").unlink()
    with pytest.raises(HarnessError, match=r"instances_train2017\.json: missing"):
        CocoDetectionDataModule(root).verify()
    root = write_tiny_coco(tmp_path / "no-image")
    (root / "val2017" / file_name(285)).unlink()
    with pytest.raises(HarnessError, match=r"val2017/000000000285\.jpg: missing \(1 of the 3"):
        CocoDetectionDataModule(root).verify()
    root = write_tiny_coco(tmp_path / "corrupt")
    (root / "val2017" / file_name(632)).write_bytes(b"not a jpeg")
    with pytest.raises(HarnessError, match=r"000000000632\.jpg: unreadable image"):
        CocoDetectionDataModule(root, verify_images=-1).verify()
    root = write_tiny_coco(tmp_path / "bad-json")
    annotation_path(root, "val").write_text("{")
    with pytest.raises(HarnessError, match=r"instances_val2017\.json:1: invalid JSON"):
        CocoDetectionDataModule(root).verify()
