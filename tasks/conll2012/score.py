"""``harness score srl-conll2012`` and ``harness score coref-conll2012``: a key and a response in the ``*_conll``
layout (see :mod:`tasks.conll2012.reader`), as the official scorers take them.

``--references``: a ``*_conll`` key file, or a folder whose ``*_gold_conll`` files (sorted by path) together are the
key. ``--predictions``: one ``*_conll`` response file holding every key document (``#begin document <name>`` ...
``#end document``, in any order; documents the key lacks are ignored, as the reference coreference scorer ignores
them), each with the key's token rows (same words, same sentence breaks). A response row gives:

- for SRL, its own predicate-argument columns between the eleven first columns and the last one (any number of
  predicates: each column's ``V`` argument names its predicate); scored as ``srl-eval.pl`` scores the props
  (:mod:`tasks.conll2012.srl`);
- for coreference, its last column (``(12``, ``12)``, ``(7)|(12``, ``-``); scored as ``scorer.pl`` v8.01 scores it
  (:mod:`tasks.conll2012.coref`).

A response that misses a key document, has other words or sentence breaks, or whose columns do not parse, raises
:class:`HarnessError` naming the file, line and field.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from harness.errors import HarnessError
from tasks.conll2012 import coref, srl
from tasks.conll2012.reader import FIRST_ARGUMENT, Document, Sentence, aligned, match, read_documents


def _documents(references: Path | str, predictions: Path | str) -> list[tuple[Document, Document]]:
    keys = read_documents(references)
    if not keys:
        raise HarnessError(f"{references}: no '#begin document' in the key")
    responses = read_documents(predictions)
    extra = {doc.name for doc in responses} - {doc.name for doc in keys}
    if extra:
        warnings.warn(f"{predictions}: {len(extra)} document(s) not in the key are ignored, as the official "
                      f"scorers ignore them: {sorted(extra)[:3]}", stacklevel=3)  # fmt: skip
    return list(zip(keys, match(keys, responses, Path(predictions)), strict=True))


# --- SRL ---------------------------------------------------------------------------------------------------------


def propositions(sentence: Sentence, path: Path) -> dict[int, list[srl.Phrase]]:
    """The arguments of each predicate of a sentence, by predicate position (a later column at the same position
    replaces an earlier one, as srl-eval's table does)."""
    width = len(sentence.rows[0])
    if width < FIRST_ARGUMENT + 1:
        raise HarnessError(f"{path}:{sentence.lines[0]}: {width} columns; a *_conll row has at least 12 "
                           "(11, the predicate-argument columns, the coreference column)")  # fmt: skip
    props: dict[int, list[srl.Phrase]] = {}
    for column in range(FIRST_ARGUMENT, width - 1):
        position, args = predicate_column(sentence, column, path)
        props[position] = args
    return props


def predicate_column(sentence: Sentence, column: int, path: Path) -> tuple[int, list[srl.Phrase]]:
    """The predicate position (the first token of the ``V`` argument) and the arguments of one column."""
    where = f"{path}:{sentence.lines[0]}: predicate-argument column {column + 1}"
    args = srl.arguments(srl.read_phrases([row[column] for row in sentence.rows], where))
    verbs = [arg.start for arg in args if arg.type == "V"]
    if not verbs:
        raise HarnessError(f"{where} has no V argument (its predicate)")
    return verbs[0], args


def score_srl(references: Path | str, predictions: Path | str) -> dict[str, float]:
    """srl-eval's overall ``precision``, ``recall``, ``f1`` (``V`` excluded) and ``perfect_props``, with the counts
    ``correct``, ``excess``, ``missed`` and ``propositions``."""
    outcome = srl.Outcome()
    for key, response in _documents(references, predictions):
        aligned(key, response, sentences=True)
        for gold, mine in zip(key.sentences, response.sentences, strict=True):
            outcome.merge(srl.evaluate_sentence(propositions(gold, key.path), propositions(mine, response.path)))
    return outcome.scores()


# --- coreference -------------------------------------------------------------------------------------------------


def chains(doc: Document) -> list[list[coref.Mention]]:
    """The entities of a document, from the last column of its rows."""
    return coref.read_chains([(line, row[-1]) for line, row in doc.rows()], doc.path, doc.name)


def score_coref(references: Path | str, predictions: Path | str) -> dict[str, float]:
    """``muc_*``, ``bcub_*``, ``ceafe_*``, ``ceafm_*`` and ``mentions_*`` (identification) recall, precision and F1,
    and ``f1``, the mean of the MUC, B³ and CEAFφ4 F1s: percentages, summed over documents as scorer.pl sums them."""
    totals = {name: coref.Counts() for name in (*coref.METRICS, "mentions")}
    repeated = 0
    for key, response in _documents(references, predictions):
        aligned(key, response, sentences=False)
        doc = coref.identify(chains(key), chains(response), repeated, f"{response.path}:{response.line}")
        repeated = doc.repeated
        for name, counts in coref.document_counts(doc).items():
            totals[name].add(counts)
    return coref.conll_scores(totals)
