"""Golden tests of the SQuAD scorers: hand-computed values under the official scripts' rules."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.registry import load_object
from tasks.squad import SQUAD_V1_1, SQUAD_V2_0, V2_0_KEYS, V2_0_NA_PROB_KEYS
from tasks.squad.fixtures import tiny_squad, write_tiny_squad
from tasks.squad.score import (
    exact_match_score,
    f1_score_v1,
    f1_score_v2,
    find_best_threshold,
    normalize_answer,
    question_scores_v2,
    read_references,
    score_v1,
    score_v2,
)


def squad_file(path: Path, questions: list[tuple[str, list[str]]], version: str = "1.1") -> Path:
    """A references file in the official layout with one paragraph holding ``(id, gold answers)`` questions."""
    qas = [
        {"question": "?", "id": qid, "answers": [{"text": t, "answer_start": 0} for t in golds]}
        for qid, golds in questions
    ]
    doc = {"version": version, "data": [{"title": "T", "paragraphs": [{"context": "c", "qas": qas}]}]}
    path.write_text(json.dumps(doc))
    return path


def json_file(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


# --- normalisation and per-question scores ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Cat", "cat"),
        ("  A  quick, brown-fox! ", "quick brownfox"),  # punctuation goes before articles: "brown-fox" -> "brownfox"
        ("theatre and an anthem", "theatre and anthem"),  # articles only as whole words
        ("Denver Broncos.", "denver broncos"),
        ("a the an", ""),
        ("", ""),
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_exact_match_ignores_case_articles_punctuation() -> None:
    assert exact_match_score("The Cat", "cat") == 1
    assert exact_match_score("the cat.", "A cat") == 1
    assert exact_match_score("cats", "cat") == 0


def test_f1_partial_overlap_by_hand() -> None:
    # "cat sat on mat" vs "cat on mat": 3 shared tokens, P = 3/4, R = 3/3 -> F1 = 2 * 0.75 / 1.75 = 6/7
    assert f1_score_v1("the cat sat on the mat", "a cat on a mat") == pytest.approx(6 / 7)
    # multiset overlap: "red red blue" vs "red blue blue" share one red and one blue -> P = R = 2/3
    assert f1_score_v1("red red blue", "red blue blue") == pytest.approx(2 / 3)
    assert f1_score_v1("dog", "cat") == 0


def test_f1_empty_answers_differ_between_versions() -> None:
    assert f1_score_v1("", "") == 0  # v1.1: no shared token -> 0
    assert f1_score_v2("", "") == 1.0  # v2.0: both empty agree
    assert f1_score_v2("the", "") == 1.0  # "the" normalises to nothing
    assert f1_score_v2("Broncos", "") == 0.0


def test_v2_drops_gold_answers_that_normalise_to_nothing() -> None:
    assert question_scores_v2("", ["the", "."]) == (1, 1.0)  # no gold left -> the gold answer is ""
    assert question_scores_v2("Broncos", ["the", "Broncos"]) == (1, 1.0)


# --- v1.1 file scoring -------------------------------------------------------------------------------------------


def test_score_v1_golden_with_missing_prediction(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["The Cat", "a cat"]), ("q2", ["a cat on a mat"]), ("q3", ["x"])])
    preds = json_file(tmp_path / "pred.json", {"q1": "cat", "q2": "the cat sat on the mat"})
    with pytest.warns(UserWarning, match="1 of 3 questions have no prediction"):
        result = score_v1(refs, preds)
    # q1: EM 1, F1 1; q2: EM 0, F1 6/7; q3: unanswered, 0 -- but still in the denominator
    assert result == pytest.approx({"exact_match": 100 / 3, "f1": 100 * (1 + 6 / 7) / 3})
    assert list(result) == list(SQUAD_V1_1.keys)


def test_score_v1_warns_and_ignores_unknown_ids_and_other_versions(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["cat"])], version="2.0")
    preds = json_file(tmp_path / "pred.json", {"q1": "cat", "zz": "dog"})
    with pytest.warns(UserWarning) as caught:
        result = score_v1(refs, preds)
    messages = " | ".join(str(w.message) for w in caught)
    assert "expects version '1.1'" in messages and "'zz'" in messages
    assert result == {"exact_match": 100.0, "f1": 100.0}


def test_score_v1_rejects_questions_without_answers(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["cat"]), ("q2", [])])
    preds = json_file(tmp_path / "pred.json", {"q1": "cat", "q2": ""})
    with pytest.raises(HarnessError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[1\] \(id 'q2'\) has no gold answer"):
        score_v1(refs, preds)


def test_fixture_perfect_predictions_score_100(tmp_path: Path) -> None:
    for version, scorer in (("1.1", score_v1), ("2.0", score_v2)):
        refs = write_tiny_squad(tmp_path, version)
        golds = {q.qid: (q.answers[0] if q.answers else "") for q in read_references(refs)[1]}
        preds = json_file(tmp_path / f"pred-{version}.json", golds)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = scorer(refs, preds)
        assert all(result[key] == 100.0 for key in result if not key.endswith("total"))


def test_fixture_is_deterministic_and_official_layout(tmp_path: Path) -> None:
    first = write_tiny_squad(tmp_path / "a", "2.0").read_bytes()
    assert first == write_tiny_squad(tmp_path / "b", "v2.0").read_bytes()
    doc = tiny_squad("2.0")
    assert doc["version"] == "v2.0" and tiny_squad("1.1")["version"] == "1.1"
    paragraph = doc["data"][0]["paragraphs"][0]
    for qa in paragraph["qas"]:
        assert set(qa) >= {"question", "id", "answers", "is_impossible"}
        for answer in qa["answers"] + qa.get("plausible_answers", []):
            assert paragraph["context"][answer["answer_start"] :].startswith(answer["text"])
    assert not any(qa["answers"] == [] for a in tiny_squad("1.1")["data"] for p in a["paragraphs"] for qa in p["qas"])


# --- v2.0 file scoring -------------------------------------------------------------------------------------------

V2_QUESTIONS = [
    ("a", ["Denver Broncos", "Broncos"]),
    ("b", ["Santa Clara, California"]),
    ("c", []),  # unanswerable
    ("d", []),  # unanswerable
]
V2_PREDICTIONS = {"a": "the Broncos", "b": "Santa Clara", "c": "", "d": "Levi's Stadium"}
# a: EM 1, F1 1.  b: "santa clara" vs "santa clara california": P = 1, R = 2/3 -> F1 0.8, EM 0.
# c: "" vs no answer -> 1, 1.  d: an answer to an unanswerable question -> 0, 0.
V2_BASE = {
    "exact": 50.0,
    "f1": 70.0,
    "total": 4,
    "HasAns_exact": 50.0,
    "HasAns_f1": 90.0,
    "HasAns_total": 2,
    "NoAns_exact": 50.0,
    "NoAns_f1": 50.0,
    "NoAns_total": 2,
}
NA_PROBS = {"a": 0.1, "b": 0.2, "d": 0.3, "c": 0.9}


@pytest.fixture
def v2_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    refs = squad_file(tmp_path / "dev.json", V2_QUESTIONS, version="v2.0")
    return refs, json_file(tmp_path / "pred.json", V2_PREDICTIONS), json_file(tmp_path / "na.json", NA_PROBS)


def test_score_v2_golden(v2_files: tuple[Path, Path, Path]) -> None:
    refs, preds, _ = v2_files
    result = score_v2(refs, preds)
    assert result == pytest.approx(V2_BASE)
    assert tuple(result) == V2_0_KEYS == SQUAD_V2_0.keys


def test_score_v2_best_threshold_by_hand(v2_files: tuple[Path, Path, Path]) -> None:
    refs, preds, na_probs = v2_files
    result = score_v2(refs, preds, na_probs=na_probs)
    # Walk by na_prob, starting from 2 (both unanswerable right when everything is "no answer"):
    #   exact: a +1 -> 3 (best, 0.1); b +0 -> 3; d -1 (non-empty answer) -> 2; c +0 -> 2   => 3/4, threshold 0.1
    #   f1:    a +1 -> 3 (0.1);       b +0.8 -> 3.8 (best, 0.2); d -1 -> 2.8; c -> 2.8    => 3.8/4, threshold 0.2
    expected = {**V2_BASE, "best_exact": 75.0, "best_exact_thresh": 0.1, "best_f1": 95.0, "best_f1_thresh": 0.2}
    assert result == pytest.approx(expected)
    assert tuple(result) == V2_0_KEYS + V2_0_NA_PROB_KEYS


def test_score_v2_threshold_turns_answers_into_no_answer(v2_files: tuple[Path, Path, Path]) -> None:
    refs, preds, na_probs = v2_files
    # threshold 0.25: d (0.3) and c (0.9) become "no answer", both unanswerable -> 1 each; a, b keep their scores
    result = score_v2(refs, preds, na_probs=na_probs, na_prob_thresh=0.25)
    assert result["exact"] == pytest.approx(75.0) and result["f1"] == pytest.approx(95.0)
    assert result["NoAns_exact"] == 100.0 and result["HasAns_f1"] == pytest.approx(90.0)


def test_best_threshold_uses_the_raw_prediction_string() -> None:
    # "the" normalises to "" so it scores 1 on an unanswerable question, yet the official search charges it -1
    best, threshold = find_best_threshold({"q": "the"}, {"q": 1.0}, {"q": 0.5}, {"q": False})
    assert (best, threshold) == (100.0, 0.0)


def test_score_v2_missing_prediction_is_an_error(v2_files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    refs, _, _ = v2_files
    preds = json_file(tmp_path / "partial.json", {"a": "Broncos", "b": "", "c": ""})
    with pytest.raises(HarnessError, match=r"partial\.json: no prediction for 1 question\(s\): 'd'"):
        score_v2(refs, preds)


def test_score_v2_na_probs_must_cover_every_question(v2_files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    refs, preds, _ = v2_files
    na_probs = json_file(tmp_path / "na.json", {"a": 0.1, "b": 0.2, "c": 0.3})
    with pytest.raises(HarnessError, match="no no-answer probability for 1 question"):
        score_v2(refs, preds, na_probs=na_probs)


def test_score_v2_leaves_out_empty_subsets(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("a", ["Broncos"])])
    result = score_v2(refs, json_file(tmp_path / "p.json", {"a": "Broncos"}))
    assert result == {
        "exact": 100.0,
        "f1": 100.0,
        "total": 1,
        "HasAns_exact": 100.0,
        "HasAns_f1": 100.0,
        "HasAns_total": 1,
    }


def test_scorers_are_reachable_from_the_tasks() -> None:
    assert load_object(SQUAD_V1_1.score) is score_v1
    assert load_object(SQUAD_V2_0.score) is score_v2
    assert SQUAD_V2_0.options == ("na_probs",)


# --- bad input ---------------------------------------------------------------------------------------------------


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["cat"])])
    bad = tmp_path / "pred.json"
    bad.write_text('{\n  "q1": "cat",\n  "q2": \n}')
    with pytest.raises(HarnessError, match=r"pred\.json:4:1: invalid JSON"):
        score_v1(refs, bad)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], r"the top level must be an object"),
        ({"version": "1.1"}, r"the top level has no 'data' field"),
        ({"data": [{"title": "T"}]}, r"data\[0\] has no 'paragraphs' field"),
        (
            {"data": [{"paragraphs": [{"qas": [{"id": 7, "answers": []}]}]}]},
            r"qas\[0\]\.id must be a string, found a number",
        ),
        (
            {"data": [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": None}]}]}]}]},
            r"answers\[0\]\.text must be a string",
        ),
    ],
)
def test_wrong_reference_structure_names_the_json_path(tmp_path: Path, doc: object, message: str) -> None:
    preds = json_file(tmp_path / "pred.json", {})
    with pytest.raises(HarnessError, match=message):
        score_v1(json_file(tmp_path / "dev.json", doc), preds)


def test_duplicate_question_ids_are_rejected(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["cat"]), ("q1", ["dog"])])
    with pytest.raises(
        HarnessError, match=r"qas\[1\]: question id 'q1' already used at data\[0\]\.paragraphs\[0\]\.qas\[0\]"
    ):
        read_references(refs)


@pytest.mark.parametrize("preds", [["cat"], {"q1": 3}, {"q1": None}])
def test_bad_predictions_are_rejected(tmp_path: Path, preds: object) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["cat"])])
    with pytest.raises(
        HarnessError, match=r"pred\.json: (the top level must be an object|the prediction for question id 'q1')"
    ):
        score_v2(refs, json_file(tmp_path / "pred.json", preds))


def test_missing_file_is_named(tmp_path: Path) -> None:
    refs = squad_file(tmp_path / "dev.json", [("q1", ["cat"])])
    with pytest.raises(HarnessError, match=r"nope\.json: SQuAD predictions file not found"):
        score_v1(refs, tmp_path / "nope.json")


# --- the torchmetrics metric agrees with the scorer --------------------------------------------------------------


def test_metric_agrees_with_score_v1(tmp_path: Path) -> None:
    from tasks.squad.metric import SquadMetric

    questions = [("q1", ["The Cat", "a cat"]), ("q2", ["a cat on a mat"]), ("q3", ["red blue blue"])]
    preds = {"q1": "cat", "q2": "the cat sat on the mat", "q3": "red red blue"}
    expected = score_v1(squad_file(tmp_path / "dev.json", questions), json_file(tmp_path / "p.json", preds))
    metric = SquadMetric("1.1")
    metric.update([preds["q1"], preds["q2"]], [questions[0][1], questions[1][1]])  # two batches
    metric.update([preds["q3"]], [questions[2][1]])
    assert {k: v.item() for k, v in metric.compute().items()} == pytest.approx(expected)


def test_metric_agrees_with_score_v2(v2_files: tuple[Path, Path, Path]) -> None:
    from tasks.squad.metric import SquadMetric

    refs, preds, _ = v2_files
    expected = score_v2(refs, preds)
    metric = SquadMetric("v2.0")
    for qid, golds in V2_QUESTIONS:
        metric.update([V2_PREDICTIONS[qid]], [golds])
    result = metric.compute()
    assert result["exact_match"].item() == pytest.approx(expected["exact"])
    assert result["f1"].item() == pytest.approx(expected["f1"])
