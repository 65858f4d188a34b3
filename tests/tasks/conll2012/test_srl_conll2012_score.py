"""The srl-eval port against the official script's numbers, on CoNLL-2012 key/response pairs written for the test.

Expected values: ``srl-eval.pl`` of the CoNLL-2005 shared task (srlconll-1.1, "Modified: 2005/04/21"; the copy in
utahnlp/structured_tuning_srl at commit c5e5570, md5 de755654881a74871249b3c358d6a7a3), run once with perl 5.36 as
``perl srl-eval.pl gold.props pred.props``. The props files were made from each case's key and response by a
separate script (not this project's code): per sentence, a first column holding the word at each argument column's
``(V*`` token and ``-`` elsewhere, then the argument columns ordered by that position. Recorded: the "Overall" row
(corr., excess, missed, prec., rec., F1, two decimals), the "Number of Propositions" and "Percentage of perfect
props" lines. Neither perl nor the script is needed to run these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.conll2012.fixtures import conll_rows, example
from tasks.conll2012.score import score_srl

# A case: documents of sentences of rows "word argtag ... argtag"; (key, response). Rows expand to the 11 first
# columns of a *_conll row (tasks.conll2012.fixtures.conll_rows), the argument columns and a "-" coreference column.
# fmt: off
CASES: dict[str, tuple[list[list[str]], list[list[str]]]] = {
    # a discontinuous ARG1 (ARG1 ... C-ARG1) for two predicates: predicted in full for the first, without its C-
    # piece for the second
    "continuation": (
        [["The (ARG1* (ARG1*", "deal *) *)", "was * *", "said (V*) *", "to (C-ARG1* (C-ARG1*", "fail *) *)",
          "and * *", "said * (V*)", "so * *"]],
        [["The (ARG1* (ARG1*", "deal *) *)", "was * *", "said (V*) *", "to (C-ARG1* *", "fail *) *",
          "and * *", "said * (V*)", "so * *"]],
    ),
    # R- arguments are types of their own: R-ARG0 predicted as ARG0 is wrong; ARGM-TMP right once, missed once
    "reference_args": (
        [["man (ARG0*) (ARG0*", "who (R-ARG0*) *", "came (V*) *", "yesterday (ARGM-TMP*) *)", "left * (V*)",
          "early * (ARGM-TMP*)"]],
        [["man (ARG0*) (ARG0*", "who (ARG0*) *", "came (V*) *", "yesterday (ARGM-TMP*) *)", "left * (V*)",
          "early * *"]],
    ),
    # three predicates; the response leaves one out ("sell"), adds one where the key has none ("and", skipped by
    # srl-eval), gives its columns in another order, marks a wider V (V is not counted), and mislabels an ARGM
    "multiple_predicates": (
        [["She (ARG0*) (ARG0*) (ARG0*)", "wanted (V*) * *", "to (ARG1* * *", "buy * (V*) *", "and * * *",
          "sell * * (V*)", "it *) (ARG1*) (ARG1*)"],
         ["Rain (ARG0*)", "fell (V*)", "hard (ARGM-MNR*)"]],
        [["She (ARG0*) (ARG0*) *", "wanted * (V* *", "to * *) *", "buy (V*) (ARG1* *", "and * * (V*)",
          "sell * * *", "it (ARG1*) *) *"],
         ["Rain (ARG0*) *", "fell (V*) *", "hard (ARGM-ADV*) (V*)"]],
    ),
    # nested brackets in one column: srl-eval takes the outer phrase as a discontinuous argument made of the inner
    # ones; a C- phrase with no head phrase becomes a plain argument
    "nested_and_orphan": (
        [["we (ARG0*) (ARG0*)", "know (V*) *", "that (ARG1* *", "you * (ARG1*)", "win *) (V*)"]],
        [["we (ARG0*) (C-ARG0*)", "know (V*) *", "that (ARG1* *", "you (ARG2*) (ARG1*)", "win *) (V*)"]],
    ),
    # a document with a sentence without predicates, one whose only predicate gets no argument: nothing right
    "nothing_predicted": (
        [["Hello", "there"], ["Go (V*)", "home (ARG1*)"]],
        [["Hello", "there"], ["Go (V*)", "home *"]],
    ),
}
# fmt: on

# case -> (correct, excess, missed, precision, recall, F1, propositions, perfect props %) as srl-eval.pl printed them
OFFICIAL: dict[str, tuple[int, int, int, float, float, float, int, float]] = {
    "continuation": (1, 1, 1, 50.0, 50.0, 50.0, 2, 50.0),
    "multiple_predicates": (4, 2, 4, 66.67, 50.0, 57.14, 4, 25.0),
    "nested_and_orphan": (3, 2, 1, 60.0, 75.0, 66.67, 2, 50.0),
    "nothing_predicted": (0, 0, 1, 0.0, 0.0, 0.0, 1, 0.0),
    "reference_args": (3, 1, 2, 75.0, 60.0, 66.67, 2, 0.0),
}


def _document(name: str, sentences: list[list[str]]) -> list[str]:
    lines = [f"#begin document ({name}); part 000"]
    for sentence in sentences:
        rows = [row.split(" ") for row in sentence]
        lines += conll_rows(
            name, [row[0] for row in rows], [list(col) for col in zip(*(r[1:] for r in rows), strict=True)]
        )
        lines.append("")
    return [*lines, "#end document"]


def case_files(folder: Path, name: str) -> tuple[Path, Path]:
    """Write a case's key and response ``*_conll`` files (one document)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for which, sentences in zip(("key", "response"), CASES[name], strict=True):
        lines = _document(f"case/{name}", sentences)
        path = folder / f"{name}.{which}_conll"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_port_gives_what_srl_eval_printed(name: str, tmp_path: Path) -> None:
    correct, excess, missed, precision, recall, f1, props, perfect = OFFICIAL[name]
    scores = score_srl(*case_files(tmp_path, name))
    assert (scores["correct"], scores["excess"], scores["missed"], scores["propositions"]) == (
        correct,
        excess,
        missed,
        props,
    )
    got = [round(scores[k], 2) for k in ("precision", "recall", "f1", "perfect_props")]
    assert got == [precision, recall, f1, perfect]


def test_the_example_scores_as_srl_eval_printed(tmp_path: Path) -> None:
    """The task's example (tasks.conll2012.fixtures), its response documents put in the key's order for srl-eval:
    "Overall 10 3 6 76.92 62.50 68.97", 7 propositions, 57.14% perfect."""
    files = example(tmp_path, "srl-conll2012")
    scores = score_srl(files["references"], files["predictions"])
    assert (scores["correct"], scores["excess"], scores["missed"], scores["propositions"]) == (10, 3, 6, 7)
    assert [round(scores[k], 2) for k in ("precision", "recall", "f1", "perfect_props")] == [76.92, 62.5, 68.97, 57.14]
