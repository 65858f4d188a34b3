"""Tiny SNLI and SciTail copies in their distributed layouts, and scoring examples.

- :func:`write_tiny_snli`: ``snli_1.0/snli_1.0_{train,dev,test}.jsonl`` (plus ``README.txt``), one JSON object a
  line with the real files' keys in their order (``annotator_labels``, ``captionID``, ``gold_label``, ``pairID``,
  ``sentence1``, its binary and full parses, ``sentence2``, its parses); every split holds one pair whose
  ``gold_label`` is ``-`` (annotators without a majority), which readers drop.
- :func:`write_tiny_scitail`: ``SciTailV1.1/tsv_format/scitail_1.0_{train,dev,test}.tsv``, no header,
  ``premise<TAB>hypothesis<TAB>label`` with ``entails`` / ``neutral``; one premise holds quote characters, as the
  real ones do.

Sentences come from small word lists (deterministic for a ``seed``), each pair's label readable from its words so a
model can learn them in a smoke run. Writing is atomic and idempotent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tasks.entailment import SCITAIL_LABELS, SNLI_LABELS
from tasks.entailment.data import SCITAIL_FOLDER, SCITAIL_TSV, SNLI_FOLDER, scitail_file, snli_file
from tasks.imagenet.fixtures import atomic_fixture, write_csv

PEOPLE = ("A man", "A woman", "Two children", "An old dog", "A girl")
ACTIONS = ("runs along the beach", "plays a guitar", "sleeps on a bench", "reads a newspaper")
HYPOTHESES = {  # label -> how the hypothesis is made from the premise's subject
    "entailment": "{who} is outdoors .",
    "neutral": "{who} is waiting for a friend .",
    "contradiction": "{who} is swimming in a pool .",
}
SPLIT_SIZES = {"train": 9, "dev": 4, "test": 4}


def _parse(sentence: str) -> str:
    return "( " + " ".join(sentence.split()) + " )"


def _snli_line(rng: np.random.Generator, split: str, number: int, label: str) -> str:
    who, action = PEOPLE[rng.integers(len(PEOPLE))], ACTIONS[rng.integers(len(ACTIONS))]
    premise = f"{who} {action} ."
    hypothesis = HYPOTHESES["neutral" if label == "-" else label].format(who=who)
    votes = [label] * 5 if label != "-" else ["neutral", "neutral", "entailment", "contradiction", "contradiction"]
    row = {
        "annotator_labels": votes,
        "captionID": f"{split}{number // 3}.jpg#{number % 5}",
        "gold_label": label,
        "pairID": f"{split}{number // 3}.jpg#{number % 5}r1{label[0]}",
        "sentence1": premise,
        "sentence1_binary_parse": _parse(premise),
        "sentence1_parse": f"(ROOT (S {premise}))",
        "sentence2": hypothesis,
        "sentence2_binary_parse": _parse(hypothesis),
        "sentence2_parse": f"(ROOT (S {hypothesis}))",
    }
    return json.dumps(row) + "\n"


def write_tiny_snli(root: Path, seed: int = 0) -> Path:
    """``root/snli_1.0/snli_1.0_{train,dev,test}.jsonl``: 9 / 4 / 4 labelled pairs and one ``-`` pair each."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        folder = tmp / SNLI_FOLDER
        folder.mkdir()
        for split, size in SPLIT_SIZES.items():
            labels = [SNLI_LABELS[n % 3] for n in range(size)]
            labels.insert(1, "-")
            lines = [_snli_line(rng, split, n, label) for n, label in enumerate(labels)]
            (folder / snli_file(split)).write_text("".join(lines), encoding="utf-8")
        (folder / "README.txt").write_text("Tiny copy of the SNLI 1.0 layout.\n", encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-snli", "seed": seed}, build)


def write_tiny_scitail(root: Path, seed: int = 0) -> Path:
    """``root/SciTailV1.1/tsv_format/scitail_1.0_{train,dev,test}.tsv``: 10 / 4 / 4 pairs."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        folder = tmp / SCITAIL_FOLDER / SCITAIL_TSV
        folder.mkdir(parents=True)
        for split, size in SPLIT_SIZES.items():
            lines = []
            for n in range(size + (split == "train")):
                label = SCITAIL_LABELS[n % 2]
                who, action = PEOPLE[rng.integers(len(PEOPLE))], ACTIONS[rng.integers(len(ACTIONS))]
                premise = f'{who} {action}; "quoted" notes follow.' if n == 0 else f"{who} {action}."
                hypothesis = f"{who} {action}." if label == "entails" else f"{who} studies chemistry."
                lines.append(f"{premise}\t{hypothesis}\t{label}\n")
            (folder / scitail_file(split)).write_text("".join(lines), encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-scitail", "seed": seed}, build)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """The tiny test file and an ``id,prediction`` CSV with the first pair answered wrong (accuracy 75)."""
    from tasks.entailment.data import read_scitail, read_snli

    root = Path(root)
    if task_id == "snli":
        references = write_tiny_snli(root / "data") / SNLI_FOLDER / snli_file("test")
        records, labels = read_snli(references), SNLI_LABELS
    else:
        references = write_tiny_scitail(root / "data") / SCITAIL_FOLDER / SCITAIL_TSV / scitail_file("test")
        records, labels = read_scitail(references), SCITAIL_LABELS
    rows = [[r.id, labels[(r.label + (n == 0)) % len(labels)]] for n, r in enumerate(records)]
    predictions = root / "predictions.csv"
    write_csv(predictions, ["id", "prediction"], rows)
    return {"references": references, "predictions": predictions}
