"""Tokenizers: one interface for every text task and paper (docs/tokenizers.md).

:class:`~tasks.tokenizers.core.Tokenizer` encodes one text or a pair into an
:class:`~tasks.tokenizers.core.Encoding` (ids, tokens, character offsets, type ids), batches with padding and
truncation, decodes, names its special tokens by role and has a ``digest``. Schemes, each imported on use:

- ``tasks.tokenizers.words``: the hashed whitespace tokenizer (tests, smoke tiers) and the LM corpus's WikiText words;
- ``tasks.tokenizers.hf``: BPE (byte-level or GPT-1's ``</w>`` character BPE) and WordPiece over ``tokenizers``;
- ``tasks.tokenizers.spm``: SentencePiece unigram / BPE over ``sentencepiece``;
- ``tasks.tokenizers.ulmfit``: ULMFiT's rule-based tokenizer and vocabulary (fastai v1's conventions);
- ``tasks.tokenizers.elmo``: ELMo's character ids (bilm-tf's conventions).

``tasks.tokenizers.artifacts`` stores a trained tokenizer content-addressed (``results/tokenizers/<sha256>.<ext>``),
loads it with its hash checked, and gives the run record's ``artifacts`` that cite it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.registry import load_object
from tasks.tokenizers.artifacts import load_tokenizer, register, save_tokenizer, tokenizer_artifacts
from tasks.tokenizers.core import BERT_TEMPLATE, XLNET_TEMPLATE, Encoding, Template, Tokenizer

__all__ = [
    "BERT_TEMPLATE", "XLNET_TEMPLATE", "BatchEncoder", "Encoding", "Template", "Tokenizer", "batch_tokenizer",
    "is_artifact_path", "load_tokenizer", "make_tokenizer", "tokenizer_artifacts", "register", "save_tokenizer",
]  # fmt: skip


def is_artifact_path(spec: object) -> bool:
    """Whether a config's ``tokenizer`` string is the path of a tokenizer file (not a ``module:attribute``)."""
    return isinstance(spec, (str, Path)) and Path(spec).suffix in (".json", ".model") and ":" not in str(spec)


@dataclass(frozen=True)
class BatchEncoder:
    """A tokenizer as a text data module's ``tokenizer(texts)``: :meth:`Tokenizer.encode_batch` of the batch."""

    tokenizer: Tokenizer
    max_length: int | None = None

    def __call__(self, texts: list[str]) -> dict[str, Any]:
        return self.tokenizer.encode_batch(texts, max_length=self.max_length)


def batch_tokenizer(spec: Any, max_length: int | None = None) -> Callable[[list[str]], Any] | None:
    """A text data module's ``tokenizer`` argument as the callable its batches apply to a list of texts: ``None``;
    a callable (a :class:`Tokenizer` becomes a :class:`BatchEncoder`); a ``"module:attribute"`` naming either; or
    the path of a tokenizer file (loaded with its hash checked)."""
    if is_artifact_path(spec):
        spec = load_tokenizer(spec)
    elif isinstance(spec, str):
        spec = load_object(spec)
    return BatchEncoder(spec, max_length) if isinstance(spec, Tokenizer) else spec


def make_tokenizer(spec: str) -> Any:
    """A GLUE / SQuAD data module's ``tokenizer``: a ``"module:factory"`` called with no arguments, or the path of a
    tokenizer file (its :class:`Tokenizer`, which lays out pairs and gives offsets)."""
    return load_tokenizer(spec) if is_artifact_path(spec) else load_object(spec)()
