"""UDA's data modules on tiny copies of real formats: the labelled subset is the same for UDA and its baseline, a
batch holds the paper's unlabelled-to-labelled ratio with a strongly augmented copy of each unlabelled example, and
the test loader keeps ids the task's scorer reads."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from reproductions.uda.data import ImageUDADataModule, TextUDADataModule
from reproductions.uda.data.text import hashed_ids


@pytest.fixture(scope="module")
def digits_idx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tasks.fashion_mnist.data import write_digits_idx

    root = tmp_path_factory.mktemp("digits")
    write_digits_idx(root)
    return root


@pytest.fixture(scope="module")
def tiny_imdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tasks.text_classification.fixtures import write_tiny_text_classification

    return write_tiny_text_classification(tmp_path_factory.mktemp("imdb"), "imdb", per_class=8, test_per_class=3)


def test_image_batches_hold_the_ratio_and_an_augmented_copy(digits_idx: Path) -> None:
    data = ImageUDADataModule("digits", str(digits_idx), per_class=2, unlabelled_size=300, batch_size=4,
                              unlabelled_ratio=7, steps_per_epoch=3, pool=2, seed=0)  # fmt: skip
    data.setup()
    assert data.num_labelled == 20 and data.num_unlabelled == 300
    batches = list(data.train_dataloader())
    assert len(batches) == 3
    batch = batches[0]
    assert batch["labelled"].shape == (4, 1, 14, 14) and batch["labels"].shape == (4,)
    assert batch["original"].shape == batch["augmented"].shape == (28, 1, 14, 14)
    assert not torch.equal(batch["original"], batch["augmented"])
    # the labels of every labelled batch come from the 2-per-class subset
    chosen = {int(data.train_labels[p]) for p in data.labelled_at}
    assert chosen == set(range(10)) and all(int(y) in chosen for b in batches for y in b["labels"])


def test_the_baseline_sees_the_same_labelled_set_and_no_unlabelled_data(digits_idx: Path) -> None:
    uda = ImageUDADataModule("digits", str(digits_idx), per_class=3, label_seed=5, unlabelled_size=100, seed=0)
    supervised = ImageUDADataModule("digits", str(digits_idx), per_class=3, label_seed=5, unlabelled_ratio=0, seed=0)
    other = ImageUDADataModule("digits", str(digits_idx), per_class=3, label_seed=6, unlabelled_size=100, seed=0)
    for data in (uda, supervised, other):
        data.setup()
    assert uda.labelled_at == supervised.labelled_at != other.labelled_at
    batch = next(iter(supervised.train_dataloader()))
    assert set(batch) == {"labelled", "labels"} and supervised.num_unlabelled == 0


def test_the_test_split_is_scored_by_position(digits_idx: Path, tmp_path: Path) -> None:
    data = ImageUDADataModule("digits", str(digits_idx), per_class=1, unlabelled_ratio=0)
    data.setup()
    scoring = data.scoring(0, tmp_path)
    assert scoring.task == "fashion-mnist" and scoring.ids[:3] == ["0", "1", "2"]
    lines = scoring.references.read_text().splitlines()
    assert lines[0] == "id,label" and len(lines) == len(data.test_labels) + 1


def test_an_unknown_augmentation_is_an_error() -> None:
    with pytest.raises(HarnessError, match="augment must be one of randaugment, cutout, crop-flip"):
        ImageUDADataModule(augment="mixup")
    with pytest.raises(HarnessError, match="reads its paraphrases from a file"):
        TextUDADataModule(augment="backtranslation")


def test_text_batches_replace_words_in_the_unlabelled_copies(tiny_imdb: Path) -> None:
    data = TextUDADataModule("imdb", str(tiny_imdb), per_class=2, batch_size=2, unlabelled_ratio=7,
                             steps_per_epoch=2, tfidf_p=0.7, max_tokens=40, seed=0)  # fmt: skip
    data.setup()
    batch = next(iter(data.train_dataloader()))
    assert batch["labelled"].shape[0] == 2 and batch["original"].shape[0] == batch["augmented"].shape[0] == 14
    assert (batch["original"][:, 0] == 1).all()  # [CLS] first
    assert not torch.equal(batch["original"], batch["augmented"])
    assert data.num_classes == 2 and len(data.test_ids) == 6


def test_back_translation_reads_the_paraphrase_file(tiny_imdb: Path, tmp_path: Path) -> None:
    from tasks.text_classification.data import read_split

    train = read_split("imdb", tiny_imdb, "train")
    path = tmp_path / "paraphrases.tsv"
    path.write_text("".join(f"{e.id}\tzebra zebra zebra\n" for e in train), encoding="utf-8")
    data = TextUDADataModule("imdb", str(tiny_imdb), per_class=2, batch_size=2, augment="backtranslation",
                             paraphrases=str(path), seed=0)  # fmt: skip
    data.setup()
    _, augmented = data.unlabelled_batch([0, 1], random.Random(0))
    assert augmented.tolist() == [hashed_ids(["zebra"] * 3, 8192, 64)] * 2


def test_hashed_ids_keep_the_last_words() -> None:
    ids = hashed_ids([f"w{i}" for i in range(10)], 100, 4)
    assert ids[0] == 1 and ids[1:] == hashed_ids(["w7", "w8", "w9"], 100, 4)[1:] and len(ids) == 4


def test_imdb_adds_its_unlabelled_reviews(tiny_imdb: Path) -> None:
    unsup = next(tiny_imdb.rglob("unsup"))  # aclImdb/train/unsup, as the archive has it
    data = TextUDADataModule("imdb", str(tiny_imdb), per_class=2, unlabelled_extra=str(unsup), seed=0)
    data.setup()
    assert data.num_unlabelled == 16 + 1 and data.num_classes == 2
    extra = data.train[data.unlabelled_at[-1]]
    assert extra.id == "unsup/0_0" and extra.text.startswith("An unlabelled review")
    assert all(data.train[p].label >= 0 for p in data.labelled_at)  # never drawn as a labelled example


def test_yelp_reads_external_amazon_reviews_alone(tmp_path: Path) -> None:
    import gzip
    import json

    from tasks.text_classification.fixtures import write_tiny_text_classification

    yelp = write_tiny_text_classification(tmp_path / "yelp", "yelp-2", per_class=4, test_per_class=2)
    reviews = tmp_path / "reviews_Books_5.json.gz"  # McAuley et al.'s format: one review object per line
    rows = [json.dumps({"reviewerID": "A1", "asin": "B1", "summary": "Zebra", "reviewText": "quagga okapi"}),
            "{'reviewerID': 'A2', 'summary': '', 'reviewText': 'loose dict literal'}",  # the larger dumps' format
            json.dumps({"reviewerID": "A3", "summary": "third", "reviewText": "left out by the size"})]  # fmt: skip
    with gzip.open(reviews, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(rows) + "\n")
    paraphrases = tmp_path / "paraphrases.tsv"
    paraphrases.write_text("unsup/0\tstriped horse\n", encoding="utf-8")
    data = TextUDADataModule("yelp-2", str(yelp), per_class=2, unlabelled_size=0, unlabelled_extra=str(reviews),
                             unlabelled_extra_size=2, batch_size=1, unlabelled_ratio=2, augment="backtranslation",
                             paraphrases=str(paraphrases), seed=0)  # fmt: skip
    data.setup()
    texts = [data.train[p].text for p in data.unlabelled_at]
    assert texts == ["Zebra quagga okapi", "loose dict literal"]  # the external reviews alone
    original, augmented = data.unlabelled_batch([0, 1], random.Random(0))
    assert original[0].tolist() == hashed_ids(["zebra", "quagga", "okapi"], 8192, 64)
    assert augmented[0].tolist()[:3] == hashed_ids(["striped", "horse"], 8192, 64)  # its paraphrase, by its id


def test_a_file_of_one_text_per_line_and_a_bad_review_line(tmp_path: Path) -> None:
    from tasks.text_classification.data import read_unlabelled

    lines = tmp_path / "unlabelled.txt"
    lines.write_text("first review\n\n  second review  \nthird\n", encoding="utf-8")
    assert [(e.id, e.text) for e in read_unlabelled(lines)] == [
        ("unsup/0", "first review"), ("unsup/2", "second review"), ("unsup/3", "third")]  # fmt: skip
    assert len(read_unlabelled(lines, limit=1)) == 1
    bad = tmp_path / "reviews.jsonl"
    bad.write_text('{"reviewText": "fine"}\nnot json at all\n', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"reviews.jsonl:2: neither JSON"):
        read_unlabelled(bad)
