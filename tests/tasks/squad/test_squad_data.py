"""The SQuAD data module on files in the official layout: raw batches, BERT-style windows, verify errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.squad.data import (
    SquadDataModule,
    SquadExample,
    WhitespaceTokenizer,
    featurize,
    read_examples,
    span_text,
    windows,
)
from tasks.squad.fixtures import write_tiny_squad, write_tiny_squad_data, write_tiny_squad_train

TOKENIZER = "tasks.squad.data:whitespace_tokenizer"


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {version: write_tiny_squad_data(tmp_path_factory.mktemp(version), version) for version in ("1.1", "2.0")}


def rewrite(path: Path, edit) -> Path:
    """Apply ``edit`` to the JSON document of ``path`` in place."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    edit(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def first_qa(doc: dict) -> dict:
    return doc["data"][0]["paragraphs"][0]["qas"][0]


# --- raw examples ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "train", "impossible"), [("1.1", 5, 0), ("2.0", 7, 2)])
def test_raw_batches_of_examples(roots: dict[str, Path], version: str, train: int, impossible: int) -> None:
    dm = SquadDataModule(roots[version], version, batch_size=3)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert isinstance(batch, list) and len(batch) == 3 and all(isinstance(e, SquadExample) for e in batch)
    examples = dm.examples("train")
    assert len(examples) == train and sum(e.is_impossible for e in examples) == impossible
    assert all(len(e.answers) == (0 if e.is_impossible else 1) for e in examples)  # the train layout: one answer
    assert all(e.context[s : s + len(t)] == t for e in dm.examples("dev") for t, s in e.answers)
    dev = [e for batch in dm.test_dataloader() for e in batch]
    assert [e.qid for e in dev] == [e.qid for e in dm.examples("dev")]
    assert not {e.qid for e in dev} & {e.qid for e in examples}  # training ids are other ids
    assert len(dm.data_hash) == 64
    assert SquadDataModule(roots[version], float(version)).version == version  # a YAML number works too


# --- windows -----------------------------------------------------------------------------------------------------


