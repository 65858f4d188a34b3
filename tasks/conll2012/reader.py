"""Reading CoNLL-2012 ``*_conll`` files (OntoNotes v5 layout) into documents, sentences and rows.

A file holds documents, each opened by ``#begin document <name>`` (the name is everything after ``document``, e.g.
``(bc/cctv/00/cctv_0001); part 000``, as the reference coreference scorer takes it) and closed by
``#end document``; sentences are separated by blank lines; a token row is whitespace-separated columns: 0 document id,
1 part number, 2 word number, 3 word, 4 POS, 5 parse bit, 6 predicate lemma, 7 frameset id, 8 word sense,
9 speaker, 10 named entities, 11 .. N-2 one predicate-argument column per predicate, N-1 coreference. Every row of a
sentence has the same number of columns. A folder is read as all its ``*_gold_conll`` files, sorted by path.

A document not closed at the end of its file, a token row outside a document, a repeated document name or a
sentence whose rows differ in column count raises :class:`HarnessError` naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError

BEGIN = re.compile(r"^#\s*begin document (.*?)$")
END = re.compile(r"#\s*end document")
WORD, FIRST_ARGUMENT = 3, 11
GOLD_PATTERN = "*_gold_conll"


@dataclass
class Sentence:
    lines: list[int] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class Document:
    name: str
    path: Path
    line: int
    sentences: list[Sentence] = field(default_factory=list)

    def rows(self) -> list[tuple[int, list[str]]]:
        """(line number, columns) of every token row, in order."""
        return [pair for s in self.sentences for pair in zip(s.lines, s.rows, strict=True)]


def files(path: Path) -> list[Path]:
    """``path`` itself, or the ``*_gold_conll`` files under a folder, sorted by path."""
    if path.is_dir():
        found = sorted(path.rglob(GOLD_PATTERN))
        if not found:
            raise HarnessError(f"{path}: no {GOLD_PATTERN} file under this folder")
        return found
    if not path.exists():
        raise HarnessError(f"{path}: file not found")
    return [path]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _add_row(doc: Document, number: int, columns: list[str], new_sentence: bool) -> None:
    if new_sentence or not doc.sentences:
        doc.sentences.append(Sentence())
    sentence = doc.sentences[-1]
    if sentence.rows and len(columns) != len(sentence.rows[0]):
        raise HarnessError(
            f"{doc.path}:{number}: {len(columns)} columns, the sentence's first row (line {sentence.lines[0]}) has "
            f"{len(sentence.rows[0])}"
        )
    sentence.lines.append(number)
    sentence.rows.append(columns)


def read_file(path: Path) -> list[Document]:
    """The documents of one ``*_conll`` file, in order."""
    documents: list[Document] = []
    doc: Document | None = None
    blank = True
    for number, line in enumerate(_lines(path), start=1):
        begin = BEGIN.match(line)
        if begin:
            if doc is not None:
                raise HarnessError(f"{path}:{number}: a new document begins before {doc.name!r} (line {doc.line}) ends")
            doc, blank = Document(begin.group(1), path, number), True
        elif END.search(line):
            if doc is None:
                raise HarnessError(f"{path}:{number}: '#end document' without '#begin document'")
            documents.append(doc)
            doc = None
        elif not line.strip():
            blank = True
        elif doc is None:
            raise HarnessError(f"{path}:{number}: a token row outside any '#begin document' ... '#end document'")
        else:
            _add_row(doc, number, line.split(), blank)
            blank = False
    if doc is not None:
        raise HarnessError(f"{path}: document {doc.name!r} (line {doc.line}) has no '#end document': truncated file?")
    return documents


def read_documents(path: Path | str) -> list[Document]:
    """The documents of a ``*_conll`` file or of every ``*_gold_conll`` file under a folder; names must be unique."""
    documents: list[Document] = []
    seen: dict[str, Document] = {}
    for name in files(Path(path)):
        for doc in read_file(name):
            if doc.name in seen:
                first = seen[doc.name]
                raise HarnessError(f"{doc.path}:{doc.line}: document {doc.name!r} repeats {first.path}:{first.line}")
            seen[doc.name] = doc
            documents.append(doc)
    return documents


def _same_words(key: Document, response: Document) -> None:
    key_rows, rows = key.rows(), response.rows()
    if len(rows) != len(key_rows):
        raise HarnessError(
            f"{response.path}:{response.line}: document {key.name!r} has {len(rows)} token rows, the key "
            f"({key.path}:{key.line}) has {len(key_rows)}"
        )
    for (number, row), (_, gold) in zip(rows, key_rows, strict=True):
        word = row[WORD] if len(row) > WORD else None
        if word is not None and word != gold[WORD]:
            raise HarnessError(
                f"{response.path}:{number}: field 'word' (column 4) is {word!r}, the key has {gold[WORD]!r}"
            )


def aligned(key: Document, response: Document, sentences: bool = True) -> None:
    """Check a response document has the key's words (and, with ``sentences``, its sentence breaks); else an error
    naming the response line. A row of fewer than four columns has no word to check."""
    if sentences:
        for mine, theirs in zip(response.sentences, key.sentences, strict=False):
            if len(mine.rows) != len(theirs.rows):
                raise HarnessError(
                    f"{response.path}:{mine.lines[0]}: sentence of {len(mine.rows)} tokens, the key's ({key.path}:"
                    f"{theirs.lines[0]}) has {len(theirs.rows)}"
                )
        if len(response.sentences) != len(key.sentences):
            raise HarnessError(
                f"{response.path}:{response.line}: document {key.name!r} has {len(response.sentences)} sentences, "
                f"the key ({key.path}:{key.line}) has {len(key.sentences)}"
            )
    _same_words(key, response)


def match(keys: list[Document], responses: list[Document], response_path: Path) -> list[Document]:
    """The response document of each key document, by name; a key document missing from the response is an error."""
    by_name = {doc.name: doc for doc in responses}
    missing = [doc.name for doc in keys if doc.name not in by_name]
    if missing:
        raise HarnessError(
            f"{response_path}: no '#begin document {missing[0]}' ({len(missing)} of the key's {len(keys)} documents "
            "missing): truncated or mismatched response"
        )
    return [by_name[doc.name] for doc in keys]
