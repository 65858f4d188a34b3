"""Readers of the Debian packages the budget corpora are built from, each in the format the package installs.

Every reader yields :class:`Document` ``(source, key, title, paragraphs, label)`` in a fixed order (the order of
the files, sorted, and of the entries in them), so a build is a pure function of the installed files. ``root`` is
the file-system root the packages are installed under (``/`` on a set-up machine; a tiny copy of the same tree in
the tests, written by :mod:`tasks.debian_corpora.fixtures`).

- ``wordnet`` (``wordnet-base``, WordNet 3.0, Princeton University; WordNet 3.0 licence, BSD-like):
  ``usr/share/wordnet/data.{noun,verb,adj,adv}``, one synset a line (``wndb(5WN)``): ``offset lex_filenum ss_type
  w_cnt word lex_id ... | gloss``, ``w_cnt`` in hexadecimal; lines starting with two spaces are the licence
  header. A document is a synset: key ``<pos>:<offset>``, title its first word (``_`` read as a space, an
  adjective marker such as ``(a)`` dropped), one paragraph, the gloss (definition and quoted examples), label the
  lexicographer file's name (``lexnames(5WN)``, 45 names, :data:`LEXNAMES`).
- ``gcide`` (``dict-gcide``, Webster's 1913 with additions; GPL-2+), ``devil`` (``dict-devil``, Bierce's The
  Devil's Dictionary, public domain), ``jargon`` (``dict-jargon``, the Jargon File 4.4.7, public domain),
  ``foldoc`` (``dict-foldoc``, the Free On-line Dictionary of Computing; GFDL 1.2): dictd databases,
  ``usr/share/dictd/<name>.index`` (``headword<TAB>offset<TAB>length``, the numbers in dictd's base-64 digits
  ``A-Za-z0-9+/``, most significant first) over ``<name>.dict.dz`` (dictzip, read as gzip) or ``<name>.dict``.
  A document is one article (one distinct ``(offset, length)`` span, in file order; spans that a ``00-...``
  database-information headword points to are skipped): key its byte offset, title its first headword in index
  order, paragraphs the article's blank-line-separated blocks with their lines joined by one space, after
  :func:`clean_dict_text`. No label.
- ``fortunes`` (``fortunes``, ``fortunes-min``: BSD fortune(6) data, BSD licence): ``usr/share/games/fortunes/<file>``,
  fortunes separated by lines holding only ``%``; ``.dat`` indexes, ``.u8`` links and :data:`FORTUNE_SKIP` files are
  not read. A document is one fortune: key ``<file>:<number>`` (0-based), title ``Fortune`` (the category is the
  classification task's label, so it is kept out of the language-modelling text), paragraphs its
  blank-line-separated blocks with lines joined, label the file name. Overstruck characters (``x<BS>x``) and other
  control characters are removed.
"""

from __future__ import annotations

import gzip
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from harness.errors import HarnessError

# lexnames(5WN): the lexicographer files, by their two-digit number in data.* lines.
LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)  # fmt: skip
WORDNET_POS = ("noun", "verb", "adj", "adv")
WORDNET_DIR = "usr/share/wordnet"
DICTD_DIR = "usr/share/dictd"
FORTUNE_DIR = "usr/share/games/fortunes"
DICT_SOURCES = ("gcide", "devil", "jargon", "foldoc")
SOURCES = ("wordnet", *DICT_SOURCES, "fortunes")
FORTUNE_SKIP = frozenset({"ascii-art", "translate-me"})  # pictures, and text to be translated (not English)
# Debian package, licence (from /usr/share/doc/<package>/copyright) per source.
PACKAGES = {
    "wordnet": ("wordnet-base", "WordNet 3.0 licence (Princeton; BSD-like, attribution)"),
    "gcide": ("dict-gcide", "GPL-2+"),
    "devil": ("dict-devil", "public domain"),
    "jargon": ("dict-jargon", "public domain"),
    "foldoc": ("dict-foldoc", "GFDL-1.2"),
    "fortunes": ("fortunes fortunes-min", "BSD-3-Clause (fortune-mod); the quotations' own authors"),
}
B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


class Document(NamedTuple):
    source: str
    key: str
    title: str
    paragraphs: tuple[str, ...]
    label: str | None = None


def clean_text(text: str) -> str:
    """NFKC, overstrikes (``x<BS>x``) and control characters removed, runs of white space made one space."""
    text = re.sub(r".\x08", "", unicodedata.normalize("NFKC", text))
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return " ".join(text.split())


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read ({exc.strerror or exc}); is its Debian package installed?") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _blocks(text: str) -> tuple[str, ...]:
    """Blank-line-separated blocks, each cleaned to one line; empty blocks dropped."""
    blocks = (clean_text(block) for block in re.split(r"\n[ \t]*\n", text))
    return tuple(block for block in blocks if block)


# --- WordNet -----------------------------------------------------------------------------------------------------


def _synset(path: Path, number: int, line: str, pos: str) -> Document:
    fields, sep, gloss = line.partition(" | ")
    parts = fields.split()
    try:
        lexname = LEXNAMES[int(parts[1])]
        words = parts[4 : 4 + 2 * int(parts[3], 16) : 2]
    except (IndexError, ValueError):
        raise HarnessError(f"{path}:{number}: not a WordNet data line (offset lex_filenum ss_type w_cnt ...)") from None
    if not sep or not words or not clean_text(gloss):
        raise HarnessError(f"{path}:{number}: synset {parts[0]} has no words or no gloss")
    title = re.sub(r"\([a-z]+\)$", "", words[0]).replace("_", " ")
    return Document("wordnet", f"{pos}:{parts[0]}", title, (clean_text(gloss),), lexname)


