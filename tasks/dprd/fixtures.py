"""A tiny DPRD copy in the distributed layout (``train.c.txt``, ``test.c.txt``: four lines and a blank line per
example) and a scoring example. The sentences are Winograd-style pairs written here; writing is atomic."""

from __future__ import annotations

from pathlib import Path

from tasks.imagenet.fixtures import atomic_fixture, write_csv

# (sentence, pronoun, candidates, answer): each pair differs in one word that flips the answer
PAIRS = (
    ("The trophy does not fit into the suitcase because it is too large.", "it", "trophy,suitcase", "trophy"),
    ("The trophy does not fit into the suitcase because it is too small.", "it", "trophy,suitcase", "suitcase"),
    ("The man could not lift his son because he was so weak.", "he", "The man, his son", "The man"),
    ("The man could not lift his son because he was so heavy.", "he", "The man, his son", "his son"),
    ("Anna thanked Maria because she had helped her.", "she", "Anna,Maria", "Maria"),
    ("Anna apologised to Maria because she had hurt her.", "she", "Anna,Maria", "Anna"),
)
SPLITS = {"train": PAIRS[:4], "test": PAIRS[2:]}


def write_tiny_dprd(root: Path) -> Path:
    """``root/train.c.txt`` (4 examples) and ``root/test.c.txt`` (4), one a multi-word candidate pair."""

    def build(tmp: Path) -> None:
        for split, rows in SPLITS.items():
            text = "".join("".join(f"{line}\n" for line in row) + "\n" for row in rows)
            (tmp / f"{split}.c.txt").write_text(text, encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-dprd"}, build)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """The tiny ``test.c.txt`` and predictions with the first of 4 examples wrong (accuracy 75)."""
    from tasks.dprd.data import read_dprd

    references = write_tiny_dprd(Path(root) / "data") / "test.c.txt"
    rows = [[r.id, str((r.label + (n == 0)) % 2)] for n, r in enumerate(read_dprd(references))]
    predictions = Path(root) / "predictions.csv"
    write_csv(predictions, ["id", "prediction"], rows)
    return {"references": references, "predictions": predictions}
