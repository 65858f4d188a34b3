"""Readers of the Debian packages' files and the corpus tokenisation (tasks.debian_corpora.sources, .tokenize)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.debian_corpora import sources
from tasks.debian_corpora.fixtures import SHARED_GLOSS, encode_b64
from tasks.debian_corpora.tokenize import apply_vocabulary, tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Well-known facts.", ["Well", "@-@", "known", "facts", "."]),
        ("don't, John's dogs'", ["don", "'t", ",", "John", "'s", "dogs", "'"]),
        ("1,000 and 3.5 (1903-1968)", ["1", "@,@", "000", "and", "3", "@.@", "5", "(", "1903", "@-@", "1968", ")"]),
        ("snake_case e.g. --Dryden", ["snake", "_", "case", "e", ".", "g", ".", "-", "-", "Dryden"]),
        ("“Café” 'Tis", ["“", "Café", "”", "'Tis"]),
    ],
)
def test_tokenize_follows_wikitext_conventions(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_apply_vocabulary_marks_unknown_tokens() -> None:
    assert apply_vocabulary(["a", "b", "c"], {"a", "c"}) == ["a", "<unk>", "c"]


def test_clean_text_removes_overstrikes_and_controls() -> None:
    assert sources.clean_text("B\bBo\bold\x07  text\n\tend") == "Bold text end"


@pytest.mark.parametrize("value", [0, 1, 63, 64, 4095, 123456789])
def test_dictd_base64_round_trips(value: int) -> None:
    assert sources.decode_b64(encode_b64(value)) == value
    assert sources.decode_b64("Bo") == 1 * 64 + 40


def test_wordnet_synsets_have_lexnames_titles_and_glosses(debian_tree: Path) -> None:
    docs = list(sources.read_wordnet(debian_tree))
    assert len(docs) == 4 * 60 + 2  # 60 per part of speech plus the shared gloss under noun and verb
    first = docs[0]
    assert first.key.startswith("noun:") and first.label == "noun.animal" and first.title == "river noun0"
    assert first.paragraphs[0].startswith('a quiet river that carries the kettle; "the a quiet river')
    adjective = next(doc for doc in docs if doc.key.startswith("adj:"))
    assert adjective.label == "adj.all" and adjective.title == "river adj0"  # the (a) marker dropped
    assert [doc.label for doc in docs if doc.paragraphs == (SHARED_GLOSS,)] == ["noun.animal", "verb.body"]
    assert len(sources.LEXNAMES) == 45


def test_wordnet_malformed_line_names_file_and_line(debian_tree: Path, tmp_path: Path) -> None:
    folder = tmp_path / sources.WORDNET_DIR
    folder.mkdir(parents=True)
    for pos in sources.WORDNET_POS:
        (folder / f"data.{pos}").write_bytes((debian_tree / sources.WORDNET_DIR / f"data.{pos}").read_bytes())
    with (folder / "data.verb").open("a") as handle:
        handle.write("00099999 xx v 01 walk 0 000 | to move on foot\n")
    with pytest.raises(HarnessError, match=r"data\.verb:65: not a WordNet data line"):
        list(sources.read_wordnet(tmp_path))


def test_dictd_articles_are_cleaned_and_info_entries_skipped(debian_tree: Path) -> None:
    gcide = list(sources.read_dictd(debian_tree, "gcide"))
    assert len(gcide) == 30 and gcide[0].title == "gcideword0"
    assert gcide[0].paragraphs[0].startswith("Gcideword0, n. a ")  # pronunciation and [1913 Webster] gone
    assert not any("Webster" in p or "database" in p for doc in gcide for p in doc.paragraphs)
    foldoc = list(sources.read_dictd(debian_tree, "foldoc"))
    assert foldoc[0].paragraphs[0] == "foldocword0" and "{" not in foldoc[0].paragraphs[1]
    assert len(foldoc[0].paragraphs) == 2  # the (2003-07-05) date line dropped


def test_fortunes_split_on_percent_lines_and_skip_index_files(debian_tree: Path) -> None:
    docs = list(sources.read_fortunes(debian_tree))
    assert {doc.label for doc in docs} == {"people", "science", "work"}  # ascii-art and .dat files skipped
    assert len(docs) == 3 * 41
    assert docs[0].paragraphs == ("Bold words, said twice.", "And a second paragraph.")
    assert docs[1].key == "people:1" and docs[1].title == "Fortune" and docs[1].paragraphs[0].endswith("-- Someone 1")


def test_missing_package_says_which(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"data\.noun: cannot read .*Debian package"):
        list(sources.read_wordnet(tmp_path))
    with pytest.raises(HarnessError, match=r"apt-get install fortunes"):
        list(sources.read_fortunes(tmp_path))


def test_dictd_malformed_index_names_file_and_line(tmp_path: Path) -> None:
    index = tmp_path / "x.index"
    index.write_text("good\tA\tB\nbad line without tabs\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"x\.index:2: expected 'headword<TAB>offset<TAB>length'"):
        sources.read_dict_index(index)
