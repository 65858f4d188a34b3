"""A tiny Debian source tree and the text corpora built from it, made once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.debian_corpora.corpus import build_text
from tasks.debian_corpora.fixtures import write_debian_tree


@pytest.fixture(scope="session")
def debian_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_debian_tree(tmp_path_factory.mktemp("debian") / "root")


@pytest.fixture(scope="session")
def built(debian_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``debian-lm``, ``wordnet-lexname`` and ``fortune-category`` of the tiny tree (vocabulary: every token seen
    twice in training; fortune classes: files with 5 or more fortunes)."""
    out = tmp_path_factory.mktemp("corpora")
    build_text(out, debian_tree, min_count=2, min_fortunes=5)
    return out
