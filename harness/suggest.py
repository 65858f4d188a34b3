"""Hints for unknown ids (papers, models, tasks, datasets): "did you mean" the closest known ids, by difflib."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'efficientnet'?)"`` for the known ids close to ``name``, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
