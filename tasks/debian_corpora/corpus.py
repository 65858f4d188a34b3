"""Build the text corpora: the ``debian-lm`` language-modelling corpus and the two classification datasets.

One pass over the sources (:mod:`tasks.debian_corpora.sources`, in the order of :data:`~sources.SOURCES`, each in
its file order) gives the documents; then:

1. **De-duplication.** A document's body is its paragraphs, tokenised (:mod:`tasks.debian_corpora.tokenize`). Of
   documents with the same body only the first is kept (a synset gloss shared by two synsets, a fortune in two
   files). A kept document whose body also came with a different label is marked ambiguous and left out of the
   classification datasets (its label is not a function of its text).
2. **Split by document.** ``bucket = int(sha256("<source>:<key>")[:8], 16) % 100``: buckets 0-4 are ``valid``,
   5-9 ``test``, 10-99 ``train``; the classification datasets' ``test`` is buckets 0-9 and ``train`` the rest.
   So no classification test text is in the language model's training split, and a model pre-trained on
   ``wiki.train.tokens`` never saw a test example (nor, since titles hold no labels, any label).
3. **Vocabulary.** Tokens seen at least ``min_count`` (3) times in ``train`` are kept; every other token, in every
   split, is ``<unk>``, as in WikiText-103.

Output, under ``out/`` (each folder written to a temporary sibling and renamed into place):

- ``debian-lm/wiki.{train,valid,test}.tokens``: WikiText-103's layout. Per document: a line `` ``, the heading
  `` = Title = ``, a line `` ``, then one line per paragraph (`` token token ... ``). ``corpus.json``: counts,
  sources, Debian packages and licences, the data hash.
- ``wordnet-lexname/`` and ``fortune-category/``: Zhang et al.'s CSV layout as ``tasks.text_classification``
  reads it: ``train.csv`` / ``test.csv`` rows ``"<class index from 1>","<text>"`` (inner ``"`` doubled, paragraphs
  joined by the two characters ``\\n``), ``classes.txt`` (one class name a line, in index order), ``readme.txt``,
  ``corpus.json``. WordNet: text = the gloss, class = the lexicographer file (the 45 of ``lexnames(5WN)``, all of
  them, in number order). Fortunes: text = the fortune, class = its file, for the files with at least
  :data:`MIN_FORTUNES` kept fortunes (sorted by name).

The data hash of a corpus is the sha256 of its data files (:func:`folder_hash`); ``corpus.json`` records it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from tasks.debian_corpora import sources as src
from tasks.debian_corpora.tokenize import BLANK_LINE, MIN_COUNT, UNK, heading, text_line, tokenize
from tasks.imagenet.fixtures import atomic_fixture
from tasks.text_files import files_hash

LM_SPLITS = ("train", "valid", "test")
LM_FILES = {split: f"wiki.{split}.tokens" for split in LM_SPLITS}
CLASSIFICATION_FILES = ("train.csv", "test.csv", "classes.txt")
MIN_FORTUNES = 100
CORPORA = ("debian-lm", "wordnet-lexname", "fortune-category")


class Kept(NamedTuple):
    """A de-duplicated document: the source document, its split and its tokenised title and paragraphs."""

    doc: src.Document
    split: str
    title: str
    paragraphs: tuple[str, ...]
    ambiguous: bool


def bucket(source: str, key: str) -> int:
    """The document's bucket in 0..99, from the sha256 of ``<source>:<key>``."""
    return int(hashlib.sha256(f"{source}:{key}".encode()).hexdigest()[:8], 16) % 100


def lm_split(source: str, key: str) -> str:
    b = bucket(source, key)
    return "valid" if b < 5 else "test" if b < 10 else "train"


def classification_split(source: str, key: str) -> str:
    return "test" if bucket(source, key) < 10 else "train"


def collect(root: Path, sources: Sequence[str] = src.SOURCES) -> list[Kept]:
    """Every source's documents, tokenised and de-duplicated, in source then file order."""
    kept: list[Kept] = []
    first: dict[str, int] = {}  # body -> index in kept
    labels: dict[str, set[str | None]] = {}
    for source in sources:
        for doc in src.read_source(root, source):
            paragraphs = tuple(" ".join(tokenize(p)) for p in doc.paragraphs)
            body = "\n".join(paragraphs)
            labels.setdefault(body, set()).add(doc.label)
            if body not in first:
                first[body] = len(kept)
                title = " ".join(tokenize(doc.title)) or "?"
                kept.append(Kept(doc, lm_split(doc.source, doc.key), title, paragraphs, False))
    for body, index in first.items():
        if len(labels[body]) > 1:
            kept[index] = kept[index]._replace(ambiguous=True)
    return kept


def vocabulary(kept: Iterable[Kept], min_count: int = MIN_COUNT) -> frozenset[str]:
    """Tokens seen at least ``min_count`` times in the training split's titles and paragraphs."""
    counts: Counter[str] = Counter()
    for item in kept:
        if item.split == "train":
            counts.update(item.title.split())
            for paragraph in item.paragraphs:
                counts.update(paragraph.split())
    return frozenset(token for token, count in counts.items() if count >= min_count)


def _unk(line: str, vocab: frozenset[str]) -> list[str]:
    return [token if token in vocab else UNK for token in line.split()]


def lm_text(kept: Iterable[Kept], split: str, vocab: frozenset[str]) -> str:
    """The WikiText-layout text of one split."""
    lines = []
    for item in kept:
        if item.split == split:
            lines += [BLANK_LINE, heading(_unk(item.title, vocab)), BLANK_LINE]
            lines += [text_line(_unk(paragraph, vocab)) for paragraph in item.paragraphs]
    return "".join(lines)


