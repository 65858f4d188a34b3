"""Tiny RACE and Story Cloze copies in their distributed layouts, and scoring examples.

- :func:`write_tiny_race`: ``RACE/{train,dev,test}/{middle,high}/<n>.txt``, each one JSON object with the release's
  keys (``answers``, ``options``, ``questions``, ``article``, ``id``), two or three questions per article (one a
  ``_`` blank to fill), file numbers that sort differently as text and as numbers (``2.txt``, ``10.txt``).
- :func:`write_tiny_cloze`: ``cloze_test_val__spring2016 - cloze_test_ALL_val.csv`` and
  ``cloze_test_test__spring2016 - cloze_test_ALL_test.csv`` with the release's header, story ids as UUIDs, one
  sentence holding a comma and quotes (so it is quoted in the CSV).

Texts come from small word lists (deterministic for a ``seed``); the right answer repeats a word of the context so
a model can learn it in a smoke run. Writing is atomic and idempotent.
"""

from __future__ import annotations

import csv
import json
import uuid
from pathlib import Path

import numpy as np

from tasks.imagenet.fixtures import atomic_fixture, write_csv
from tasks.multiple_choice import RACE_LABELS
from tasks.multiple_choice.data import CLOZE_COLUMNS, CLOZE_FILES, RACE_FOLDER

NAMES = ("Tom", "Mary", "Li Lei", "Anna", "Mr Smith")
PLACES = ("the library", "the market", "the farm", "the museum", "the station")
THINGS = ("a kite", "a book", "some apples", "a red bicycle", "a letter")
RACE_FILES = {"train": (1, 2, 10), "dev": (3,), "test": (2, 10)}


def _article(rng: np.random.Generator, level: str, number: int) -> dict:
    name, place, thing = (options[rng.integers(len(options))] for options in (NAMES, PLACES, THINGS))
    article = f"{name} went to {place} on Sunday. There {name} found {thing}.\n{name} was very happy."
    wrong_places = [p for p in PLACES if p != place][:3]
    wrong_things = [t for t in THINGS if t != thing][:3]
    questions = [f"Where did {name} go on Sunday?", f"{name} found _ ."]
    right = [place, thing]
    wrong = [wrong_places, wrong_things]
    if number % 2 == 0:
        questions.append("How did the writer's friend feel?")
        right.append("happy")
        wrong.append(["angry", "sad", "tired"])
    options, answers = [], []
    for good, bad in zip(right, wrong, strict=True):
        at = int(rng.integers(4))
        options.append(bad[:at] + [good] + bad[at:])
        answers.append(RACE_LABELS[at])
    return {
        "answers": answers,
        "options": options,
        "questions": questions,
        "article": article,
        "id": f"{level}{number}.txt",
    }


def write_tiny_race(root: Path, seed: int = 0) -> Path:
    """``root/RACE/<split>/<level>/<n>.txt`` with the numbers of :data:`RACE_FILES` at both levels."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        for split, numbers in RACE_FILES.items():
            for level in ("middle", "high"):
                folder = tmp / RACE_FOLDER / split / level
                folder.mkdir(parents=True)
                for number in numbers:
                    row = _article(rng, level, number)
                    (folder / f"{number}.txt").write_text(json.dumps(row), encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-race", "seed": seed}, build)


def _story(rng: np.random.Generator, number: int) -> list[str]:
    name, place, thing = (options[rng.integers(len(options))] for options in (NAMES, PLACES, THINGS))
    story_id = str(uuid.UUID(int=int(rng.integers(2**62)) << 64 | number))
    last = f'"At last," said {name}, "here it is!"' if number == 0 else f"{name} saw {thing} at last."
    sentences = [f"{name} wanted {thing}.", f"{name} walked to {place}.", f"{name} looked everywhere.", last]
    right, wrong = f"{name} took {thing} home.", f"{name} had never wanted {thing}."
    answer = 1 + int(rng.integers(2))
    endings = [right, wrong] if answer == 1 else [wrong, right]
    return [story_id, *sentences, *endings, str(answer)]


def write_tiny_cloze(root: Path, stories: int = 6, seed: int = 0) -> Path:
    """``root/`` with the Spring 2016 val and test CSVs, ``stories`` stories each."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        tmp.mkdir(exist_ok=True)
        for name, _ in CLOZE_FILES.values():
            rows = [_story(rng, n) for n in range(stories)]
            with (tmp / name).open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle, lineterminator="\r\n")
                writer.writerow(CLOZE_COLUMNS)
                writer.writerows(rows)

    return atomic_fixture(Path(root), {"fixture": "tiny-story-cloze", "stories": stories, "seed": seed}, build)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """The tiny test split and predictions with the first question answered wrong."""
    from tasks.multiple_choice.data import read_cloze, read_race

    root = Path(root)
    predictions = root / "predictions.csv"
    if task_id == "story-cloze":
        references = write_tiny_cloze(root / "data") / CLOZE_FILES["test"][0]
        rows = [[r.id, str(1 + (r.label + (n == 0)) % 2)] for n, r in enumerate(read_cloze(references))]
        write_csv(predictions, ["InputStoryid", "AnswerRightEnding"], rows)
        return {"references": references, "predictions": predictions}
    from tasks.multiple_choice import RACE_LEVELS

    references = write_tiny_race(root / "data") / RACE_FOLDER / "test"
    records = read_race(references, RACE_LEVELS[task_id])
    write_csv(
        predictions,
        ["id", "prediction"],
        [[r.id, RACE_LABELS[(r.label + (n == 0)) % 4]] for n, r in enumerate(records)],
    )
    return {"references": references, "predictions": predictions}
