"""Tiny CoNLL-2003 files in the exact distributed layout, for tests and the smoke tier.

``eng.train``, ``eng.testa`` and ``eng.testb`` as the shared task distributes them: ``-DOCSTART- -X- -X- O`` opens
each document and is followed by a blank line, then one token a line (``word POS chunk NER``, single spaces), a
blank line after each sentence; chunk and NER tags in IOB1 (``B-`` only where a phrase directly follows one of the
same type, as ``Lake Tana Lake Victoria`` below). The sentences are written for these files, not taken from
Reuters. Output is byte-for-byte deterministic.
"""

from __future__ import annotations

from pathlib import Path

DOCSTART = "-DOCSTART- -X- -X- O"

# documents of sentences of (word, POS, chunk, NER)
_SENTENCES: tuple[tuple[tuple[str, str, str, str], ...], ...] = (
    (
        ("Harbour", "NNP", "I-NP", "I-ORG"), ("Board", "NNP", "I-NP", "I-ORG"), ("of", "IN", "I-PP", "O"),
        ("Eastwick", "NNP", "I-NP", "I-LOC"), ("met", "VBD", "I-VP", "O"), ("Anna", "NNP", "I-NP", "I-PER"),
        ("Berg", "NNP", "I-NP", "I-PER"), (".", ".", "O", "O"),
    ),
    (("Lake", "NNP", "I-NP", "I-LOC"), ("Tana", "NNP", "I-NP", "I-LOC"), ("Lake", "NNP", "B-NP", "B-LOC"),
     ("Victoria", "NNP", "I-NP", "I-LOC"), ("are", "VBP", "I-VP", "O"), ("large", "JJ", "I-ADJP", "O"),
     (".", ".", "O", "O")),
    (("SOCCER", "NN", "I-NP", "O"), ("-", ":", "O", "O"), ("EASTWICK", "NNP", "I-NP", "I-ORG"),
     ("WIN", "NNP", "I-NP", "O"), ("IN", "IN", "I-PP", "O"), ("ENGLISH", "JJ", "I-NP", "I-MISC"),
     ("CUP", "NNP", "I-NP", "I-MISC"), (".", ".", "O", "O")),
)  # fmt: skip
_SPLIT_ORDER = {"train": (0, 1, 2), "testa": (2, 0), "testb": (1, 2, 0)}
FILE_NAMES = {"train": "eng.train", "testa": "eng.testa", "testb": "eng.testb"}


def tiny_conll2003_lines(split: str) -> list[str]:
    """The lines (no line ends) of the tiny ``eng.<split>``: two documents of the sentences in the split's order."""
    order = _SPLIT_ORDER[split]
    lines: list[str] = []
    for document in (order[:1], order[1:]):
        lines += [DOCSTART, ""]
        for index in document:
            lines += [" ".join(token) for token in _SENTENCES[index]] + [""]
    return lines[:-1]


def write_tiny_conll2003(root: Path | str) -> Path:
    """Write ``root/eng.train``, ``eng.testa`` and ``eng.testb``; returns ``root`` (for a tier's ``prepare`` step)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for split, name in FILE_NAMES.items():
        (root / name).write_text("\n".join(tiny_conll2003_lines(split)) + "\n", encoding="utf-8", newline="\n")
    return root


def predicted_tags(gold: list[str]) -> list[str]:
    """The example's guesses for one sentence: IOB2 tags of the gold spans, except that ``B-LOC`` after ``I-LOC``
    becomes ``I-LOC`` (two lakes merged into one wrong span) and ``I-MISC`` becomes ``I-ORG``."""
    tags = []
    for i, tag in enumerate(gold):
        if tag.startswith("I-") and (i == 0 or gold[i - 1][2:] != tag[2:]):
            tag = "B-" + tag[2:]
        tags.append(tag)
    return [
        "I-LOC" if tag == "B-LOC" and i and gold[i - 1] == "I-LOC" else "I-ORG" if tag.endswith("MISC") else tag
        for i, tag in enumerate(tags)
    ]


def example(root: Path | str, task_id: str) -> dict[str, Path]:
    """A tiny scoring example for ``conll2003-ner``: ``eng.testb`` and the conlleval file of :func:`predicted_tags`."""
    references = write_tiny_conll2003(root) / FILE_NAMES["testb"]
    lines, sentence, out = tiny_conll2003_lines("testb"), [], []
    for line in [*lines, ""]:
        if line and not line.startswith("-DOCSTART-"):
            sentence.append(line)
            continue
        guesses = predicted_tags([row.split(" ")[3] for row in sentence])
        out += [f"{row} {tag}" for row, tag in zip(sentence, guesses, strict=True)]
        sentence = []
        out.append(f"{line} O" if line else "")
    predictions = Path(root) / "predictions.txt"
    predictions.write_text("\n".join(out[:-1]) + "\n", encoding="utf-8", newline="\n")
    return {"references": references, "predictions": predictions}
