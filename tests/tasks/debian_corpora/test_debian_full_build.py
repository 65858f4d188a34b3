"""The real build from the installed Debian packages (slow: about a minute; skipped where they are not installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.debian_corpora import sources
from tasks.debian_corpora.corpus import build_text
from tasks.debian_corpora.data import read_classification

INSTALLED = all(
    Path("/", path).exists()
    for path in (sources.WORDNET_DIR + "/data.noun", sources.DICTD_DIR + "/gcide.index", sources.FORTUNE_DIR + "/work")
)


@pytest.mark.slow
@pytest.mark.skipif(not INSTALLED, reason="the corpus's Debian packages are not installed (setup.sh installs them)")
def test_full_text_build_has_the_documented_shape(tmp_path: Path) -> None:
    hashes = build_text(tmp_path)
    lm = json.loads((tmp_path / "debian-lm" / "corpus.json").read_text())
    assert lm["data_hash"] == hashes["debian-lm"]
    assert lm["splits"]["train"]["tokens"] > 10_000_000 and lm["splits"]["test"]["tokens"] > 500_000
    assert len((tmp_path / "wordnet-lexname" / "classes.txt").read_text().split()) == 45
    assert len((tmp_path / "fortune-category" / "classes.txt").read_text().split()) == 32
    test = read_classification(tmp_path / "fortune-category", "test")
    assert {example.label for example in test} == set(range(32))
