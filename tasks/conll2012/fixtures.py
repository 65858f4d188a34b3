"""A tiny CoNLL-2012 English tree in the exact ``*_gold_conll`` layout, for tests and the smoke tier.

``write_tiny_conll2012(root)`` writes ``root/conll-2012/v4/data/{train,development,test}/data/english/annotations/
nw/tiny/00/tiny_000N.v4_gold_conll``, one document a file, laid out as the CoNLL-2012 scripts write them:
``#begin document (nw/tiny/00/tiny_0001); part 000``, one token a line in space-padded columns (document id, part,
word number, word, POS, parse bit, predicate lemma, frameset id, word sense, speaker, named entities, one
predicate-argument column per predicate, coreference), a blank line after each sentence, ``#end document``. The text
is written for these files, not taken from OntoNotes; it has a relative clause with an ``R-ARG1``,
a modal, nested mentions of different entities and a pronoun inside a mention. Output is byte-for-byte deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPLITS = ("train", "development", "test")
ANNOTATIONS = Path("conll-2012", "v4", "data")
LANGUAGE = Path("data", "english", "annotations")

# one sentence: (words, POS tags, parse bits, {predicate position: (lemma, frameset, argument column)}, coref cells)
_Sentence = tuple[str, str, str, dict[int, tuple[str, str, str]], str]
_DOCUMENTS: dict[str, tuple[_Sentence, ...]] = {
    "nw/tiny/00/tiny_0001": (
        ("The harbour board said it would close the old pier .",
         "DT NN NN VBD PRP MD VB DT JJ NN .",
         "(TOP(S(NP* * *) (VP* (SBAR(S(NP*) (VP* (VP* (NP* * *))))))) *))",
         {3: ("say", "01", "(ARG0* * *) (V*) (ARG1* * * * * *) *"),
          6: ("close", "01", "* * * * (ARG0*) (ARGM-MOD*) (V*) (ARG1* * *) *")},
         "(1 - 1) - (1) - - (2 - 2) -"),
        ("The pier , which was built in 1811 , needs repairs .",
         "DT NN , WDT VBD VBN IN CD , VBZ NNS .",
         "(TOP(S(NP(NP* *) * (SBAR(WHNP*) (S(VP* (VP* (PP* (NP*))))))) *) (VP* (NP*)) *))",
         {5: ("build", "01", "(ARG1* *) * (R-ARG1*) * (V*) (ARGM-TMP* *) * * * *"),
          9: ("need", "01", "(ARG0* * * * * * * *) * (V*) (ARG1*) *")},
         "(2 - - - - - - (3) 2) - (4) -"),
        ("Repairs began that year .",
         "NNS VBD DT NN .",
         "(TOP(S(NP*) (VP* (NP* *)) *))",
         {1: ("begin", "01", "(ARG1*) (V*) (ARGM-TMP* *) *")},
         "(4) - (3 3) -"),
    ),
    "nw/tiny/00/tiny_0002": (
        ("Anna Berg sold her boat .",
         "NNP NNP VBD PRP$ NN .",
         "(TOP(S(NP* *) (VP* (NP* *)) *))",
         {2: ("sell", "01", "(ARG0* *) (V*) (ARG1* *) *")},
         "(5 5) - (6|(5) 6) -"),
        ("She bought a house by the sea .",
         "PRP VBD DT NN IN DT NN .",
         "(TOP(S(NP*) (VP* (NP(NP* *) (PP* (NP* *)))) *))",
         {1: ("buy", "01", "(ARG0*) (V*) (ARG1* * * * *) *")},
         "(5) - (7 - - - 7) -"),
    ),
}  # fmt: skip
_SPLIT_DOCUMENTS = {"train": ("nw/tiny/00/tiny_0001", "nw/tiny/00/tiny_0002"), "development": ("nw/tiny/00/tiny_0002",),
                    "test": ("nw/tiny/00/tiny_0001", "nw/tiny/00/tiny_0002")}  # fmt: skip


def _pad(table: list[list[str]]) -> list[str]:
    """Columns padded to their widest cell (numbers right-aligned), three spaces apart, as the CoNLL files are."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for row in table:
        padded = enumerate(zip(row, widths, strict=True))
        cells = [cell.rjust(width) if i in (1, 2) else cell.ljust(width) for i, (cell, width) in padded]
        lines.append("   ".join(cells).rstrip())
    return lines


def conll_rows(
    document: str,
    words: Sequence[str],
    arguments: Sequence[Sequence[str]],
    coref: Sequence[str] | None = None,
    columns: dict[int, Sequence[str]] | None = None,
) -> list[str]:
    """The space-padded rows of one sentence: ``arguments`` one column per predicate, ``coref`` the last column
    (``-`` everywhere when ``None``); ``columns`` overrides the other columns by index (POS 4 ... NE 10), which
    default to placeholders (``-``, ``*`` in the parse and NE columns)."""
    doc_id = document.strip("()").split(")")[0]
    defaults = {4: ["XX"] * len(words), 5: ["*"] * len(words), 10: ["*"] * len(words)}
    given = {**defaults, **(columns or {})}
    table = []
    for i, word in enumerate(words):
        fixed = [doc_id, "0", str(i), word] + [given[c][i] if c in given else "-" for c in range(4, 11)]
        table.append([*fixed, *(column[i] for column in arguments), coref[i] if coref else "-"])
    return _pad(table)


