"""A tiny copy of the Debian files the corpora are built from, in the packages' own formats, and scoring examples.

:func:`write_debian_tree` writes, under ``root`` (a stand-in for ``/``):

- ``usr/share/wordnet/data.{noun,verb,adj,adv}``: a licence header (lines starting with two spaces), then synset
  lines ``offset lex_filenum ss_type w_cnt word lex_id p_cnt | gloss`` (offset = the line's byte offset, w_cnt
  in hexadecimal), spread over several lexicographer files; two synsets share a gloss (one under another
  lexicographer file), to exercise de-duplication and the ambiguity rule;
- ``usr/share/dictd/{gcide,devil,jargon,foldoc}.index`` + ``.dict.dz``: dictd databases (index numbers in dictd's
  base 64, data gzip-compressed as dictzip is), with a ``00-database-info`` entry, a GCIDE pronunciation and
  ``[1913 Webster]`` tags, FOLDOC ``{links}`` and a date line;
- ``usr/share/games/fortunes/<category>`` (+ ``.dat`` and ``.u8`` files the reader must skip): ``%``-separated
  fortunes, one with overstruck characters, one repeated in two categories.

The sentences are made from small word lists (deterministic), enough documents that every split gets some.
"""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

from tasks.debian_corpora.sources import DICTD_DIR, FORTUNE_DIR, WORDNET_DIR
from tasks.language_modeling.fixtures import WIKITEXT_EXAMPLE
from tasks.language_modeling.fixtures import example as lm_example

ADJECTIVES = ("quiet", "bright", "narrow", "heavy", "gentle", "bitter", "hollow", "rapid")
NOUNS = ("river", "lantern", "harbour", "meadow", "engine", "letter", "garden", "window", "kettle")
VERBS = ("carries", "follows", "covers", "turns", "holds", "crosses")
FORTUNE_CATEGORIES = ("people", "science", "work")
LEX_FILES = {"noun": (5, 6, 18), "verb": (29, 38), "adj": (0, 1), "adv": (2,)}
SS_TYPE = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
SHARED_GLOSS = "a thing that is shared by two entries"


def phrases():
    """An endless, fixed sequence of distinct short phrases."""
    for adjective, noun, verb, other in itertools.product(ADJECTIVES, NOUNS, VERBS, reversed(NOUNS)):
        if noun != other:
            yield f"a {adjective} {noun} that {verb} the {other}"


def encode_b64(value: int) -> str:
    digits = ""
    while True:
        digits = B64[value % 64] + digits
        value //= 64
        if not value:
            return digits


def _wordnet_file(pos: str, glosses: list[str]) -> bytes:
    out = b"".join(f"  {n} licence header line of the tiny copy  \n".encode() for n in range(1, 4))
    for index, gloss in enumerate(glosses):
        lex = LEX_FILES[pos][index % len(LEX_FILES[pos])]
        word = f"{NOUNS[index % len(NOUNS)]}_{pos}{index}" + ("(a)" if pos == "adj" and index == 0 else "")
        out += f"{len(out):08d} {lex:02d} {SS_TYPE[pos]} 01 {word} 0 000 | {gloss}  \n".encode()
    return out


def write_wordnet(root: Path, per_pos: int, phrase) -> None:
    folder = root / WORDNET_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for pos in LEX_FILES:
        glosses = [f'{next(phrase)}; "the {next(phrase)}"' for _ in range(per_pos)]
        if pos in ("noun", "verb"):
            glosses.append(SHARED_GLOSS)  # under noun.animal and verb.body: an ambiguous duplicate
        (folder / f"data.{pos}").write_bytes(_wordnet_file(pos, glosses))


def _article(name: str, headword: str, body: str) -> str:
    if name == "gcide":
        return f'{headword.title()} \\{headword}"\\, n.\n   {body}.\n   [1913 Webster]\n\n'
    if name == "foldoc":
        return f"{headword}\n\n   {{{body}}}.\n\n   (2003-07-05)\n\n"
    return f"{headword.upper()}, n.  {body}.\n\n"


def write_dictd(root: Path, name: str, articles: int, phrase) -> None:
    folder = root / DICTD_DIR
    folder.mkdir(parents=True, exist_ok=True)
    data, index = b"", []
    entries = [("00-database-info", f"The tiny {name} database.\n\n")]
    for n in range(articles):
        headword = f"{name}word{n}"
        entries.append((headword, _article(name, headword, f"{next(phrase)}, and {next(phrase)}")))
    for headword, text in entries:
        raw = text.encode()
        index.append(f"{headword}\t{encode_b64(len(data))}\t{encode_b64(len(raw))}\n")
        data += raw
    (folder / f"{name}.index").write_text("".join(sorted(index)), encoding="utf-8")
    (folder / f"{name}.dict.dz").write_bytes(gzip.compress(data, mtime=0))


def write_fortunes(root: Path, per_category: int, phrase) -> None:
    folder = root / FORTUNE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for number, category in enumerate(FORTUNE_CATEGORIES):
        fortunes = [f"The {next(phrase)}.\n\t-- Someone {n}\n" for n in range(per_category)]
        fortunes.append("Every kettle sings the same song.\n")  # in every category: ambiguous
        if number == 0:
            fortunes[0] = "B\bBo\bol\bld\bd words, said twice.\n\nAnd a second paragraph.\n"
        (folder / category).write_text("%\n".join(fortunes) + "%\n", encoding="utf-8")
        (folder / f"{category}.dat").write_bytes(b"\x00\x00\x00\x02binary index")
    (folder / "ascii-art").write_text("  /\\_/\\\n ( o.o )\n%\n", encoding="utf-8")


def write_debian_tree(root: Path, synsets: int = 60, articles: int = 30, fortunes: int = 40) -> Path:
    """The tiny source tree under ``root`` (per part of speech, per dictionary, per fortune file); returns root."""
    root = Path(root)
    phrase = phrases()
    write_wordnet(root, synsets, phrase)
    for name in ("gcide", "devil", "jargon", "foldoc"):
        write_dictd(root, name, articles, phrase)
    write_fortunes(root, fortunes, phrase)
    return root


# Scoring example for debian-lm: WikiText-103's (2 lines, 5 tokens, perplexity e^2), as the corpus has its layout
EXAMPLE_LOG_PROBS = WIKITEXT_EXAMPLE


def example(root: Path, task_id: str) -> dict[str, Path]:
    """References and predictions in the task's formats: ``debian-lm`` as WikiText-103 (perplexity e^2 over 5
    tokens), or the classification tasks (``id,label`` / ``id,prediction``, 3 of 4 right: accuracy 75)."""
    if task_id == "debian-lm":
        return lm_example(root, "wikitext-103")
    from tasks.text_classification.fixtures import example as classification_example

    return classification_example(root, task_id)
