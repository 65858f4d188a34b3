"""Official-format scorers for SQuAD v1.1 and v2.0.

Papers: Rajpurkar et al., "SQuAD: 100,000+ Questions for Machine Comprehension of Text" (arXiv:1606.05250);
Rajpurkar, Jia & Liang, "Know What You Don't Know: Unanswerable Questions for SQuAD" (arXiv:1806.03822).

Protocol: the official scripts ``evaluate-v1.1.py`` and ``evaluate-v2.0.py`` (https://rajpurkar.github.io/SQuAD-explorer/),
rewritten here to their definitions:

- An answer is normalised by lower-casing, deleting every character of ``string.punctuation``, replacing the
  whole words ``a``, ``an``, ``the`` by a space, and collapsing runs of whitespace to one space.
- Exact match: the normalised prediction equals a normalised gold answer. F1: harmonic mean of precision and
  recall of the multiset of normalised whitespace tokens. Each takes its maximum over the question's gold answers.
- Scores are averaged over questions and printed as percentages.

Where the two scripts differ, each scorer follows its own script:

- v1.1: F1 is 0 whenever no token is shared. A question without a prediction scores 0 and still counts in the
  average (the script prints "Unanswered question ... will receive score 0."); here that is one warning. A
  dataset whose ``version`` is not ``"1.1"`` is reported and scored anyway, as the script does.
- v2.0: gold answers whose normalised text is empty are dropped, and a question left with none has the single
  gold answer ``""``; F1 is 1 when neither side has a token. A question is answerable (``HasAns``) when its
  ``answers`` list is not empty (``is_impossible`` is not read). A no-answer probability above ``na_prob_thresh``
  (default 1.0, so never for a probability) turns the prediction into "no answer". With ``--na-probs``, the best
  threshold is searched as the script does (:func:`find_best_threshold`). A question without a prediction makes
  the script print "Missing prediction for ..." and then stop with a ``KeyError`` when it averages the HasAns
  and NoAns subsets, so such a file has no official score: here it is a :class:`HarnessError`.
- Both scripts ignore predictions for ids that are not in the dataset; here they are ignored with a warning.

Input that neither script could read (invalid JSON, a wrong structure, a non-string answer) raises
:class:`HarnessError` naming the file and the place in it (a JSON path such as ``data[0].paragraphs[2].qas[1]``).
"""

from __future__ import annotations

import json
import math
import re
import string
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
_SHOWN = 5  # ids quoted in a message before "..."


# --- answer normalisation and per-question scores ------------------------------------------------------------


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace (both official scripts)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def _token_f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    num_same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score_v1(prediction: str, gold: str) -> float:
    """Token F1 of ``evaluate-v1.1.py``: 0 when no token is shared, even when both are empty."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def f1_score_v2(prediction: str, gold: str) -> float:
    """Token F1 of ``evaluate-v2.0.py``: when either side has no token, 1 if both have none, else 0."""
    pred_tokens, gold_tokens = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    return _token_f1(pred_tokens, gold_tokens)


def question_scores_v1(prediction: str, golds: Sequence[str]) -> tuple[int, float]:
    """(exact match, F1) of one v1.1 question: the maximum over its gold answers (there must be at least one)."""
    if not golds:
        raise ValueError("a SQuAD v1.1 question needs at least one gold answer")
    return max(exact_match_score(prediction, g) for g in golds), max(f1_score_v1(prediction, g) for g in golds)


def gold_answers_v2(answers: Iterable[str]) -> list[str]:
    """The v2.0 gold set: answers with non-empty normalised text, or ``[""]`` (no answer) when none is left."""
    return [a for a in answers if normalize_answer(a)] or [""]


def question_scores_v2(prediction: str, answers: Sequence[str]) -> tuple[int, float]:
    """(exact match, F1) of one v2.0 question; ``answers`` as in the file (empty for an unanswerable question)."""
    golds = gold_answers_v2(answers)
    return max(exact_match_score(prediction, g) for g in golds), max(f1_score_v2(prediction, g) for g in golds)


# --- reading the files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One question of a SQuAD dev file: its id, gold answer texts as written, and where it sits in the JSON."""

    qid: str
    answers: tuple[str, ...]
    where: str


