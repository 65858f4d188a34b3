"""Readers and the data module for IMDb, Yelp, AG News, DBpedia and TREC on files in their exact formats."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.imagenet.subsets import read_subset
from tasks.text_classification import LAYOUTS
from tasks.text_classification.data import (
    TextClassificationDataModule,
    _natural_key,
    read_split,
    read_trec,
    read_zhang_csv,
)
from tasks.text_classification.fixtures import write_tiny_text_classification

DATASETS = sorted(LAYOUTS)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("text")
    return {name: write_tiny_text_classification(base / name, name) for name in DATASETS}


def word_count(texts: list[str]) -> dict[str, torch.Tensor]:
    """A stand-in tokenizer for the hook: number of words per text."""
    return {"words": torch.tensor([len(text.split()) for text in texts])}


@pytest.mark.parametrize("dataset", DATASETS)
def test_one_batch_from_the_real_format(roots: dict[str, Path], dataset: str) -> None:
    classes = len(LAYOUTS[dataset].classes)
    dm = TextClassificationDataModule(dataset, roots[dataset], batch_size=4)
    dm.verify()
    dm.setup("fit")
    texts, labels = next(iter(dm.train_dataloader()))
    assert len(texts) == 4 and all(isinstance(t, str) and t for t in texts)
    assert labels.dtype == torch.long and 0 <= int(labels.min()) and int(labels.max()) < classes
    assert len(dm.train_examples) == 3 * classes and len(dm.examples("test")) == 2 * classes
    assert sorted(e.label for e in dm.examples("test")) == sorted(list(range(classes)) * 2)
    assert len(dm.data_hash) == 64 and dm.num_classes == classes


def test_tokenizer_hook(roots: dict[str, Path]) -> None:
    dm = TextClassificationDataModule("ag-news", roots["ag-news"], batch_size=2, tokenizer=word_count)
    dm.setup()
    inputs, labels = next(iter(dm.test_dataloader()))
    assert inputs["words"].shape == labels.shape == (2,)
    by_name = TextClassificationDataModule("ag-news", roots["ag-news"], batch_size=2, tokenizer="builtins:tuple")
    inputs, _ = next(iter(by_name.test_dataloader()))
    assert isinstance(inputs, tuple) and len(inputs) == 2


def test_zhang_csv_quotes_commas_and_escapes(roots: dict[str, Path]) -> None:
    first = read_split("ag-news", roots["ag-news"], "train")[0]
    # The title and description joined by a space; "" unquoted to "; the \n escape left as the two characters.
    assert first.text.startswith("Item 0 on ") and ", a clear case of " in first.text
    assert 'She said "caf\u00e9 cr\u00e8me", twice.\\nThen left.' in first.text
    assert first.label == LAYOUTS["ag-news"].classes.index(first.text.split(" ")[3])
    dbpedia_raw = (roots["dbpedia"] / "dbpedia_csv" / "test.csv").read_text().splitlines()[0]
    assert dbpedia_raw[0].isdigit()  # the class index unquoted, as in the real DBpedia files


def test_imdb_reads_neg_then_pos_skips_unsup(roots: dict[str, Path]) -> None:
    examples = read_split("imdb", roots["imdb"], "train")
    assert [e.id.split("/")[0] for e in examples] == ["neg"] * 3 + ["pos"] * 3
    assert [e.label for e in examples] == [0] * 3 + [1] * 3
    assert all("<br /><br />" in e.text for e in examples)
    assert sorted(["10_2", "2_1", "1_3"], key=_natural_key) == ["1_3", "2_1", "10_2"]


def test_trec_reads_latin1_with_the_stray_byte(roots: dict[str, Path]) -> None:
    raw = (roots["trec-6"] / "trec" / "train_5500.label").read_bytes()
    assert b"\xf0" in raw
    examples = read_split("trec-6", roots["trec-6"], "train")
    assert "sister\u00f0city" in examples[0].text and examples[0].text.endswith("?")
    assert [e.id for e in examples] == [str(i) for i in range(18)]


def test_data_root_may_be_the_archive_folder(roots: dict[str, Path]) -> None:
    inner = read_split("yelp-5", roots["yelp-5"] / "yelp_review_full_csv", "test")
    assert inner == read_split("yelp-5", roots["yelp-5"], "test")


def test_subsets_are_per_class_and_hashed(tmp_path: Path) -> None:
    root = write_tiny_text_classification(tmp_path / "ag", "ag-news", per_class=10)
    dm = TextClassificationDataModule("ag-news", root, subset_percent=30, subset_file=tmp_path / "subset.txt")
    dm.setup()
    assert sorted(e.label for e in dm.train_examples) == sorted([0, 1, 2, 3] * 3)
    assert sorted(i for i, _ in read_subset(tmp_path / "subset.txt")) == sorted(e.id for e in dm.train_examples)
    again = TextClassificationDataModule("ag-news", root, subset_percent=30)
    again.setup()
    assert again.data_hash == dm.data_hash


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"5","text"\n', r"bad\.csv:1: expected a class index in 1\.\.4"),
        ('"1","fine"\n"x","text"\n', r"bad\.csv:2: expected a class index"),
        ('"1"\n', r"bad\.csv:1: expected a class index in 1\.\.4 and text fields"),
    ],
)
def test_bad_zhang_rows_are_named(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(HarnessError, match=message):
        read_zhang_csv(tmp_path / "bad.csv", 4)


def test_bad_trec_line_is_named(tmp_path: Path) -> None:
    (tmp_path / "TREC_10.label").write_text("NUM:date When was it built ?\nWHAT:other Who knows ?\n")
    with pytest.raises(HarnessError, match=r"TREC_10\.label:2: expected 'COARSE:fine question' .* found 'WHAT:other"):
        read_trec(tmp_path / "TREC_10.label", LAYOUTS["trec-6"].classes)


def test_missing_files_are_named(roots: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"aclImdb/test: missing"):
        TextClassificationDataModule("imdb", tmp_path).verify()
    root = tmp_path / "copy"
    shutil.copytree(roots["imdb"], root)
    shutil.rmtree(root / "aclImdb" / "train" / "pos")
    with pytest.raises(HarnessError, match=r"aclImdb/train/pos: missing"):
        TextClassificationDataModule("imdb", root).verify()
    (root / "aclImdb" / "test" / "neg" / "0_4.txt").write_bytes(b"\xff\xfe broken")
    with pytest.raises(HarnessError, match=r"0_4\.txt: not utf-8 text"):
        read_split("imdb", root, "test")