def test_windows_follow_bert_doc_spans() -> None:
    assert windows(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert windows(10, 4, 6) == [(0, 4), (4, 4), (8, 2)]  # a stride beyond the window skips no token
    assert windows(4, 4, 2) == [(0, 4)] and windows(0, 4, 2) == [(0, 0)]


def example(answer: str | None, impossible: bool = False) -> SquadExample:
    context = " ".join(f"w{i}" for i in range(12))  # tokens w0 ... w11, one per word
    answers = () if answer is None else ((answer, context.index(answer)),)
    return SquadExample("q1", "which word", context, answers, impossible)


def spans(features, context: str) -> list[tuple[int, int, str]]:
    return [
        (f.start_position, f.end_position, span_text(context, f.offsets, f.start_position, f.end_position))
        for f in features
    ]


def test_answer_at_a_window_boundary() -> None:
    # head [CLS] which word [SEP] = 4 tokens; max_length 9 leaves windows of 4 context tokens, starting every 2
    tokenizer = WhitespaceTokenizer()
    features = featurize(example("w3 w4"), 0, tokenizer, max_length=9, doc_stride=2, max_query_length=64)
    assert [len(f.input_ids) for f in features] == [9] * 5  # windows at tokens 0, 2, 4, 6, 8
    # w3 w4 straddles windows 0 (w0-w3) and 2 (w4-w7); only window 1 (w2-w5) holds it whole
    assert spans(features, example("w3 w4").context) == [
        (0, 0, ""),
        (5, 6, "w3 w4"),
        (0, 0, ""),
        (0, 0, ""),
        (0, 0, ""),
    ]
    # w3 alone: the last token of window 0, the second-to-last of window 1
    last = featurize(example("w3"), 0, tokenizer, max_length=9, doc_stride=2, max_query_length=64)
    assert spans(last, example("w3").context)[:3] == [(7, 7, "w3"), (5, 5, "w3"), (0, 0, "")]
    assert last[0].token_type_ids == [0] * 4 + [1] * 5 and last[0].offsets[:4] == [(-1, -1)] * 4
    assert last[0].input_ids[0] == tokenizer.cls_token_id and last[0].input_ids[-1] == tokenizer.sep_token_id


def test_no_answer_points_every_window_at_cls() -> None:
    features = featurize(example(None, impossible=True), 3, WhitespaceTokenizer(), 9, 2, 64)
    assert len(features) == 5 and all(f.start_position == f.end_position == 0 for f in features)
    assert all(f.example_index == 3 for f in features)
    assert span_text(example(None).context, features[0].offsets, 0, 0) == ""


def test_question_is_cut_to_max_query_length() -> None:
    long = example("w0")._replace(question="a b c d e f")
    features = featurize(long, 0, WhitespaceTokenizer(), max_length=10, doc_stride=3, max_query_length=2)
    assert features[0].token_type_ids.count(0) == 4 and features[0].start_position == 4  # [CLS] a b [SEP] w0


@pytest.mark.parametrize("version", ["1.1", "2.0"])
def test_tokenized_batches(roots: dict[str, Path], version: str) -> None:
    dm = SquadDataModule(
        roots[version], version, tokenizer=TOKENIZER, max_length=24, doc_stride=4, batch_size=64, max_query_length=8
    )
    dm.setup()
    batch = next(iter(dm.test_dataloader()))
    n, width = batch["input_ids"].shape
    assert n == len(dm.features("dev")) > len(dm.examples("dev")) and width <= 24
    for key in ("attention_mask", "token_type_ids"):
        assert batch[key].shape == (n, width) and batch[key].dtype == torch.long
    assert batch["offsets"].shape == (n, width, 2)
    examples = dm.examples("dev")
    found = {}
    for row in range(n):
        e = examples[int(batch["example_index"][row])]
        assert batch["qids"][row] == e.qid
        start, end = int(batch["start_positions"][row]), int(batch["end_positions"][row])
        text = span_text(e.context, batch["offsets"][row].tolist(), start, end)
        found.setdefault(e.qid, set()).add(text)
        assert text == "" or e.answers[0][0] in text  # whitespace tokens may carry a comma or a full stop
    for e in examples:  # every answer lies whole in some window; unanswerable questions never do
        assert (found[e.qid] == {""}) == e.is_impossible


# --- verify ------------------------------------------------------------------------------------------------------


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    return write_tiny_squad_data(tmp_path / "squad", "2.0")


def test_missing_file_is_named(tmp_path: Path) -> None:
    write_tiny_squad(tmp_path, "1.1")
    with pytest.raises(HarnessError, match=r"train-v1\.1\.json: SQuAD data file not found"):
        SquadDataModule(tmp_path, "1.1").verify()
    write_tiny_squad_train(tmp_path, "2.0")
    with pytest.raises(HarnessError, match=r"dev-v2\.0\.json: SQuAD data file not found"):
        SquadDataModule(tmp_path, "2.0").verify()


def test_invalid_json_names_the_line(v2: Path) -> None:
    path = v2 / "train-v2.0.json"
    path.write_text(path.read_text().replace('"qas": [', '"qas" [', 1))
    with pytest.raises(HarnessError, match=r"train-v2\.0\.json:\d+:\d+: invalid JSON in SQuAD data"):
        SquadDataModule(v2, "2.0").verify()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: first_qa(d)["answers"][0].update(answer_start="44"), r"qas\[0\]\.answers\[0\]\.answer_start must"),
        (lambda d: d["data"][0]["paragraphs"][0].pop("context"), r"data\[0\]\.paragraphs\[0\] has no 'context'"),
        (lambda d: first_qa(d).pop("question"), r"data\[0\]\.paragraphs\[0\]\.qas\[0\] has no 'question'"),
        (lambda d: first_qa(d).update(id=7), r"qas\[0\]\.id must be a string, found a number"),
        (lambda d: first_qa(d).update(is_impossible="no"), r"qas\[0\]\.is_impossible must be a boolean"),
        (lambda d: first_qa(d).update(is_impossible=True), r"qas\[0\] \(id '\w+'\) is_impossible but has answers"),
        (lambda d: first_qa(d).update(answers=[]), r"qas\[0\] \(id '\w+'\) has no answer but is not is_impossible"),
        (
            lambda d: d["data"][1]["paragraphs"][0]["qas"][0].update(id=first_qa(d)["id"]),
            r"data\[1\]\.paragraphs\[0\]\.qas\[0\]: question id '\w+' already used at data\[0\]",
        ),
    ],
    ids=["answer_start", "context", "question", "id", "is_impossible", "impossible", "answerable", "duplicate"],
)
def test_structure_errors_name_the_json_path(v2: Path, edit, message: str) -> None:
    rewrite(v2 / "dev-v2.0.json", edit)
    with pytest.raises(HarnessError, match=r"dev-v2\.0\.json: (.*\.)?" + message):
        SquadDataModule(v2, "2.0").verify()


def test_v1_question_without_answer(tmp_path: Path) -> None:
    data = write_tiny_squad_data(tmp_path, "1.1")
    rewrite(data / "train-v1.1.json", lambda d: first_qa(d).update(answers=[]))
    with pytest.raises(HarnessError, match=r"qas\[0\] \(id '\w+'\) has no answer; every SQuAD v1\.1 question"):
        SquadDataModule(data, "1.1").verify()


def test_misaligned_answers_warn_with_a_count(v2: Path) -> None:
    def shift(doc: dict) -> None:
        first_qa(doc)["answers"][0]["answer_start"] += 1
        doc["data"][1]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 10**6

    rewrite(v2 / "train-v2.0.json", shift)
    dm = SquadDataModule(v2, "2.0")
    with pytest.warns(
        UserWarning,
        match=r"train-v2\.0\.json: 2 answer\(s\) of 7 questions do not match .*"
        r"data\[0\]\.paragraphs\[0\]\.qas\[0\]\.answers\[0\], data\[1\]",
    ):
        dm.verify()
    assert dm.examples("train")[0].answers[0] == ("1642", 45)  # used as given
    examples, misaligned = read_examples(v2 / "dev-v2.0.json", "2.0")
    assert len(examples) == 7 and misaligned == []


def test_bad_settings(roots: dict[str, Path]) -> None:
    with pytest.raises(HarnessError, match=r"SQuAD version must be '1\.1' or '2\.0', not '3\.0'"):
        SquadDataModule(roots["1.1"], "3.0")
    with pytest.raises(HarnessError, match=r"max_length 66 leaves no context token"):
        SquadDataModule(roots["1.1"], max_length=66, max_query_length=64)
    with pytest.raises(HarnessError, match=r"has no cls_token_id, sep_token_id attribute"):
        SquadDataModule(roots["1.1"], tokenizer="builtins:object").setup()
    with pytest.raises(HarnessError, match=r"call setup\(\)"):
        SquadDataModule(roots["1.1"]).test_dataloader()
