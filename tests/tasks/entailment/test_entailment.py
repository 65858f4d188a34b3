"""SNLI and SciTail read from their distributed files: '-' gold labels dropped, the fixed label sets, pair batches,
scoring of written predictions and every malformed-file error (tasks.entailment, tasks.text_data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.entailment import SCITAIL_LABELS, SNLI_LABELS
from tasks.entailment.data import read_scitail, read_snli
from tasks.entailment.fixtures import write_tiny_scitail, write_tiny_snli
from tasks.entailment.score import score_scitail, score_snli
from tasks.text_data import AnswerAccuracy, TextTaskDataModule


@pytest.fixture(scope="module")
def snli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_snli(tmp_path_factory.mktemp("snli") / "root")


@pytest.fixture(scope="module")
def scitail(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_scitail(tmp_path_factory.mktemp("scitail") / "root")


def test_snli_drops_pairs_without_a_gold_label(snli: Path) -> None:
    path = snli / "snli_1.0" / "snli_1.0_test.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    records = read_snli(path)
    assert len(rows) == 5 and [row["gold_label"] for row in rows].count("-") == 1 and len(records) == 4
    kept = [row for row in rows if row["gold_label"] != "-"]
    assert [r.id for r in records] == [row["pairID"] for row in kept]
    assert [SNLI_LABELS[r.label] for r in records] == [row["gold_label"] for row in kept]
    assert records[0].fields == (kept[0]["sentence1"], kept[0]["sentence2"])
    assert SNLI_LABELS == ("entailment", "neutral", "contradiction")


def test_scitail_ids_are_line_numbers_and_quotes_are_text(scitail: Path) -> None:
    path = scitail / "SciTailV1.1" / "tsv_format" / "scitail_1.0_train.tsv"
    records = read_scitail(path)
    assert [r.id for r in records] == [str(n) for n in range(10)]
    assert '"quoted"' in records[0].fields[0] and SCITAIL_LABELS[records[0].label] == "entails"
    assert SCITAIL_LABELS == ("entails", "neutral")


@pytest.mark.parametrize("task", ["snli", "scitail"])
def test_pair_batches_raw_or_through_a_pair_tokenizer(task: str, snli: Path, scitail: Path) -> None:
    root = snli if task == "snli" else scitail
    module = TextTaskDataModule(task, root, batch_size=3)
    module.setup()
    fields, labels = next(iter(module.val_dataloader()))
    assert set(fields) == {"premise", "hypothesis"} and len(fields["premise"]) == 3 and labels.dtype == torch.long
    assert len(module.data_hash) == 64 and module.num_classes == (3 if task == "snli" else 2)

    def pair_lengths(premises: list[str], hypotheses: list[str]) -> torch.Tensor:
        return torch.tensor([len(p.split()) + len(h.split()) for p, h in zip(premises, hypotheses, strict=True)])

    tokenized = TextTaskDataModule(task, root, batch_size=3, tokenizer=pair_lengths)
    tokenized.setup()
    lengths, _ = next(iter(tokenized.val_dataloader()))
    assert lengths.tolist() == [len(p.split()) + len(h.split()) for p, h in zip(*fields.values(), strict=True)]


@pytest.mark.parametrize("task", ["snli", "scitail"])
def test_written_predictions_score_to_the_hand_count(task: str, snli: Path, scitail: Path, tmp_path: Path) -> None:
    """4 test pairs, the first predicted wrong: 3 of 4, 75 %."""
    module = TextTaskDataModule(task, snli if task == "snli" else scitail, batch_size=2)
    module.setup()
    metric = AnswerAccuracy()
    for index, (_, labels) in enumerate(module.test_dataloader()):
        guesses = labels.clone()
        if index == 0:
            guesses[0] = (guesses[0] + 1) % module.num_classes
        metric.update(guesses, labels)
    scoring = module.scoring(0, tmp_path)
    written = metric.write_predictions(tmp_path, scoring)
    scorer = score_snli if task == "snli" else score_scitail
    assert float(metric.compute()["accuracy"]) == 75.0
    assert scorer(scoring.references, written["predictions"]) == {"accuracy": 75.0}
    assert scorer(scoring.references.parent, written["predictions"]) == {"accuracy": 75.0}


def test_dev_and_test_loaders_each_score_against_their_own_file(snli: Path, tmp_path: Path) -> None:
    """``test_splits=[dev, test]``: two test loaders, each scored against its split's file (all right: 100 %)."""
    module = TextTaskDataModule("snli", snli, batch_size=2, test_splits=["dev", "test"])
    module.setup()
    loaders = module.test_dataloader()
    assert len(loaders) == 2 and "snli_1.0_dev.jsonl" in [p.name for p in snli.rglob("*.jsonl")]
    for index, (loader, split) in enumerate(zip(loaders, ("dev", "test"), strict=True)):
        metric = AnswerAccuracy()
        for _, labels in loader:
            metric.update(labels, labels)
        scoring = module.scoring(index, tmp_path / split)
        assert scoring.references.name == f"snli_1.0_{split}.jsonl"
        assert scoring.ids == [r.id for r in module.records(split)]
        written = metric.write_predictions(tmp_path / split, scoring)
        assert score_snli(scoring.references, written["predictions"]) == {"accuracy": 100.0}
    single = TextTaskDataModule("snli", snli)
    single.setup()
    assert not isinstance(single.test_dataloader(), list)  # one split: one loader, as before


