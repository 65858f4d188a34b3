"""The CoNLL-2012 data module on the tiny tree in the *_gold_conll layout, the metrics, and ``harness score``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.conll2012 import COREF_KEYS, SRL_KEYS
from tasks.conll2012.data import Conll2012DataModule, bio_phrases, bio_tags
from tasks.conll2012.fixtures import example, split_folder, write_tiny_conll2012
from tasks.conll2012.metric import CorefMetric, SrlMetric
from tasks.conll2012.score import score_coref, score_srl
from tests.conftest import harness_cli


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_conll2012(tmp_path_factory.mktemp("conll2012"))


def test_srl_sentences_hold_the_bracketed_phrases_and_their_predicates(root: Path) -> None:
    data = Conll2012DataModule(root, task="srl")
    data.setup()
    first, second = data.items("test")[:2]
    assert first.id == "(nw/tiny/00/tiny_0001); part 000:0" and first.words[3] == "said"
    assert [position for position, _ in first.frames] == [3, 6]
    assert first.frames[1][1] == (("ARG0", 4, 4), ("ARGM-MOD", 5, 5), ("V", 6, 6), ("ARG1", 7, 9))
    assert ("R-ARG1", 3, 3) in second.frames[0][1]
    assert len(data.items("train")) == 5 and len(data.items("development")) == 2 and len(data.data_hash) == 64


def test_bio_tags_round_trip_the_phrases_of_every_predicate(root: Path) -> None:
    data = Conll2012DataModule(root, task="srl")
    for sentence in data.items("train"):
        for _, phrases in sentence.frames:
            assert bio_phrases(bio_tags(phrases, len(sentence.words))) == sorted(phrases, key=lambda p: p[1])
    assert bio_tags((("ARG1", 0, 1), ("V", 2, 2)), 4) == ["B-ARG1", "I-ARG1", "B-V", "O"]
    assert bio_phrases(["I-ARG0", "I-ARG1", "O", "B-V", "I-ARG0"]) == [
        ("ARG0", 0, 0),
        ("ARG1", 1, 1),
        ("V", 3, 3),
        ("ARG0", 4, 4),
    ]
    with pytest.raises(ValueError, match="overlaps"):
        bio_tags((("ARG1", 0, 2), ("ARG2", 1, 1)), 3)


def test_coref_documents_hold_nested_mentions_by_document_position(root: Path) -> None:
    data = Conll2012DataModule(root, task="coref", batch_size=1)
    data.setup()
    anna = data.items("test")[1]
    assert anna.sentences[1][0] == "She"
    assert anna.clusters == (((0, 1), (3, 3), (6, 6)), ((3, 4),), ((8, 12),))
    assert [len(batch) for batch in data.test_dataloader()] == [1, 1]
    scoring = data.scoring(0, root)
    assert scoring.task == "coref-conll2012" and scoring.references == split_folder(root, "test")
    assert scoring.ids == ["(nw/tiny/00/tiny_0001); part 000", "(nw/tiny/00/tiny_0002); part 000"]


def test_a_key_column_without_its_predicate_is_named(tmp_path: Path) -> None:
    root = write_tiny_conll2012(tmp_path)
    path = split_folder(root, "development") / "nw/tiny/00/tiny_0002.v4_gold_conll"
    path.write_text(path.read_text().replace("(V*)", "*", 1))
    with pytest.raises(HarnessError, match=r"tiny_0002.v4_gold_conll:2: predicate-argument column 12 has no V"):
        Conll2012DataModule(root, task="srl").items("development")


def test_the_metrics_score_perfect_predictions_100_and_write_them(root: Path, tmp_path: Path) -> None:
    for task, metric, scorer in (("srl", SrlMetric(), score_srl), ("coref", CorefMetric(), score_coref)):
        data = Conll2012DataModule(root, task=task)
        items = data.items("test")
        gold = [dict(item.frames) if task == "srl" else item.clusters for item in items]
        metric.update(gold, gold)
        assert float(metric.compute()["f1"]) == pytest.approx(100.0)
        written = metric.write_predictions(tmp_path, data.scoring(0, tmp_path))["predictions"]
        assert scorer(split_folder(root, "test"), written)["f1"] == pytest.approx(100.0)


def test_a_missing_prediction_is_an_error_naming_the_item(root: Path, tmp_path: Path) -> None:
    data = Conll2012DataModule(root, task="coref")
    metric = CorefMetric()
    item = data.items("test")[1]
    metric.update([item.clusters], [item.clusters], ids=[item.id])
    with pytest.raises(
        HarnessError, match=r"no prediction for 1 of 2 items .* e.g. '\(nw/tiny/00/tiny_0001\); part 000'"
    ):
        metric.write_predictions(tmp_path, data.scoring(0, tmp_path))


@pytest.mark.parametrize(("task", "keys"), [("srl-conll2012", SRL_KEYS), ("coref-conll2012", COREF_KEYS)])
def test_harness_score_gives_the_task_keys_and_one_line_errors(task: str, keys: tuple, tmp_path: Path) -> None:
    files = example(tmp_path, task)
    args = ("score", task, "--references", str(files["references"]), "--predictions", str(files["predictions"]))
    done = harness_cli(*args, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == set(keys)
    lines = files["predictions"].read_text().splitlines()
    files["predictions"].write_text("\n".join(lines[: len(lines) // 2]) + "\n")  # cut after a whole row
    done = harness_cli(*args, cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.strip().count("\n") == 0
    assert "response_conll: document '(nw/tiny/00/tiny_0001); part 000' (line 19) has no '#end document'" in done.stderr
