"""Tiny IMDb, Yelp, Amazon, AG News, DBpedia and TREC copies in each dataset's exact distributed format.

:func:`write_tiny_text_classification` writes under ``root`` what the real archive unpacks to:

- IMDb: ``aclImdb/{train,test}/{neg,pos}/<id>_<rating>.txt`` (negative ratings 1-4, positive 7-10) plus one
  ``aclImdb/train/unsup/<id>_0.txt`` review, which the readers must skip; reviews hold ``<br /><br />`` as the
  real ones do;
- Yelp-2 / Yelp-5 / Amazon-2 / Amazon-5 / AG News / DBpedia: ``<archive>/train.csv`` and ``test.csv`` without a
  header, the class index from 1 first, then the text fields (Amazon, AG News, DBpedia: a title and a body), each
  in double quotes with inner quotes doubled and new lines written as ``\\n`` (the class index quoted too except
  in DBpedia, as in the real files), plus ``classes.txt`` for AG News and DBpedia and a ``readme.txt``;
- TREC-6: ``trec/train_5500.label`` and ``trec/TREC_10.label``, ``COARSE:fine question ?`` lines, latin-1, the
  training file with one stray 0xF0 byte as the real one has.

The sentences are invented from small word lists (deterministic for a ``seed``), each naming its class so a model
can learn them in a smoke run; a few hold commas, quotes and non-ASCII letters to exercise the readers. Writing is
atomic and idempotent (``tasks.imagenet.fixtures``'s marker scheme).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.errors import HarnessError
from tasks.imagenet.fixtures import atomic_fixture, write_csv
from tasks.text_classification import LAYOUTS, TextLayout

SUBJECTS = ("The reviewer", "A local reader", "Our editor", "The committee", "This author", "My neighbour")
VERBS = ("wrote about", "argued for", "described", "complained about", "praised", "asked about")
THINGS = ("the harbour", "a copper kettle", "the old bridge", "a garden", "the library", "a violin")
TREC_FINE = {
    "ABBR": ("abb", "exp"),
    "DESC": ("def", "desc", "manner", "reason"),
    "ENTY": ("animal", "food", "instru", "other"),
    "HUM": ("gr", "ind", "title"),
    "LOC": ("city", "country", "other"),
    "NUM": ("count", "date", "dist"),
}
TREC_TEMPLATES = {
    "ABBR": "What does {X} stand for ?",
    "DESC": "What is the meaning of {x} ?",
    "ENTY": "What animal lives near {x} ?",
    "HUM": "Who built {x} ?",
    "LOC": "Where is {x} ?",
    "NUM": "How many people visited {x} in 1990 ?",
}


def _sentence(rng: np.random.Generator, class_name: str, index: int) -> str:
    subject, verb, thing = (options[rng.integers(len(options))] for options in (SUBJECTS, VERBS, THINGS))
    text = f"{subject} {verb} {thing}, a clear case of {class_name.lower()}."
    if index == 0:  # the awkward characters the real files hold: quotes, an escaped new line, non-ASCII
        text += ' She said "caf\u00e9 cr\u00e8me", twice.\\nThen left.'
    return text


def _labels(rng: np.random.Generator, classes: int, per_class: int) -> list[int]:
    return rng.permutation(np.repeat(np.arange(classes), per_class)).tolist()


def _quoted(field: str) -> str:
    return '"' + field.replace('"', '""') + '"'


def _write_zhang(folder: Path, spec: TextLayout, splits: dict[str, list[int]], rng: np.random.Generator) -> None:
    folder.mkdir(parents=True)
    two_fields = spec.task_id in ("ag-news", "dbpedia", "amazon-2", "amazon-5")
    for name, labels in splits.items():
        lines = []
        for index, label in enumerate(labels):
            body = _sentence(rng, spec.classes[label], index)
            fields = [f"Item {index} on {spec.classes[label]}", body] if two_fields else [body]
            number = str(label + 1) if spec.task_id == "dbpedia" else _quoted(str(label + 1))
            lines.append(",".join([number, *map(_quoted, fields)]) + "\n")
        (folder / name).write_text("".join(lines), encoding="utf-8")
    if spec.task_id in ("ag-news", "dbpedia"):
        (folder / "classes.txt").write_text("".join(f"{name}\n" for name in spec.classes), encoding="utf-8")
    (folder / "readme.txt").write_text(f"Tiny {spec.title} fixture in the format of the original archive.\n")


def _write_imdb(folder: Path, spec: TextLayout, splits: dict[str, list[int]], rng: np.random.Generator) -> None:
    for split, labels in splits.items():
        counters = {name: 0 for name in spec.classes}
        for index, label in enumerate(labels):
            name = spec.classes[label]
            rating = int(rng.integers(1, 5)) if label == 0 else int(rng.integers(7, 11))
            review = _sentence(rng, "a " + ("bad" if label == 0 else "good") + " film", index).replace("\\n", " ")
            path = folder / split / name / f"{counters[name]}_{rating}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{review}<br /><br />{_sentence(rng, name, 1)}", encoding="utf-8")
            counters[name] += 1
    unsup = folder / "train" / "unsup"
    unsup.mkdir(parents=True)
    (unsup / "0_0.txt").write_text("An unlabelled review the readers must skip.", encoding="utf-8")


def _write_trec(folder: Path, spec: TextLayout, splits: dict[str, list[int]], rng: np.random.Generator) -> None:
    folder.mkdir(parents=True)
    for name, labels in splits.items():
        lines = []
        for label in labels:
            coarse = spec.classes[label]
            fine = TREC_FINE[coarse][rng.integers(len(TREC_FINE[coarse]))]
            thing = THINGS[rng.integers(len(THINGS))]
            question = TREC_TEMPLATES[coarse].format(x=thing, X=thing.split()[-1].upper())
            lines.append(f"{coarse}:{fine} {question}\n".encode("latin-1"))
        if name == spec.train:
            lines[0] = lines[0].replace(b" ?", b" sister\xf0city ?")  # the real file's stray byte
        (folder / name).write_bytes(b"".join(lines))


WRITERS = {"zhang-csv": _write_zhang, "imdb": _write_imdb, "trec": _write_trec}


def write_tiny_text_classification(
    root: Path, dataset: str = "ag-news", per_class: int = 3, test_per_class: int = 2, seed: int = 0
) -> Path:
    """Write a tiny copy of ``dataset`` (a task id of ``tasks.text_classification``) under ``root``; returns root.

    The dataset's files go to ``root/<archive folder>`` (``aclImdb``, ``ag_news_csv``, ``trec``, ...).
    """
    if dataset not in LAYOUTS:
        raise HarnessError(f"unknown text-classification dataset {dataset!r}; known: {', '.join(LAYOUTS)}")
    if per_class < 1 or test_per_class < 1:
        raise HarnessError(f"{dataset}: need at least one example per class in each split")
    spec = LAYOUTS[dataset]
    params = {"fixture": f"tiny-{dataset}", "per_class": per_class, "test_per_class": test_per_class, "seed": seed}

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        n = len(spec.classes)
        splits = {spec.train: _labels(rng, n, per_class), spec.test: _labels(rng, n, test_per_class)}
        WRITERS[spec.format](tmp / spec.folder, spec, splits, rng)

    return atomic_fixture(Path(root), params, build)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """References ``id,label`` and predictions ``id,prediction`` for 4 examples, 3 right (accuracy 75, error 25)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    ids = ["pos/0_9", "neg/0_2", "pos/1_7", "neg/1_4"] if task_id == "imdb" else ["0", "1", "2", "3"]
    labels, guesses = ["1", "0", "1", "0"], ["1", "0", "0", "0"]
    references, predictions = root / "labels.csv", root / "predictions.csv"
    write_csv(references, ["id", "label"], [[i, y] for i, y in zip(ids, labels, strict=True)])
    write_csv(predictions, ["id", "prediction"], [[i, g] for i, g in zip(ids, guesses, strict=True)])
    return {"references": references, "predictions": predictions}