def _json_type(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _expect(value: Any, kind: type | tuple[type, ...], path: Path, where: str, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):  # JSON true/false is never a string, number, ...
        raise HarnessError(f"{path}: {where} must be {what}, found {_json_type(value)}")
    return value


def _field(obj: dict, key: str, kind: type, path: Path, where: str, what: str) -> Any:
    if key not in obj:
        raise HarnessError(f"{path}: {where} has no {key!r} field")
    return _expect(obj[key], kind, path, f"{where}.{key}", what)


def _read_json(path: Path, what: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise HarnessError(f"{path}: {what} file not found") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON in {what}: {exc.msg}") from None


def _paragraph_questions(paragraph: Any, path: Path, where: str) -> Iterable[Question]:
    _expect(paragraph, dict, path, where, "an object with a 'qas' array")
    for k, qa in enumerate(_field(paragraph, "qas", list, path, where, "an array of questions")):
        at = f"{where}.qas[{k}]"
        _expect(qa, dict, path, at, "an object with 'id' and 'answers'")
        qid = _field(qa, "id", str, path, at, "a string")
        answers = _field(qa, "answers", list, path, at, "an array of answers")
        texts = []
        for m, answer in enumerate(answers):
            _expect(answer, dict, path, f"{at}.answers[{m}]", "an object with a 'text' string")
            texts.append(_field(answer, "text", str, path, f"{at}.answers[{m}]", "a string"))
        yield Question(qid=qid, answers=tuple(texts), where=at)


def read_references(path: Path | str) -> tuple[Any, list[Question]]:
    """The ``version`` field (``None`` when absent) and the questions, in file order, of an official dev JSON."""
    path = Path(path)
    doc = _expect(_read_json(path, "SQuAD references"), dict, path, "the top level", "an object with 'data'")
    questions: list[Question] = []
    seen: dict[str, str] = {}
    for i, article in enumerate(_field(doc, "data", list, path, "the top level", "an array of articles")):
        _expect(article, dict, path, f"data[{i}]", "an object with a 'paragraphs' array")
        for j, paragraph in enumerate(_field(article, "paragraphs", list, path, f"data[{i}]", "an array")):
            for question in _paragraph_questions(paragraph, path, f"data[{i}].paragraphs[{j}]"):
                if question.qid in seen:
                    raise HarnessError(
                        f"{path}: {question.where}: question id {question.qid!r} already used at {seen[question.qid]}"
                    )
                seen[question.qid] = question.where
                questions.append(question)
    if not questions:
        raise HarnessError(f"{path}: the references hold no question")
    return doc.get("version"), questions


def read_predictions(path: Path | str) -> dict[str, str]:
    """The official prediction JSON: an object mapping question id to answer text (``""`` for no answer)."""
    path = Path(path)
    doc = _read_json(path, "SQuAD predictions")
    _expect(doc, dict, path, "the top level", "an object mapping question id to answer text")
    for qid, answer in doc.items():
        _expect(answer, str, path, f"the prediction for question id {qid!r}", "a string")
    return doc


def read_na_probs(path: Path | str) -> dict[str, float]:
    """The official ``--na-prob-file``: an object mapping question id to the probability of "no answer"."""
    path = Path(path)
    doc = _read_json(path, "no-answer probabilities")
    _expect(doc, dict, path, "the top level", "an object mapping question id to a probability")
    for qid, prob in doc.items():
        _expect(prob, (int, float), path, f"the no-answer probability of question id {qid!r}", "a number")
        if not math.isfinite(prob):
            raise HarnessError(f"{path}: the no-answer probability of question id {qid!r} is {prob}")
    return {qid: float(prob) for qid, prob in doc.items()}


def _sample(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(qid) for qid in ids[:_SHOWN])
    return shown + (", ..." if len(ids) > _SHOWN else "")


def _warn_unknown(ids: Iterable[str], questions: Sequence[Question], path: Path, references: Path) -> None:
    known = {q.qid for q in questions}
    unknown = [qid for qid in ids if qid not in known]
    if unknown:
        warnings.warn(
            f"{path}: {len(unknown)} question id(s) are not in {references} and are ignored, as the official script "
            f"does: {_sample(unknown)}",
            stacklevel=3,
        )


# --- SQuAD v1.1 -----------------------------------------------------------------------------------------------


def score_v1(references: Path | str, predictions: Path | str) -> dict[str, float]:
    """``exact_match`` and ``f1`` (percentages) of ``evaluate-v1.1.py``; unanswered questions score 0."""
    references, predictions = Path(references), Path(predictions)
    version, questions = read_references(references)
    preds = read_predictions(predictions)
    if version != "1.1":
        warnings.warn(f"{references}: SQuAD v1.1 scoring expects version '1.1', found {version!r}", stacklevel=2)
    _warn_unknown(preds, questions, predictions, references)
    exact = f1 = 0.0
    missing = []
    for q in questions:
        if not q.answers:
            raise HarnessError(
                f"{references}: {q.where} (id {q.qid!r}) has no gold answer; SQuAD v1.1 questions all have one "
                "(for SQuAD 2.0 data use the task squad-v2.0)"
            )
        if q.qid not in preds:
            missing.append(q.qid)
            continue
        q_exact, q_f1 = question_scores_v1(preds[q.qid], q.answers)
        exact += q_exact
        f1 += q_f1
    if missing:
        warnings.warn(
            f"{predictions}: {len(missing)} of {len(questions)} questions have no prediction and score 0, as in the "
            f"official script: {_sample(missing)}",
            stacklevel=2,
        )
    return {"exact_match": 100.0 * exact / len(questions), "f1": 100.0 * f1 / len(questions)}


# --- SQuAD v2.0 -----------------------------------------------------------------------------------------------


def apply_no_answer_threshold(
    scores: Mapping[str, float], na_probs: Mapping[str, float], has_ans: Mapping[str, bool], threshold: float
) -> dict[str, float]:
    """Questions whose no-answer probability exceeds ``threshold`` count as answered "": 1 if unanswerable, else 0."""
    return {qid: float(not has_ans[qid]) if na_probs[qid] > threshold else s for qid, s in scores.items()}


def find_best_threshold(
    preds: Mapping[str, str], scores: Mapping[str, float], na_probs: Mapping[str, float], has_ans: Mapping[str, bool]
) -> tuple[float, float]:
    """The best score over no-answer thresholds and the threshold reaching it, as ``evaluate-v2.0.py`` finds them.

    Start from "every question answered with no answer" (score = number of unanswerable questions), then walk the
    questions by increasing no-answer probability (ties in ``na_probs`` order), answering each in turn: an
    answerable question adds its raw score, an unanswerable one costs 1 when its prediction is a non-empty string
    (the raw prediction, not its normalised form: the script's own rule). The first strict maximum wins.
    """
    current = best = float(sum(1 for answerable in has_ans.values() if not answerable))
    best_threshold = 0.0
    for qid in sorted(na_probs, key=na_probs.__getitem__):
        if qid not in scores:
            continue
        if has_ans[qid]:
            current += scores[qid]
        elif preds[qid]:
            current -= 1
        if current > best:
            best, best_threshold = current, na_probs[qid]
    return 100.0 * best / len(scores), best_threshold


def _averages(exact: Mapping[str, float], f1: Mapping[str, float], qids: Sequence[str]) -> dict[str, float]:
    return {
        "exact": 100.0 * sum(exact[qid] for qid in qids) / len(qids),
        "f1": 100.0 * sum(f1[qid] for qid in qids) / len(qids),
        "total": len(qids),
    }


def _require_all(ids: Iterable[str], present: Mapping[str, Any], path: Path, what: str, why: str) -> None:
    missing = [qid for qid in ids if qid not in present]
    if missing:
        raise HarnessError(f"{path}: no {what} for {len(missing)} question(s): {_sample(missing)}; {why}")


def score_v2(
    references: Path | str,
    predictions: Path | str,
    na_probs: Path | str | None = None,
    na_prob_thresh: float = 1.0,
) -> dict[str, float]:
    """The metrics of ``evaluate-v2.0.py``: overall, ``HasAns_*`` and ``NoAns_*``; ``best_*`` with ``na_probs``."""
    references, predictions = Path(references), Path(predictions)
    _, questions = read_references(references)
    preds = read_predictions(predictions)
    qids = [q.qid for q in questions]
    _require_all(
        qids, preds, predictions, "prediction", 'the official script cannot score such a file; give "" for no answer'
    )
    _warn_unknown(preds, questions, predictions, references)
    if na_probs is None:
        probs = {qid: 0.0 for qid in preds}
    else:
        probs = read_na_probs(na_probs)
        _require_all(qids, probs, Path(na_probs), "no-answer probability", "the official script needs one per question")
        _warn_unknown(probs, questions, Path(na_probs), references)
    has_ans = {q.qid: bool(q.answers) for q in questions}
    raw = {q.qid: question_scores_v2(preds[q.qid], q.answers) for q in questions}
    raw_exact = {qid: float(s[0]) for qid, s in raw.items()}
    raw_f1 = {qid: s[1] for qid, s in raw.items()}
    exact = apply_no_answer_threshold(raw_exact, probs, has_ans, na_prob_thresh)
    f1 = apply_no_answer_threshold(raw_f1, probs, has_ans, na_prob_thresh)
    result = _averages(exact, f1, qids)
    for prefix, subset in (("HasAns", [q for q in qids if has_ans[q]]), ("NoAns", [q for q in qids if not has_ans[q]])):
        if subset:  # the official script leaves out an empty subset's keys
            result.update({f"{prefix}_{key}": value for key, value in _averages(exact, f1, subset).items()})
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = find_best_threshold(preds, raw_exact, probs, has_ans)
        result["best_f1"], result["best_f1_thresh"] = find_best_threshold(preds, raw_f1, probs, has_ans)
    return result
