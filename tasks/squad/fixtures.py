"""A tiny SQuAD dev file in the exact official layout, for tests and the smoke tier.

The layout is that of ``dev-v1.1.json`` / ``dev-v2.0.json`` (https://rajpurkar.github.io/SQuAD-explorer/):
``{"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"question", "id", "answers": [{"text",
"answer_start"}]}]}]}]}``; v2.0 adds ``is_impossible`` to every question, and unanswerable questions have
``"answers": []`` plus ``plausible_answers``. The passages are written for this file (not taken from SQuAD);
each answerable question has several gold answers, as the dev sets have. The output is byte-for-byte
deterministic: ids are hashes of the question text.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

# (title, context, [(question, gold answers, plausible answers of an unanswerable question or None)])
_ARTICLES: tuple[tuple[str, str, tuple[tuple[str, tuple[str, ...], tuple[str, ...] | None], ...]], ...] = (
    (
        "Eastwick_Harbour",
        "The harbour town of Eastwick was founded in 1642 by fishermen from the north. Its lighthouse, built of "
        'grey granite, stands 38 metres tall and was first lit in 1811. Locals call it "the Needle".',
        (
            ("When was Eastwick founded?", ("1642", "in 1642", "1642"), None),
            ("What is the lighthouse built of?", ("grey granite", "granite", "grey granite"), None),
            ("What do locals call the lighthouse?", ('"the Needle"', "the Needle", "Needle"), None),
            ("When was the lighthouse demolished?", (), ("1811",)),
        ),
    ),
    (
        "Copper_Kettle",
        "A copper kettle heats water faster than an iron one because copper conducts heat about five times "
        "better. Cooks of the 19th century prized such kettles, although they needed regular polishing to stay bright.",
        (
            (
                "Why does a copper kettle heat water faster?",
                (
                    "copper conducts heat about five times better",
                    "because copper conducts heat about five times better",
                ),
                None,
            ),
            (
                "What did the kettles need to stay bright?",
                ("regular polishing", "polishing", "regular polishing"),
                None,
            ),
            ("Who invented the copper kettle?", (), ("Cooks of the 19th century",)),
        ),
    ),
)

FILE_NAMES = {"1.1": "dev-v1.1.json", "2.0": "dev-v2.0.json"}
_VERSION_FIELD = {"1.1": "1.1", "2.0": "v2.0"}  # what the official files write


def _spans(context: str, texts: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"text": text, "answer_start": context.index(text)} for text in texts]


def _question(context: str, question: str, answers: tuple[str, ...], plausible: tuple[str, ...] | None, v2: bool):
    qa: dict[str, Any] = {"question": question, "id": hashlib.sha1(question.encode()).hexdigest()[:24]}
    qa["answers"] = _spans(context, answers)
    if v2:
        qa["is_impossible"] = plausible is not None
        if plausible is not None:
            qa["plausible_answers"] = _spans(context, plausible)
    return qa


def tiny_squad(version: str) -> dict[str, Any]:
    """The tiny dev set as a JSON document; v1.1 leaves out the unanswerable questions."""
    version = version.removeprefix("v")
    if version not in FILE_NAMES:
        raise ValueError(f"SQuAD version must be '1.1' or '2.0', not {version!r}")
    v2 = version == "2.0"
    data = []
    for title, context, questions in _ARTICLES:
        qas = [_question(context, q, a, p, v2) for q, a, p in questions if v2 or p is None]
        data.append({"title": title, "paragraphs": [{"context": context, "qas": qas}]})
    return {"version": _VERSION_FIELD[version], "data": data}


def write_tiny_squad(root: Path | str, version: str = "1.1") -> Path:
    """Write ``root/dev-v1.1.json`` or ``root/dev-v2.0.json`` and return its path (idempotent)."""
    doc = tiny_squad(version)
    path = Path(root) / FILE_NAMES[version.removeprefix("v")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def example(root: Path | str, task_id: str) -> dict[str, Path]:
    """A tiny scoring example for ``squad-v1.1`` / ``squad-v2.0``: the dev file, predictions (the first gold
    answer, a wrong answer for one question, "" for unanswerable ones) and, for v2.0, no-answer probabilities."""
    version = task_id.removeprefix("squad-v")
    references = write_tiny_squad(root, version)
    questions = [qa for article in tiny_squad(version)["data"] for para in article["paragraphs"] for qa in para["qas"]]
    predictions = {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "") for qa in questions}
    predictions[questions[0]["id"]] = "a wrong answer"
    files = {"references": references, "predictions": Path(root) / "predictions.json"}
    files["predictions"].write_text(json.dumps(predictions), encoding="utf-8")
    if version == "2.0":
        files["na_probs"] = Path(root) / "na_probs.json"
        probs = {qa["id"]: (0.9 if not qa["answers"] else 0.1) for qa in questions}
        files["na_probs"].write_text(json.dumps(probs), encoding="utf-8")
    return files


# --- training files ------------------------------------------------------------------------------------------------

TRAIN_FILE_NAMES = {"1.1": "train-v1.1.json", "2.0": "train-v2.0.json"}


def tiny_squad_train(version: str) -> dict[str, Any]:
    """The tiny training set as a JSON document: the dev questions in the official train layout, where every
    answerable question has exactly one gold answer (its first here); v1.1 leaves out the unanswerable ones."""
    doc = tiny_squad(version)
    for article in doc["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["answers"] = qa["answers"][:1]
                qa["id"] = hashlib.sha1(("train " + qa["question"]).encode()).hexdigest()[:24]  # not a dev id
    return doc


def write_tiny_squad_train(root: Path | str, version: str = "1.1") -> Path:
    """Write ``root/train-v1.1.json`` or ``root/train-v2.0.json`` and return its path (idempotent)."""
    doc = tiny_squad_train(version)
    path = Path(root) / TRAIN_FILE_NAMES[version.removeprefix("v")]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def write_tiny_squad_data(root: Path | str, version: str = "1.1") -> Path:
    """Both files ``tasks.squad.data.SquadDataModule(root, version)`` reads; returns ``root`` (for a tier's
    ``prepare`` step)."""
    write_tiny_squad_train(root, version)
    write_tiny_squad(root, version)
    return Path(root)
