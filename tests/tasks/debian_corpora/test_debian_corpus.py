"""Building the text corpora: same bytes twice, splits by document, de-duplication, layouts (tasks.debian_corpora.corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.debian_corpora import corpus
from tasks.debian_corpora.fixtures import SHARED_GLOSS
from tasks.text_classification.data import read_zhang_csv

DATA_FILES = {
    "debian-lm": ("wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"),
    "wordnet-lexname": ("train.csv", "test.csv", "classes.txt"),
    "fortune-category": ("train.csv", "test.csv", "classes.txt"),
}


def documents(path: Path) -> list[list[str]]:
    """The documents of a WikiText-layout file: heading line, then paragraph lines, blank lines dropped."""
    docs: list[list[str]] = []
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith(" = ") and line.endswith(" = "):
            docs.append([line])
        elif line.strip():
            docs[-1].append(line)
    return docs


def test_building_twice_gives_the_same_bytes_and_hash(debian_tree: Path, built: Path, tmp_path: Path) -> None:
    again = corpus.build_text(tmp_path, debian_tree, min_count=2, min_fortunes=5)
    for name, files in DATA_FILES.items():
        for file in files:
            assert (tmp_path / name / file).read_bytes() == (built / name / file).read_bytes(), (name, file)
        recorded = json.loads((built / name / "corpus.json").read_text())["data_hash"]
        assert again[name] == recorded == corpus.corpus_hash(built / name)


def test_rebuilding_with_other_parameters_is_refused(debian_tree: Path, built: Path) -> None:
    with pytest.raises(HarnessError, match="debian-lm holds a fixture made with"):
        corpus.build_text(built, debian_tree, min_count=3, min_fortunes=5)


def test_wikitext_layout_and_vocabulary(built: Path) -> None:
    text = (built / "debian-lm" / "wiki.train.tokens").read_text(encoding="utf-8")
    lines = text.split("\n")
    assert lines[:3] == [" ", " = river noun0 = ", " "] or lines[1].startswith(" = ")
    assert all(line == "" or (line.startswith(" ") and line.endswith(" ")) for line in lines)
    assert "<unk>" in text  # the synset numbers in titles are seen once
    stats = json.loads((built / "debian-lm" / "corpus.json").read_text())
    assert stats["splits"]["train"]["tokens"] == len(text.split())
    assert {s["source"] for s in stats["sources"]} == {"wordnet", "gcide", "devil", "jargon", "foldoc", "fortunes"}
    assert all(s["licence"] for s in stats["sources"])


def test_splits_are_disjoint_by_document_and_deduplicated(debian_tree: Path, built: Path) -> None:
    splits = {split: documents(built / "debian-lm" / f"wiki.{split}.tokens") for split in ("train", "valid", "test")}
    assert all(splits.values())
    bodies = [tuple(doc[1:]) for docs in splits.values() for doc in docs]
    assert len(bodies) == len(set(bodies))  # no body twice, within or across splits
    kept = corpus.collect(debian_tree)
    assert len(bodies) == len(kept) == 4 * 60 + 1 + 4 * 30 + 3 * 40 + 1  # one copy of each shared text
    assert [item.ambiguous for item in kept if item.paragraphs == (SHARED_GLOSS,)] == [True]
    assert [item.doc.key for item in kept if item.paragraphs[0].startswith("Every kettle")] == ["people:40"]
    assert all(item.split == corpus.lm_split(item.doc.source, item.doc.key) for item in kept)


def test_split_rule_is_the_documented_hash(built: Path) -> None:
    assert (
        corpus.bucket("wordnet", "noun:00000123")
        == int(__import__("hashlib").sha256(b"wordnet:noun:00000123").hexdigest()[:8], 16) % 100
    )
    keys = [("fortunes", f"work:{n}") for n in range(200)]
    for source, key in keys:
        lm, cls = corpus.lm_split(source, key), corpus.classification_split(source, key)
        assert (cls == "test") == (lm in ("valid", "test"))  # classification test = the LM's held-out documents


def test_classification_csvs_hold_the_unambiguous_labelled_documents(built: Path) -> None:
    wordnet = built / "wordnet-lexname"
    classes = (wordnet / "classes.txt").read_text().split()
    assert len(classes) == 45 and classes[5] == "noun.animal"
    rows = {split: read_zhang_csv(wordnet / f"{split}.csv", 45) for split in ("train", "test")}
    assert sum(map(len, rows.values())) == 4 * 60  # the shared gloss has two labels: left out
    assert all(SHARED_GLOSS not in example.text for split in rows.values() for example in split)
    fortunes = built / "fortune-category"
    assert (fortunes / "classes.txt").read_text() == "people\nscience\nwork\n"
    texts = [e.text for split in ("train", "test") for e in read_zhang_csv(fortunes / f"{split}.csv", 3)]
    assert len(texts) == 3 * 40 and "Bold words, said twice.\\nAnd a second paragraph." in texts
    assert not any("kettle sings" in text for text in texts)  # in all three files: ambiguous


def test_classification_test_texts_are_not_in_lm_training(built: Path) -> None:
    train = (built / "debian-lm" / "wiki.train.tokens").read_text(encoding="utf-8")
    test = read_zhang_csv(built / "wordnet-lexname" / "test.csv", 45)
    assert test
    for example in test:
        definition = example.text.split(";")[0]
        assert f" {definition} ;" not in train


def test_command_line_builds_and_prints_hashes(debian_tree: Path, built: Path, tmp_path: Path, capsys) -> None:
    from tasks.debian_corpora.__main__ import main

    assert main(["text", str(tmp_path), "--source-root", str(debian_tree)]) == 0
    printed = dict(line.split() for line in capsys.readouterr().out.splitlines())
    assert set(printed) == set(DATA_FILES) and all(len(digest) == 64 for digest in printed.values())
    assert main(["text", str(tmp_path / "none"), "--source-root", str(tmp_path / "missing")]) == 1
    assert "error: " in capsys.readouterr().err
