"""A tiny SST copy in the distributed layout (``trees/{train,dev,test}.txt``, one PTB tree a line, every node
labelled 0-4, brackets in the text as ``-LRB-`` / ``-RRB-``) and a scoring example. Sentences are built from small
word lists so that the root label follows from the words (deterministic for a ``seed``). Writing is atomic."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tasks.imagenet.fixtures import atomic_fixture, write_csv
from tasks.sst.data import TREES

WORDS = {0: "dreadful", 1: "dull", 2: "ordinary", 3: "pleasant", 4: "wonderful"}
NOUNS = ("film", "story", "cast", "score", "ending")
SPLIT_SIZES = {"train": 10, "dev": 5, "test": 5}


def tree(label: int, noun: str, aside: bool = False) -> str:
    """``(label (2 (2 The) (2 noun)) (label (2 is) (label word)))``, optionally with a bracketed aside."""
    subject = f"(2 (2 The) (2 {noun}))"
    if aside:
        subject = f"(2 {subject} (2 (2 -LRB-) (2 (2 again) (2 -RRB-))))"
    return f"({label} {subject} ({label} (2 is) ({label} {WORDS[label]})))"


def write_tiny_sst(root: Path, seed: int = 0) -> Path:
    """``root/trees/{train,dev,test}.txt`` with 10 / 5 / 5 trees, every label in each split."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        (tmp / TREES).mkdir()
        for split, size in SPLIT_SIZES.items():
            lines = [tree(n % 5, NOUNS[rng.integers(len(NOUNS))], aside=n == 1) + "\n" for n in range(size)]
            (tmp / TREES / f"{split}.txt").write_text("".join(lines), encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-sst", "seed": seed}, build)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """The tiny ``trees/test.txt`` and predictions with the first of 5 sentences wrong (accuracy 80)."""
    from tasks.sst.data import read_trees

    root = Path(root)
    references = write_tiny_sst(root / "data") / TREES / "test.txt"
    rows = [[r.id, str((r.label + (n == 0)) % 5)] for n, r in enumerate(read_trees(references))]
    predictions = root / "predictions.csv"
    write_csv(predictions, ["id", "prediction"], rows)
    return {"references": references, "predictions": predictions}
