"""The conlleval port against the official script's numbers, and the CoNLL-2003 prediction file checks.

Expected values: ``conlleval.pl`` (Erik Tjong Kim Sang, "version: 2004-01-26", the copy in kyzhouhzau/BERT-NER at
commit 0f77e47, md5 e61195e3294fa1260142e2581fcc9e49), run once with perl 5.36 as ``perl conlleval.pl < case`` on
each case below written to a file (lines joined by "\\n", a final "\\n"). Recorded: the counts of its first line
(tokens, phrases, found, correct) and the four percentages of its second line, as it printed them (two decimals).
Neither perl nor the script is needed to run these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.conll2003.fixtures import example, tiny_conll2003_lines
from tasks.conll2003.score import count_chunks, score, sentence_counts

# name -> conlleval input (token gold guess), written for this test
CASES: dict[str, str] = {
    # IOB1 gold (B- only between two PER), IOB2 guesses of the same spans: all correct
    "iob1_vs_iob2": "Ann I-PER B-PER\nBob B-PER B-PER\nand O O\nCarl I-PER B-PER\nDee I-PER I-PER\nwent O O\n",
    # I- after O opens a chunk; B- of another type inside a chunk; a type change I-PER -> I-ORG
    "starts_and_types": (
        "a O O\nb I-LOC I-LOC\nc I-LOC B-ORG\nd O O\ne I-PER I-PER\nf I-PER I-ORG\ng I-PER I-ORG\n"
        "h O O\ni B-MISC I-MISC\nj O I-MISC\n"
    ),
    # a chunk too long, one too short, one of the wrong type, one missed, one invented
    "boundaries_wrong": (
        "Rome I-LOC I-LOC\nand I-LOC O\nParis O O\nthe I-ORG I-ORG\nUN I-ORG O\nsaid O I-PER\nTom I-PER I-ORG\nX O O\n"
    ),
    # empty sentences (several blank lines), a -X- boundary line, a chunk cut by the boundary
    "empty_sentences": "\n\nA I-PER I-PER\nB I-PER I-PER\n\n\n-X- O O\nC I-PER I-PER\n\nD I-LOC I-LOC\n",
    # no predictions at all
    "no_predictions": "Ann I-PER O\nin O O\nRome I-LOC O\n\nUN I-ORG O\n",
    # nothing to find, and a guess
    "no_gold": "a O O\nb O I-PER\nc O O\n",
    # -DOCSTART- lines count as tokens; a chunk running to the end of the file without a blank line
    "docstart": "-DOCSTART- O O\n\nEU I-ORG I-ORG\nrejects O O\nGerman I-MISC I-MISC\ncall O O\n\n-DOCSTART- O O\n\nPeter I-PER I-PER\nBlackburn I-PER I-PER",
    # B- right after a chunk of the same type in both (IOB1 adjacency), and a guess that merges them
    "adjacent_same_type": "x I-LOC I-LOC\ny B-LOC B-LOC\nz O O\n\nx I-LOC I-LOC\ny B-LOC I-LOC\nz O O\n",
}

# case -> (tokens, gold phrases, found phrases, correct, accuracy, precision, recall, FB1) as conlleval.pl printed them
OFFICIAL: dict[str, tuple[int, int, int, int, float, float, float, float]] = {
    "adjacent_same_type": (6, 4, 3, 2, 83.33, 66.67, 50.0, 57.14),
    "boundaries_wrong": (8, 3, 4, 0, 50.0, 0.0, 0.0, 0.0),
    "docstart": (8, 3, 3, 3, 100.0, 100.0, 100.0, 100.0),
    "empty_sentences": (4, 3, 3, 3, 100.0, 100.0, 100.0, 100.0),
    "iob1_vs_iob2": (6, 3, 3, 3, 66.67, 100.0, 100.0, 100.0),
    "no_gold": (3, 0, 1, 0, 66.67, 0.0, 0.0, 0.0),
    "no_predictions": (4, 3, 0, 0, 25.0, 0.0, 0.0, 0.0),
    "starts_and_types": (10, 3, 5, 0, 50.0, 0.0, 0.0, 0.0),
}


def _rows(text: str) -> list[tuple[str, str, str] | None]:
    return [tuple(line.split(" ")) if line.strip() else None for line in text.split("\n")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_port_gives_what_conlleval_printed(name: str) -> None:
    tokens, gold, found, correct, accuracy, precision, recall, f1 = OFFICIAL[name]
    counts = count_chunks(_rows(CASES[name]))
    assert (counts.tokens, counts.gold, counts.guessed, counts.correct) == (tokens, gold, found, correct)
    scores = counts.scores()
    printed = {"accuracy": accuracy, "precision": precision, "recall": recall, "f1": f1}
    assert {key: round(scores[key], 2) for key in printed} == printed


def test_sentences_add_up_to_the_file() -> None:
    """Counting sentence by sentence (as the metric does) gives the counts of the whole file."""
    text = CASES["empty_sentences"] + "\n" + CASES["starts_and_types"] + "\n" + CASES["adjacent_same_type"]
    sentences, current = [], []
    for row in _rows(text):
        if row is None or row[0] == "-X-":
            sentences.append(current) if current else None
            current = []
        else:
            current.append(row)
    sentences.append(current) if current else None
    total = sum((sentence_counts(*zip(*rows, strict=True)) for rows in sentences), start=count_chunks([]))
    assert total == count_chunks(_rows(text))


def test_the_example_scores_as_conlleval_printed(tmp_path: Path) -> None:
    """The task's example (tasks.conll2003.fixtures) through ``score``; conlleval.pl on its predictions file
    printed: "processed 25 tokens with 7 phrases; found: 6 phrases; correct: 4." and "accuracy:  68.00%; precision:
    66.67%; recall:  57.14%; FB1:  61.54"."""
    files = example(tmp_path, "conll2003-ner")
    scores = score(files["references"], files["predictions"])
    assert {k: round(v, 2) for k, v in scores.items()} == EXAMPLE_OFFICIAL