def folder_hash(folder: Path, names: Iterable[str]) -> str:
    """sha256 over ``name\\0 size\\0 bytes`` of each data file, in the order given: the corpus's data hash
    (:func:`tasks.text_files.files_hash`, as WikiText-103's)."""
    return files_hash(folder, names, "; build the corpus first")


def package_versions(root: Path, packages: Iterable[str]) -> dict[str, str | None]:
    """Installed versions of Debian packages (``dpkg-query``) when ``root`` is ``/``; ``None`` otherwise or unknown."""
    versions: dict[str, str | None] = {}
    for package in packages:
        version = None
        if Path(root).resolve() == Path("/") and shutil.which("dpkg-query"):
            done = subprocess.run(
                ["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True, check=False
            )
            version = done.stdout.strip() or None if done.returncode == 0 else None
        versions[package] = version
    return versions


def _source_info(root: Path, sources: Iterable[str]) -> list[dict]:
    info = []
    for source in sources:
        packages, licence = src.PACKAGES[source]
        info.append({"source": source, "licence": licence, "packages": package_versions(root, packages.split())})
    return info


def _write_json(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


# --- writers -----------------------------------------------------------------------------------------------------


def _write_lm(folder: Path, kept: Sequence[Kept], vocab: frozenset[str], info: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    counts = {}
    for split, name in LM_FILES.items():
        text = lm_text(kept, split, vocab)
        (folder / name).write_text(text, encoding="utf-8")
        counts[split] = {
            "documents": sum(item.split == split for item in kept),
            "tokens": len(text.split()),  # words, as WikiText counts them (no <eos>)
            "unk": text.split().count(UNK),
        }
    payload = {**info, "corpus": "debian-lm", "splits": counts, "vocabulary": len(vocab) + 1}
    _write_json(folder / "corpus.json", {**payload, "data_hash": folder_hash(folder, LM_FILES.values())})


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def classification_rows(kept: Iterable[Kept], source: str, classes: Sequence[str]) -> dict[str, list[str]]:
    """CSV lines per split (``train``, ``test``) of the labelled, unambiguous documents of ``source``."""
    index = {name: number for number, name in enumerate(classes, start=1)}
    rows: dict[str, list[str]] = {"train": [], "test": []}
    for item in kept:
        doc = item.doc
        if doc.source == source and not item.ambiguous and doc.label in index:
            text = "\\n".join(doc.paragraphs)
            rows[classification_split(doc.source, doc.key)].append(f'"{index[doc.label]}",{_csv_field(text)}\n')
    return rows


def fortune_classes(kept: Iterable[Kept], minimum: int = MIN_FORTUNES) -> tuple[str, ...]:
    """Fortune files with at least ``minimum`` kept, unambiguous fortunes, sorted by name."""
    counts = Counter(item.doc.label for item in kept if item.doc.source == "fortunes" and not item.ambiguous)
    return tuple(sorted(label for label, count in counts.items() if count >= minimum))


def _write_classification(folder: Path, corpus: str, rows: dict[str, list[str]], classes: Sequence[str], info: dict):
    folder.mkdir(parents=True, exist_ok=True)
    for split, lines in rows.items():
        (folder / f"{split}.csv").write_text("".join(lines), encoding="utf-8")
    (folder / "classes.txt").write_text("".join(f"{name}\n" for name in classes), encoding="utf-8")
    (folder / "readme.txt").write_text(
        f"{corpus}: built from Debian packages by tasks.debian_corpora (see docs/corpora.md). Zhang et al. (2015) "
        "CSV layout: class index from 1, then the text; classes.txt lists the classes in index order.\n",
        encoding="utf-8",
    )
    sizes = {split: len(lines) for split, lines in rows.items()}
    payload = {**info, "corpus": corpus, "classes": len(classes), "examples": sizes}
    _write_json(folder / "corpus.json", {**payload, "data_hash": folder_hash(folder, CLASSIFICATION_FILES)})


def build_text(out: Path, root: Path = Path("/"), min_count: int = MIN_COUNT, min_fortunes: int = MIN_FORTUNES):
    """Build ``debian-lm``, ``wordnet-lexname`` and ``fortune-category`` under ``out``; returns ``{corpus: hash}``.

    ``root`` is where the Debian packages are installed (``/``). A corpus folder already built with the same
    parameters is left alone; one built with others (or half-written) is an error naming it.
    """
    out, root = Path(out), Path(root)
    kept = collect(root)
    vocab = vocabulary(kept, min_count)
    params = {"builder": "tasks.debian_corpora", "min_count": min_count, "min_fortunes": min_fortunes}
    info = {"sources": _source_info(root, src.SOURCES), "builder": params}
    atomic_fixture(out / "debian-lm", {**params, "corpus": "debian-lm"}, lambda tmp: _write_lm(tmp, kept, vocab, info))
    for corpus, source, classes in (
        ("wordnet-lexname", "wordnet", src.LEXNAMES),
        ("fortune-category", "fortunes", fortune_classes(kept, min_fortunes)),
    ):
        rows = classification_rows(kept, source, classes)
        source_info = {**info, "sources": _source_info(root, [source])}
        atomic_fixture(
            out / corpus, {**params, "corpus": corpus},
            lambda tmp, c=corpus, r=rows, k=classes, i=source_info: _write_classification(tmp, c, r, k, i),
        )  # fmt: skip
    return {corpus: corpus_hash(out / corpus) for corpus in CORPORA}


def corpus_hash(folder: Path) -> str:
    """The data hash of a built corpus folder, recomputed from its data files."""
    folder = Path(folder)
    names = LM_FILES.values() if (folder / LM_FILES["train"]).exists() else CLASSIFICATION_FILES
    return folder_hash(folder, names)