def test_snli_predictions_for_dropped_pairs_are_unknown_ids(snli: Path, tmp_path: Path) -> None:
    path = snli / "snli_1.0" / "snli_1.0_test.jsonl"
    dropped = next(json.loads(line)["pairID"] for line in path.read_text().splitlines() if '"-"' in line)
    rows = [f"{r.id},{SNLI_LABELS[r.label]}" for r in read_snli(path)] + [f"{dropped},neutral"]
    (tmp_path / "p.csv").write_text("id,prediction\n" + "\n".join(rows) + "\n")
    with pytest.raises(HarnessError, match=rf"p\.csv:6: id '{dropped}' is not an example"):
        score_snli(path, tmp_path / "p.csv")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"x\.jsonl:2: not a JSON object"),
        ('["a list"]', r"x\.jsonl:2: not a JSON object"),
        ('{"pairID": "p", "sentence1": "s", "gold_label": "neutral"}', r"x\.jsonl:2: field 'sentence2': missing"),
        (
            '{"pairID": "p", "sentence1": "s", "sentence2": "t", "gold_label": "maybe"}',
            r"x\.jsonl:2: field 'gold_label': 'maybe'",
        ),
        (
            '{"pairID": "a", "sentence1": "s", "sentence2": "t", "gold_label": "neutral"}',
            r"x\.jsonl: id 'a' appears twice",
        ),
    ],
)
def test_malformed_snli_lines_are_named(tmp_path: Path, line: str, message: str) -> None:
    good = '{"pairID": "a", "sentence1": "s", "sentence2": "t", "gold_label": "entailment"}'
    (tmp_path / "x.jsonl").write_text(good + "\n" + line + "\n")
    with pytest.raises(HarnessError, match=message):
        read_snli(tmp_path / "x.jsonl")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("premise only\tentails", r"x\.tsv:2: 2 tab-separated fields, expected 3"),
        ("p\th\tcontradiction", r"x\.tsv:2: field 'label': 'contradiction' is not one of entails, neutral"),
    ],
)
def test_malformed_scitail_lines_are_named(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / "x.tsv").write_text("p\th\tneutral\n" + line + "\n")
    with pytest.raises(HarnessError, match=message):
        read_scitail(tmp_path / "x.tsv")


def test_missing_split_files_name_the_layout(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"snli_1\.0_dev\.jsonl: missing \(the SNLI 1\.0 layout"):
        TextTaskDataModule("snli", tmp_path).records("dev")
    with pytest.raises(HarnessError, match=r"scitail_1\.0_test\.tsv: missing \(the SciTail layout"):
        score_scitail(tmp_path, tmp_path / "p.csv")
    with pytest.raises(HarnessError, match="call setup"):
        TextTaskDataModule("snli", tmp_path).train_dataloader()


def test_a_shared_tokenizer_lays_out_premise_and_hypothesis_as_a_pair(snli: Path) -> None:
    from tasks.tokenizers.words import WhitespaceTokenizer

    tokenizer = WhitespaceTokenizer()
    module = TextTaskDataModule("snli", snli, batch_size=2, tokenizer=tokenizer)
    module.setup()
    encoded, _ = next(iter(module.val_dataloader()))
    first = module.records("dev")[0].fields
    ids = encoded["input_ids"][0][encoded["attention_mask"][0].bool()].tolist()
    words = [tokenizer.word_id(w) for w in first[0].split()], [tokenizer.word_id(w) for w in first[1].split()]
    assert ids == [1, *words[0], 2, *words[1], 2]  # [CLS] premise [SEP] hypothesis [SEP]
    assert encoded["token_type_ids"][0][: len(words[0]) + 2].tolist() == [0] * (len(words[0]) + 2)


def test_a_stored_tokenizer_is_loaded_by_its_path(snli: Path, tmp_path: Path) -> None:
    from tasks.tokenizers import save_tokenizer
    from tasks.tokenizers.words import WhitespaceTokenizer

    path = save_tokenizer(WhitespaceTokenizer(), tmp_path)
    module = TextTaskDataModule("snli", snli, batch_size=2, tokenizer=str(path))
    module.setup()
    encoded, _ = next(iter(module.val_dataloader()))
    assert set(encoded) == {"input_ids", "attention_mask", "token_type_ids", "offsets"}