def _sentence_rows(name: str, sentence: _Sentence, with_coref: bool = True) -> list[str]:
    words, pos, parse, predicates, coref = (part.split() if isinstance(part, str) else part for part in sentence)
    lemma, frameset = ["-"] * len(words), ["-"] * len(words)
    for position, (lemma_text, frameset_id, _) in predicates.items():
        lemma[position], frameset[position] = lemma_text, frameset_id
    speaker = ["-"] * len(words)
    arguments = [predicates[p][2].split() for p in sorted(predicates)]
    columns = {4: pos, 5: parse, 6: lemma, 7: frameset, 9: speaker}
    return conll_rows(name, words, arguments, coref if with_coref else None, columns)


def document_lines(name: str, sentences: Sequence[_Sentence]) -> list[str]:
    """``#begin document (name); part 000``, the sentences' rows with a blank line after each, ``#end document``."""
    lines = [f"#begin document ({name}); part 000"]
    for sentence in sentences:
        lines += [*_sentence_rows(name, sentence), ""]
    return [*lines, "#end document"]


def split_folder(root: Path | str, split: str) -> Path:
    """``root/conll-2012/v4/data/<split>/data/english/annotations``."""
    return Path(root) / ANNOTATIONS / split / LANGUAGE


def write_tiny_conll2012(root: Path | str) -> Path:
    """Write the tiny tree (all three splits) under ``root``; returns ``root`` (for a tier's ``prepare`` step)."""
    for split, names in _SPLIT_DOCUMENTS.items():
        for name in names:
            path = split_folder(root, split) / f"{name}.v4_gold_conll"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(document_lines(name, _DOCUMENTS[name])) + "\n", encoding="utf-8", newline="\n")
    return Path(root)


# --- scoring example ---------------------------------------------------------------------------------------------

# the example response's changes: SRL (document, sentence) -> predicate columns; coref (document, sentence) -> cells
_SRL_RESPONSE = {
    ("nw/tiny/00/tiny_0001", 0): {3: "(ARG0* * *) (V*) (ARG1* * * * * *) *"},  # "close" left out
    ("nw/tiny/00/tiny_0001", 1): {5: "(ARG1* *) * (ARG1*) * (V*) (ARGM-LOC* *) * * * *",  # R-ARG1, ARGM-TMP wrong
                                  9: "(ARG0* * * * * * * *) * (V*) (ARG1*) *"},
    ("nw/tiny/00/tiny_0002", 1): {1: "(ARG0*) (V*) (ARG1* *) * * * *", 6: "* * * * * * (V*) *"},  # short ARG1; "sea"
}  # fmt: skip
_COREF_RESPONSE = {
    ("nw/tiny/00/tiny_0001", 0): "(1 - 1) - (2) - - (2 - 2) -",  # "it" joins the pier
    ("nw/tiny/00/tiny_0001", 1): "(2 - - - - - - - 2) - (4) -",  # "1811" missed
    ("nw/tiny/00/tiny_0002", 0): "(5 5) - (5) (8) -",  # "her boat" missed, "boat" invented as a singleton
}  # fmt: skip


def _response_sentence(name: str, index: int, sentence: _Sentence, task_id: str) -> list[str]:
    words, pos, parse, predicates, coref = sentence
    if task_id == "srl-conll2012":
        changed = _SRL_RESPONSE.get((name, index))
        if changed is not None:
            predicates = {p: ("-", "-", column) for p, column in changed.items()}
        return _sentence_rows(name, (words, pos, parse, predicates, coref), with_coref=False)
    return _sentence_rows(name, (words, pos, parse, predicates, _COREF_RESPONSE.get((name, index), coref)))


def example(root: Path | str, task_id: str) -> dict[str, Path]:
    """A tiny scoring example: the tiny test split's folder as the key and a response ``*_conll`` file that
    misses, mislabels and invents arguments (``srl-conll2012``) or mentions and links (``coref-conll2012``)."""
    write_tiny_conll2012(root)
    lines: list[str] = []
    for name in reversed(_SPLIT_DOCUMENTS["test"]):  # the response may hold the documents in any order
        lines.append(f"#begin document ({name}); part 000")
        for index, sentence in enumerate(_DOCUMENTS[name]):
            lines += [*_response_sentence(name, index, sentence, task_id), ""]
        lines.append("#end document")
    predictions = Path(root) / f"{task_id}.response_conll"
    predictions.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return {"references": split_folder(root, "test"), "predictions": predictions}
