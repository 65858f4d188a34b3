"""The GLUE data module on files in the download script's exact layouts: batches, dev-set ids, verify errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.glue import LAYOUTS
from tasks.glue.data import MNLI_BOTH, GlueDataModule, WhitespaceTokenizer, read_examples
from tasks.glue.fixtures import (
    MNLI_TRAIN_COLUMNS,
    tiny_glue_lines,
    tiny_glue_train_lines,
    write_tiny_glue_data,
    write_tiny_glue_split,
)
from tasks.glue.score import read_references, score, write_predictions

TASKS = [*LAYOUTS, MNLI_BOTH]
SINGLE_SENTENCE = ("glue-cola", "glue-sst2")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("glue")
    for task in LAYOUTS:
        write_tiny_glue_data(base, task)
    return base


def module(root: Path, task: str, **kwargs) -> GlueDataModule:
    dm = GlueDataModule(root, task, batch_size=4, **kwargs)
    dm.setup("fit")
    return dm


def lines(path: Path, *replacements: tuple[int, str]) -> Path:
    """Rewrite ``path`` with some lines (1-based) replaced."""
    text = path.read_text(encoding="utf-8-sig").split("\n")
    for number, line in replacements:
        text[number - 1] = line
    path.write_text("\n".join(text), encoding="utf-8")
    return path


def copy_task(tmp_path: Path, task: str) -> Path:
    return write_tiny_glue_data(tmp_path / "glue", task)


# --- batches -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_one_batch_from_the_real_layout(root: Path, task: str) -> None:
    dm = module(root, task)
    batch = next(iter(dm.train_dataloader()))
    assert batch["ids"].shape == batch["labels"].shape == (4,)
    assert len(batch["text_a"]) == 4 and all(isinstance(text, str) and text for text in batch["text_a"])
    if task in SINGLE_SENTENCE:
        assert batch["text_b"] is None
    else:
        assert len(batch["text_b"]) == 4 and all(isinstance(text, str) and text for text in batch["text_b"])
    if task == "glue-stsb":
        assert batch["labels"].dtype == torch.float32 and dm.labels is None and dm.num_classes == 1
    else:
        assert batch["labels"].dtype == torch.long and 0 <= int(batch["labels"].min())
        assert int(batch["labels"].max()) < dm.num_classes == len(dm.labels)
    assert len(dm.examples("train")) == 8 and len(dm.data_hash) == 64


@pytest.mark.parametrize("task", list(LAYOUTS))
def test_test_loader_serves_the_dev_set_with_the_scorer_ids(root: Path, task: str) -> None:
    dm = module(root, task)
    spec = LAYOUTS[task]
    gold = read_references(task, root / spec.directory / spec.dev_file)
    batches = list(dm.test_dataloader())
    ids = [int(i) for batch in batches for i in batch["ids"]]
    labels = [dm.label_of(label.item()) for batch in batches for label in batch["labels"]]
    assert ids == list(gold) and labels == pytest.approx(list(gold.values()))


def test_mnli_matched_and_mismatched_test_loaders(root: Path) -> None:
    both = module(root, MNLI_BOTH)
    assert both.dev_splits == ("dev_matched", "dev_mismatched")
    loaders = both.test_dataloader()
    assert isinstance(loaders, list) and len(loaders) == 2
    for loader, task in zip(loaders, ("glue-mnli-m", "glue-mnli-mm"), strict=True):
        texts = [text for batch in loader for text in batch["text_a"]]
        assert texts == [example.text_a for example in read_examples(task, root / "MNLI" / LAYOUTS[task].dev_file)]
    matched = [text for batch in both.val_dataloader() for text in batch["text_a"]]
    assert matched == [example.text_a for example in both.examples("dev_matched")]
    mismatched = module(root, "glue-mnli-mm")
    assert mismatched.dev_splits == ("dev_mismatched",) and not isinstance(mismatched.test_dataloader(), list)
    assert mismatched.examples("dev_mismatched") == both.examples("dev_mismatched") != both.examples("dev_matched")


@pytest.mark.parametrize("task", ["glue-qqp", "glue-stsb", "glue-mnli-mm"])
def test_a_submission_from_the_test_loader_scores(root: Path, task: str, tmp_path: Path) -> None:
    dm = module(root, task)
    predictions = {
        int(i): dm.label_of(label.item())
        for batch in dm.test_dataloader()
        for i, label in zip(batch["ids"], batch["labels"], strict=True)
    }
    submission = write_predictions(tmp_path / "submission.tsv", predictions)
    spec = LAYOUTS[task]
    result = score(task, root / spec.directory / spec.dev_file, submission)
    assert result == pytest.approx(dict.fromkeys(spec.metrics, 100.0))


def test_tokenizer_hook_pads_and_truncates(root: Path) -> None:
    dm = module(root, "glue-rte", tokenizer="tasks.glue.data:whitespace_tokenizer", max_length=12)
    batch = next(iter(dm.test_dataloader()))
    assert set(batch) == {"ids", "labels", "input_ids", "attention_mask"}
    assert batch["input_ids"].dtype == batch["attention_mask"].dtype == torch.long
    assert batch["input_ids"].shape == batch["attention_mask"].shape and batch["input_ids"].shape[1] <= 12
    example = dm.examples("dev")[0]
    expected = WhitespaceTokenizer()(example.text_a, example.text_b)[:12]
    assert batch["input_ids"][0, : len(expected)].tolist() == expected
    assert int(batch["attention_mask"][0].sum()) == len(expected)
    short = module(root, "glue-sst2", tokenizer="tasks.glue.data:whitespace_tokenizer", max_length=128)
    batch = next(iter(short.test_dataloader()))
    lengths = batch["attention_mask"].sum(dim=1)
    assert int(lengths.max()) == batch["input_ids"].shape[1] and int(lengths.min()) < batch["input_ids"].shape[1]
    assert (batch["input_ids"][batch["attention_mask"] == 0] == WhitespaceTokenizer.pad_token_id).all()
    first = short.examples("dev")[0].text_a
    assert batch["input_ids"][0, : int(lengths[0])].tolist() == WhitespaceTokenizer()(first)


# --- the training files ------------------------------------------------------------------------------------------


def test_train_files_have_the_real_layouts(root: Path) -> None:
    assert (root / "MNLI" / "train.tsv").read_text().split("\n")[0].split("\t") == list(MNLI_TRAIN_COLUMNS)
    assert len(MNLI_TRAIN_COLUMNS) == 12 and len(LAYOUTS["glue-mnli-m"].columns) == 16
    assert (root / "MRPC" / "train.tsv").read_bytes().startswith(b"\xef\xbb\xbfQuality\t#1 ID")
    cola = tiny_glue_train_lines("cola")
    assert len(cola) == 8 and cola[0].split("\t")[1] in ("0", "1")  # no header row
    for task in LAYOUTS:  # same rows as dev, another order and ids
        assert tiny_glue_train_lines(task) != tiny_glue_lines(task)
    again = write_tiny_glue_split(root / "again", "qqp")
    assert again.read_bytes() == (root / "QQP" / "train.tsv").read_bytes()


def test_malformed_training_rows_are_skipped_with_a_warning(tmp_path: Path) -> None:
    data = copy_task(tmp_path, "qqp")
    first, second = "402599\t303357\t303358\tWhat happened to the", "ferry ?\tWhy is the pier empty ?\t0"
    lines(data / "QQP" / "train.tsv", (5, first), (6, second))  # a question cut by a line break, as in QQP.zip
    dm = GlueDataModule(data, "glue-qqp")
    with pytest.warns(UserWarning, match=r"QQP/train\.tsv: skipped 2 training row\(s\) without 6 .*lines 5, 6\)"):
        dm.verify()
    assert len(dm.examples("train")) == 6


# --- verify ----------------------------------------------------------------------------------------------------


def test_missing_files_are_named(tmp_path: Path) -> None:
    data = copy_task(tmp_path, MNLI_BOTH)
    (data / "MNLI" / "dev_matched.tsv").unlink()
    GlueDataModule(data, "glue-mnli-mm").verify()  # the mismatched task does not need it
    with pytest.raises(HarnessError, match=r"MNLI/dev_matched\.tsv: file not found"):
        GlueDataModule(data, MNLI_BOTH).verify()
    with pytest.raises(HarnessError, match=r"CoLA/train\.tsv: file not found"):
        GlueDataModule(data, "glue-cola").verify()


def test_malformed_dev_row_names_the_line(tmp_path: Path) -> None:
    data = copy_task(tmp_path, "rte")
    lines(data / "RTE" / "dev.tsv", (4, "2\tonly two fields"))
    with pytest.raises(HarnessError, match=r"RTE/dev\.tsv:4: 2 tab-separated fields, expected 4"):
        GlueDataModule(data, "glue-rte").verify()


def test_unknown_training_label_names_the_line(tmp_path: Path) -> None:
    data = copy_task(tmp_path, "mnli-m")
    path = data / "MNLI" / "train.tsv"
    row = path.read_text().split("\n")[2].split("\t")
    lines(path, (3, "\t".join([*row[:-1], "hidden"])))
    with pytest.raises(HarnessError, match=r"MNLI/train\.tsv:3: label 'hidden' is not one of entailment, neutral"):
        GlueDataModule(data, "glue-mnli-m").verify()


def test_missing_text_column_is_named(tmp_path: Path) -> None:
    data = copy_task(tmp_path, "qnli")
    lines(data / "QNLI" / "train.tsv", (1, "index\tquestion\tpassage\tlabel"))
    with pytest.raises(HarnessError, match=r"QNLI/train\.tsv:1: header has no column 'sentence'"):
        GlueDataModule(data, "glue-qnli").verify()


def test_unknown_task_and_early_loader(root: Path) -> None:
    with pytest.raises(HarnessError, match=r"unknown GLUE task 'glue-sts'"):
        GlueDataModule(root, "glue-sts")
    with pytest.raises(HarnessError, match=r"call setup\(\)"):
        GlueDataModule(root, "glue-rte").train_dataloader()


def test_data_hash_follows_the_files(root: Path, tmp_path: Path) -> None:
    data = copy_task(tmp_path, "wnli")
    before = module(data, "glue-wnli").data_hash
    assert before == module(root, "glue-wnli").data_hash
    lines(data / "WNLI" / "dev.tsv", (2, "0\tA changed sentence .\tAnother one .\t1"))
    assert module(data, "glue-wnli").data_hash != before