def read_wordnet(root: Path) -> Iterator[Document]:
    """Every synset of ``data.noun``, ``data.verb``, ``data.adj``, ``data.adv``, in that order and file order."""
    for pos in WORDNET_POS:
        path = Path(root) / WORDNET_DIR / f"data.{pos}"
        for number, line in enumerate(_read(path).split("\n"), start=1):
            if line.strip() and not line.startswith("  "):
                yield _synset(path, number, line, pos)


# --- dictd databases ---------------------------------------------------------------------------------------------


def decode_b64(digits: str) -> int:
    """A dictd index number: base 64 in the digits ``A-Za-z0-9+/``, most significant first."""
    value = 0
    for digit in digits:
        value = value * 64 + B64[digit]
    return value


def _dict_bytes(folder: Path, name: str) -> bytes:
    for path in (folder / f"{name}.dict.dz", folder / f"{name}.dict"):
        if path.exists():
            try:
                return gzip.decompress(path.read_bytes()) if path.suffix == ".dz" else path.read_bytes()
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise HarnessError(f"{path}: cannot read dictd data: {exc}") from None
    raise HarnessError(f"{folder / name}.dict[.dz]: missing (apt-get install dict-{name})")


def read_dict_index(path: Path) -> dict[tuple[int, int], str]:
    """``(offset, length) -> first headword`` of a dictd index, in index order; database-information spans dropped."""
    spans: dict[tuple[int, int], str] = {}
    info: set[tuple[int, int]] = set()
    for number, line in enumerate(_read(path).split("\n"), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 3 or not all(ch in B64 for ch in fields[1] + fields[2]):
            raise HarnessError(f"{path}:{number}: expected 'headword<TAB>offset<TAB>length' in dictd base 64")
        span = (decode_b64(fields[1]), decode_b64(fields[2]))
        if fields[0].startswith("00-"):
            info.add(span)
        else:
            spans.setdefault(span, fields[0])
    return {span: word for span, word in spans.items() if span not in info}


def clean_dict_text(text: str) -> str:
    """Markup of the dictd databases removed: GCIDE's pronunciations ``\\Ab*jure"\\``, cross-reference braces
    ``{...}``, and whole blocks that are only a source tag (``[1913 Webster]``) or a FOLDOC date ``(1996-05-13)``."""
    text = re.sub(r"[ \t]*\\[^\\\n]*\\", "", text).replace("{", "").replace("}", "")
    text = re.sub(r"^[ \t]*\[[^\]\n]*\][ \t]*$", "", text, flags=re.MULTILINE)
    return re.sub(r"^[ \t]*\(\d{4}-\d{2}-\d{2}\)[ \t]*$", "", text, flags=re.MULTILINE)


def read_dictd(root: Path, name: str) -> Iterator[Document]:
    """The articles of the dictd database ``name`` in file order (see the module docstring)."""
    folder = Path(root) / DICTD_DIR
    spans = read_dict_index(folder / f"{name}.index")
    data = _dict_bytes(folder, name)
    for (offset, length), headword in sorted(spans.items()):
        if offset + length > len(data):
            raise HarnessError(f"{folder / name}.index: {headword!r} points past the end of {name}.dict")
        article = data[offset : offset + length].decode("utf-8", errors="replace")
        paragraphs = _blocks(clean_dict_text(article))
        if paragraphs:
            yield Document(name, str(offset), clean_text(headword), paragraphs)


# --- fortunes ----------------------------------------------------------------------------------------------------


def fortune_files(root: Path) -> list[Path]:
    """The fortune data files, sorted by name (``.dat`` indexes, ``.u8`` links and :data:`FORTUNE_SKIP` left out)."""
    folder = Path(root) / FORTUNE_DIR
    if not folder.is_dir():
        raise HarnessError(f"{folder}: missing (apt-get install fortunes fortunes-min)")
    return sorted(
        p for p in folder.iterdir()
        if p.is_file() and not p.is_symlink() and p.suffix not in (".dat", ".u8") and p.name not in FORTUNE_SKIP
    )  # fmt: skip


def read_fortunes(root: Path) -> Iterator[Document]:
    """Every fortune of every file (see the module docstring)."""
    for path in fortune_files(root):
        entries = re.split(r"^%[ \t]*$", _read(path), flags=re.MULTILINE)
        number = 0
        for entry in entries:
            paragraphs = _blocks(entry)
            if paragraphs:
                yield Document("fortunes", f"{path.name}:{number}", "Fortune", paragraphs, path.name)
                number += 1


def read_source(root: Path, source: str) -> Iterator[Document]:
    """The documents of one source (a name in :data:`SOURCES`)."""
    if source == "wordnet":
        return read_wordnet(root)
    if source in DICT_SOURCES:
        return read_dictd(root, source)
    if source == "fortunes":
        return read_fortunes(root)
    raise HarnessError(f"unknown corpus source {source!r}; known: {', '.join(SOURCES)}")
