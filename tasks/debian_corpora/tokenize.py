"""The language-modelling corpus's tokenisation: WikiText-103's conventions, written as a few regular expressions.

WikiText-103 (Merity, Xiong, Bradbury & Socher, "Pointer Sentinel Mixture Models", arXiv 1609.07843) is
distributed tokenised: tokens separated by single spaces, punctuation split off, and separators inside words and
numbers marked: ``well @-@ known``, ``1 @,@ 000``, ``3 @.@ 5``. Words seen fewer than 3 times are ``<unk>``.
:func:`tokenize` does the same to already-cleaned text (``sources.clean_text``), deterministically:

1. a hyphen between two letters or digits becomes `` @-@ ``; a comma or full stop between two digits becomes
   `` @,@ `` / `` @.@ ``;
2. the tokens are, left to right: those three markers; runs of letters and digits (Unicode ``\\w`` without ``_``);
   an apostrophe followed by such a run (``don't`` -> ``don 't``, ``John's`` -> ``John 's``); any other single
   character that is not white space (punctuation, ``_``, symbols).

Case is kept (as in WikiText). :func:`apply_vocabulary` replaces every token outside a vocabulary with ``<unk>``;
the builder's vocabulary is the training split's tokens seen at least :data:`MIN_COUNT` times.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable

UNK = "<unk>"
MIN_COUNT = 3
_INFIX = re.compile(r"(?<=[^\W_])-(?=[^\W_])|(?<=\d)([.,])(?=\d)")
_TOKEN = re.compile(r"@[-.,]@|[^\W_]+|'[^\W_]+|[^\w\s]|_")


def _mark(match: re.Match[str]) -> str:
    return f" @{match.group(1) or '-'}@ "


def tokenize(text: str) -> list[str]:
    """WikiText-style tokens of ``text`` (see the module docstring)."""
    return _TOKEN.findall(_INFIX.sub(_mark, text))


def apply_vocabulary(tokens: Iterable[str], vocabulary: Container[str]) -> list[str]:
    """``tokens`` with every token not in ``vocabulary`` replaced by :data:`UNK`."""
    return [token if token in vocabulary else UNK for token in tokens]


def heading(title_tokens: list[str]) -> str:
    """A WikiText document heading line: `` = Title = ``."""
    return " = " + " ".join(title_tokens) + " = \n"


def text_line(tokens: list[str]) -> str:
    """A WikiText paragraph line: a space, the tokens separated by spaces, a space, a new line."""
    return " " + " ".join(tokens) + " \n"


BLANK_LINE = " \n"
