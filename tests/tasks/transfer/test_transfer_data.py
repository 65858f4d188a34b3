"""Transfer datasets: Food-101 and Oxford-IIIT Pets lists read in their official formats, the ImageNet-pipeline data
module (CIFAR upsampled too), and the scorers."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.classification.fixtures import write_tiny_classification
from tasks.imagenet.fixtures import write_csv
from tasks.transfer import FOOD_101, OXFORD_PETS
from tasks.transfer.data import TransferDataModule, read_listing
from tasks.transfer.fixtures import write_tiny_food101, write_tiny_pets
from tasks.transfer.score import score_food_101, score_oxford_pets


@pytest.fixture(scope="module")
def food(tmp_path_factory) -> Path:
    return write_tiny_food101(tmp_path_factory.mktemp("food") / "food-101")


@pytest.fixture(scope="module")
def pets(tmp_path_factory) -> Path:
    return write_tiny_pets(tmp_path_factory.mktemp("pets") / "oxford-iiit-pet")


def test_food101_lists_follow_meta(food):
    train, test = read_listing("food-101", food, "train"), read_listing("food-101", food, "test")
    assert len(train.ids) == 6 and len(test.ids) == 3
    assert train.ids[0].startswith("apple_pie/") and train.paths[0] == food / "images" / f"{train.ids[0]}.jpg"
    assert sorted(set(train.labels)) == [0, 1, 2]  # the line of meta/classes.txt
    assert read_listing("food-101", food.parent, "test").ids == test.ids  # the parent of food-101/ works too


def test_pets_lists_follow_annotations(pets):
    train, test = read_listing("oxford-pets", pets, "train"), read_listing("oxford-pets", pets, "test")
    assert train.ids[:2] == ["Abyssinian_1", "Abyssinian_2"] and test.ids[0] == "Abyssinian_3"
    assert train.labels == [0, 0, 1, 1, 2, 2]  # CLASS-ID - 1
    assert train.paths[0] == pets / "images" / "Abyssinian_1.jpg"
    assert (pets / "annotations" / "list.txt").read_text().startswith("#Image CLASS-ID SPECIES BREED ID\n")


def test_list_errors_name_file_and_line(tmp_path, food):
    with pytest.raises(HarnessError, match=r"meta/train\.txt: missing"):
        read_listing("food-101", tmp_path, "train")
    (tmp_path / "meta").mkdir()
    (tmp_path / "meta" / "train.txt").write_text("apple_pie/1\n")
    with pytest.raises(HarnessError, match=r"meta/classes\.txt: missing"):
        read_listing("food-101", tmp_path, "train")
    (tmp_path / "meta" / "classes.txt").write_text("".join(f"c{i}\n" for i in range(101)))
    with pytest.raises(HarnessError, match=r"train\.txt:1: class 'apple_pie' is not in .*classes\.txt"):
        read_listing("food-101", tmp_path, "train")
    bad = tmp_path / "pets"
    (bad / "annotations").mkdir(parents=True)
    (bad / "annotations" / "trainval.txt").write_text("Abyssinian_1 1 1 1\nbeagle_1 38 2 4\n")
    with pytest.raises(HarnessError, match=r"trainval\.txt:2: expected"):
        read_listing("oxford-pets", bad, "train")
    with pytest.raises(HarnessError, match="no split 'val'"):
        read_listing("food-101", food, "val")


def test_verify_names_a_missing_image(tmp_path):
    root = write_tiny_pets(tmp_path / "pets")
    TransferDataModule("oxford-pets", root, verify_images=-1).verify()
    (root / "images" / "Abyssinian_3.jpg").unlink()
    with pytest.raises(HarnessError, match=r"Abyssinian_3\.jpg: listed image missing"):
        TransferDataModule("oxford-pets", root).verify()


@pytest.mark.parametrize("dataset", ["food-101", "oxford-pets", "cifar-10"])
def test_batches_arrive_at_the_model_resolution(dataset, food, pets, tmp_path):
    root = {"food-101": food, "oxford-pets": pets}.get(dataset) or write_tiny_classification(tmp_path, dataset)
    module = TransferDataModule(dataset, root, batch_size=4, image_size=48, crop_fraction=48 / 80, autoaugment=True)
    module.verify()
    module.setup("fit")
    images, labels = next(iter(module.train_dataloader()))
    assert images.shape == (4, 3, 48, 48) and images.dtype == torch.float32 and labels.dtype == torch.long
    test_images, _ = next(iter(module.test_dataloader()))
    assert test_images.shape[1:] == (3, 48, 48)
    assert module.data_hash and len(module.data_hash) == 64


def test_scorers_read_the_dataset_folder_or_a_csv(tmp_path, food, pets):
    assert FOOD_101.score == "tasks.transfer.score:score_food_101" and OXFORD_PETS.keys == ("top1", "top5", "error")
    listing = read_listing("oxford-pets", pets, "test")
    rows = [[item_id, str(label)] for item_id, label in zip(listing.ids, listing.labels, strict=True)]
    rows[0][1] = "5"  # one wrong of three
    write_csv(tmp_path / "pets.csv", ["id", "prediction"], rows)
    assert score_oxford_pets(pets, tmp_path / "pets.csv")["top1"] == pytest.approx(200 / 3)
    references = TransferDataModule("food-101", food).write_references(tmp_path / "refs.csv")
    write_csv(tmp_path / "food.csv", ["id", "prediction"], [["apple_pie/1049", "0"]])
    with pytest.warns(UserWarning, match="have no prediction"):
        assert score_food_101(references, tmp_path / "food.csv")["top1"] == pytest.approx(100 / 3)
