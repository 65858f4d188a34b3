"""The coreference scorer port against the reference scorer v8.01's numbers, on key/response pairs written for the
test, and the checks of bad response files.

Expected values: ``scorer.pl`` with ``lib/CorScorer.pm`` (``$VERSION = '8.01'``) of conll/reference-coreference-scorers
at commit f49f3f8, run once with perl 5.36 as ``perl scorer.pl <metric> key response`` for each of ``muc``,
``bcub``, ``ceafm`` and ``ceafe``. Recorded from its TOTALS: the "Coreference:" line's recall and precision
numerators and denominators as printed, and its F1 as printed (truncated to two decimals, ``int(f1 * 10000) / 100``),
and once the "Identification of Mentions:" line. Neither perl nor the script is needed to run these tests.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.conll2012.fixtures import conll_rows, example
from tasks.conll2012.score import score_coref

# A case: documents of sentences of "word cell" rows, (key, response); cells as in the last column of *_conll files.
Doc = list[list[str]]
CASES: dict[str, tuple[list[Doc], list[Doc]]] = {
    # the same chains, a nested mention of another entity and a one-token mention inside a mention of its own entity
    "identical_nested": (
        [[["Anna (1", "Berg 1)", "sold -", "her (2|(1)", "boat 2)"], ["She (1)", "liked (3)", "it (2)"]]],
        [[["Anna (1", "Berg 1)", "sold -", "her (2|(1)", "boat 2)"], ["She (1)", "liked (3)", "it (2)"]]],
    ),
    # one key entity of four mentions split in two by the response
    "split_entity": (
        [[["a (1)", "b (1)", "c -", "d (1)", "e (1)"]]],
        [[["a (7)", "b (7)", "c -", "d (8)", "e (8)"]]],
    ),
    # two key entities merged by the response
    "merged_entities": (
        [[["a (1)", "b (1)", "c (2)", "d (2)", "e (2)"]]],
        [[["a (3)", "b (3)", "c (3)", "d (3)", "e (3)"]]],
    ),
    # key mentions the response misses, response mentions the key lacks (in a chain and as singletons), and a
    # span off by one token
    "missing_and_invented": (
        [[["The (1", "man 1)", "saw -", "him (1)", "and -", "the (2", "dog 2)", "ran (2)"]]],
        [[["The -", "man (1)", "saw (1)", "him (1)", "and (5)", "the (2", "dog 2)", "ran (6)"]]],
    ),
    # singletons in the key (the format allows them) and in the response, some of them matching
    "singletons": (
        [[["x (1)", "y (2)", "z (3)", "w (3)", "v (4)"]]],
        [[["x (1)", "y (9)", "z (3)", "w (5)", "v -"]]],
    ),
    # response mentions repeated in other entities (the scorer drops the repeats of key mentions, not those of
    # invented ones)
    "repeated_response_mention": (
        [[["p (1)", "q (1)", "r (2)", "s (2)", "t -"]]],
        [[["p (1)|(3)", "q (1)", "r (2)", "s (2)|(4)|(5)", "t (6)|(7)"]]],
    ),
    # two documents, scored together; the second response document is empty
    "two_documents": (
        [[["a (1", "b 1)", "c (1)"], ["d (2)", "e (2)"]], [["f (1)", "g (1)", "h (1)"]]],
        [[["a (4", "b 4)", "c (2)"], ["d (2)", "e (4)"]], [["f -", "g -", "h -"]]],
    ),
    # cluster numbers are labels only; a double antecedent (1+2) is dropped
    "renumbered_double_antecedent": (
        [[["i (10)", "j (10)", "k (20)|(10+2)", "l (20)"]]],
        [[["i (2)", "j (2)", "k (1)", "l (1)"]]],
    ),
}

# case -> metric -> (recall num, recall den, precision num, precision den, F1 as printed); "mentions" for the
# Identification of Mentions line of the ``muc`` run
OFFICIAL: dict[str, dict[str, tuple[float, float, float, float, float]]] = {
    "identical_nested": {
        "muc": (3.0, 3.0, 3.0, 3.0, 100.0),
        "mentions": (6.0, 6.0, 6.0, 6.0, 100.0),
        "bcub": (6.0, 6.0, 6.0, 6.0, 100.0),
        "ceafm": (6.0, 6.0, 6.0, 6.0, 100.0),
        "ceafe": (3.0, 3.0, 3.0, 3.0, 100.0),
    },
    "merged_entities": {
        "muc": (3.0, 3.0, 3.0, 4.0, 85.71),
        "mentions": (5.0, 5.0, 5.0, 5.0, 100.0),
        "bcub": (5.0, 5.0, 2.6, 5.0, 68.42),
        "ceafm": (3.0, 5.0, 3.0, 5.0, 60.0),
        "ceafe": (0.75, 2.0, 0.75, 1.0, 50.0),
    },
    "missing_and_invented": {
        "muc": (0.0, 2.0, 0.0, 2.0, 0.0),
        "mentions": (3.0, 4.0, 3.0, 6.0, 60.0),
        "bcub": (1.5, 4.0, 2.33333333333333, 6.0, 38.18),
        "ceafm": (2.0, 4.0, 2.0, 6.0, 40.0),
        "ceafe": (1.06666666666667, 2.0, 1.06666666666667, 4.0, 35.55),
    },
    "renumbered_double_antecedent": {
        "muc": (2.0, 2.0, 2.0, 2.0, 100.0),
        "mentions": (4.0, 4.0, 4.0, 4.0, 100.0),
        "bcub": (4.0, 4.0, 4.0, 4.0, 100.0),
        "ceafm": (4.0, 4.0, 4.0, 4.0, 100.0),
        "ceafe": (2.0, 2.0, 2.0, 2.0, 100.0),
    },
    "repeated_response_mention": {
        "muc": (2.0, 2.0, 2.0, 2.0, 100.0),
        "mentions": (4.0, 4.0, 4.0, 5.0, 88.88),
        "bcub": (4.0, 4.0, 4.0, 6.0, 80.0),
        "ceafm": (4.0, 4.0, 4.0, 6.0, 80.0),
        "ceafe": (2.0, 2.0, 2.0, 4.0, 66.66),
    },
    "singletons": {
        "muc": (0.0, 1.0, 0.0, 0.0, 0.0),
        "mentions": (4.0, 5.0, 4.0, 4.0, 88.88),
        "bcub": (3.0, 5.0, 4.0, 4.0, 74.99),
        "ceafm": (3.0, 5.0, 3.0, 4.0, 66.66),
        "ceafe": (2.66666666666667, 4.0, 2.66666666666667, 4.0, 66.66),
    },
    "split_entity": {
        "muc": (2.0, 3.0, 2.0, 2.0, 80.0),
        "mentions": (4.0, 4.0, 4.0, 4.0, 100.0),
        "bcub": (2.0, 4.0, 4.0, 4.0, 66.66),
        "ceafm": (2.0, 4.0, 2.0, 4.0, 50.0),
        "ceafe": (0.666666666666667, 1.0, 0.666666666666667, 2.0, 44.44),
    },
    "two_documents": {
        "muc": (0.0, 4.0, 0.0, 2.0, 0.0),
        "mentions": (4.0, 7.0, 4.0, 4.0, 72.72),
        "bcub": (2.0, 7.0, 2.0, 4.0, 36.36),
        "ceafm": (2.0, 7.0, 2.0, 4.0, 36.36),
        "ceafe": (1.0, 3.0, 1.0, 2.0, 40.0),
    },
}


def _lines(docs: list[Doc], name: str) -> list[str]:
    lines = []
    for i, doc in enumerate(docs):
        lines.append(f"#begin document (case/{name}/{i}); part 000")
        for sentence in doc:
            rows = [row.split(" ") for row in sentence]
            lines += [*conll_rows(f"case/{name}/{i}", [r[0] for r in rows], [], [r[1] for r in rows]), ""]
        lines.append("#end document")
    return lines


def case_files(folder: Path, name: str) -> tuple[Path, Path]:
    """Write a case's key and response ``*_conll`` files."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for which, docs in zip(("key", "response"), CASES[name], strict=True):
        path = folder / f"{name}.{which}_conll"
        path.write_text("\n".join(_lines(docs, name)) + "\n", encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def _agrees(mine: float, printed: float) -> bool:
    """``printed`` is the scorer's percentage truncated to two decimals."""
    return printed - 1e-9 <= mine < printed + 0.01 + 1e-9


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_port_gives_what_the_reference_scorer_printed(name: str, tmp_path: Path) -> None:
    scores = score_coref(*case_files(tmp_path, name))
    for metric, (rn, rd, pn, pd, f1) in OFFICIAL[name].items():
        recall = 100 * rn / rd if rd else 0.0
        precision = 100 * pn / pd if pd else 0.0
        assert scores[f"{metric}_recall"] == pytest.approx(recall, rel=1e-12), metric
        assert scores[f"{metric}_precision"] == pytest.approx(precision, rel=1e-12), metric
        assert _agrees(scores[f"{metric}_f1"], f1), (metric, scores[f"{metric}_f1"], f1)
    assert scores["f1"] == pytest.approx((scores["muc_f1"] + scores["bcub_f1"] + scores["ceafe_f1"]) / 3)


def test_the_example_scores_as_the_reference_scorer_printed(tmp_path: Path) -> None:
    """The task's example (tasks.conll2012.fixtures); the key is the test folder's two files joined."""
    files = example(tmp_path, "coref-conll2012")
    scores = score_coref(files["references"], files["predictions"])
    for metric, (rn, rd, pn, pd, f1) in EXAMPLE_OFFICIAL.items():
        assert scores[f"{metric}_recall"] == pytest.approx(100 * rn / rd, rel=1e-12), metric
        assert scores[f"{metric}_precision"] == pytest.approx(100 * pn / pd, rel=1e-12), metric
        assert _agrees(scores[f"{metric}_f1"], f1), metric


EXAMPLE_OFFICIAL: dict[str, tuple[float, float, float, float, float]] = {
    "muc": (4.0, 6.0, 4.0, 5.0, 72.72),
    "mentions": (11.0, 13.0, 11.0, 12.0, 87.99),
    "bcub": (9.5, 13.0, 9.66666666666667, 12.0, 76.63),
    "ceafm": (10.0, 13.0, 10.0, 12.0, 80.0),
    "ceafe": (5.13333333333333, 7.0, 5.13333333333333, 7.0, 73.33),
}


# --- bad files ---------------------------------------------------------------------------------------------------


def _response(tmp_path: Path, edit) -> tuple[Path, Path]:
    key, response = case_files(tmp_path, "identical_nested")
    lines = response.read_text(encoding="utf-8").splitlines()
    response.write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    return key, response


def _cell(lines: list[str], number: int, cell: str) -> list[str]:
    fields = lines[number - 1].split()
    lines[number - 1] = "   ".join([*fields[:-1], cell])
    return lines


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ls: ls[:-3], r"response_conll: document .* \(line 1\) has no '#end document': truncated file\?"),
        (
            lambda ls: [ls[0].replace("/0)", "/9)"), *ls[1:]],
            r"response_conll: no '#begin document \(case/identical_nested/0\); part 000'",
        ),
        (lambda ls: _cell(ls, 5, "(1)"), r"response_conll:6: a mention of entity 2 ends here without a beginning"),
        (lambda ls: _cell(ls, 3, "-"), r"response_conll:2: a mention of entity 1 opens here and never closes"),
        (
            lambda ls: [*ls[:3], ls[3].replace(" sold ", " sells "), *ls[4:]],
            r"response_conll:4: field 'word' \(column 4\) is 'sells'",
        ),
        (
            lambda ls: [*ls[:3], *ls[4:]],
            r"response_conll:1: document '\(case/identical_nested/0\); part 000' has 7 token rows, the key .* has 8",
        ),
        (
            lambda ls: [*ls[:3], ls[3] + "   x", *ls[4:]],
            r"response_conll:4: 13 columns, the sentence's first row \(line 2\) has 12",
        ),
        (lambda ls: ["stray row", *ls], r"response_conll:1: a token row outside any '#begin document'"),
    ],
)
def test_bad_response_files_name_the_file_line_and_field(tmp_path: Path, edit, message: str) -> None:
    key, response = _response(tmp_path, edit)
    with pytest.raises(HarnessError, match=message), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the renamed document is also "not in the key"
        score_coref(key, response)


def test_more_than_ten_repeated_response_mentions_are_refused(tmp_path: Path) -> None:
    key, response = _response(tmp_path, lambda ls: _cell(ls, 8, "(1)|(4)|(5)|(6)|(7)|(8)|(9)|(10)|(11)|(12)|(13)|(14)"))
    with pytest.raises(HarnessError, match=r"more than 10 repeated mentions in the response"):
        score_coref(key, response)
