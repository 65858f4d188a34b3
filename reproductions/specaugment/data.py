"""Data preparation of SpecAugment's budget tier: the espeak-ng speech corpus (tasks.debian_corpora.speech)."""

from __future__ import annotations

from pathlib import Path

from tasks.debian_corpora.speech import build_speech


def prepare_espeak_speech(root: Path, train: int = 6000, dev: int = 300, test: int = 300, workers: int = 2) -> Path:
    """Build (once; a complete corpus is left alone) the espeak-ng corpus at ``root``; returns ``root``."""
    build_speech(Path(root), train=train, dev=dev, test=test, workers=workers)
    return Path(root)