EXAMPLE_OFFICIAL = {"accuracy": 68.0, "precision": 66.67, "recall": 57.14, "f1": 61.54}


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "predictions.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, list[str]]:
    references = tmp_path / "eng.testb"
    references.write_text("\n".join(tiny_conll2003_lines("testb")) + "\n", encoding="utf-8")
    predictions = [line + " O" if line else "" for line in tiny_conll2003_lines("testb")]
    return references, predictions


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p[:5], r"predictions.txt: ends at line 5, the references \(.*eng.testb\) continue to line 6"),
        (lambda p: [*p[:2], p[2].replace(" NNP ", " NN ", 1), *p[3:]], r"predictions.txt:3: field 'POS tag' is"),
        (
            lambda p: [*p[:2], p[2] + " O", *p[3:]],
            r"predictions.txt:3: expected the references line .* and a predicted tag",
        ),
        (
            lambda p: [*p[:2], p[2][:-1] + "PER", *p[3:]],
            r"predictions.txt:3: predicted tag 'PER' is not O, B-TYPE or I-TYPE",
        ),
        (lambda p: [*p[:1], "x", *p[2:]], r"predictions.txt:2: expected a blank line"),
        (lambda p: [*p, "", "extra NN O O O"], r"predictions.txt:\d+: a line beyond the \d+ lines of the references"),
    ],
)
def test_bad_prediction_files_name_the_file_line_and_field(files, tmp_path: Path, edit, message: str) -> None:
    references, lines = files
    with pytest.raises(HarnessError, match=message):
        score(references, _write(tmp_path, edit(lines)))


def test_a_references_line_with_the_wrong_number_of_fields_is_named(tmp_path: Path) -> None:
    references = tmp_path / "eng.testb"
    references.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"eng.testb:3: expected 4 fields"):
        score(references, _write(tmp_path, ["-DOCSTART- -X- -X- O O", "", "EU NNP B-NP I-ORG"]))
