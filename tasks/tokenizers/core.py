"""The one tokenizer interface: :class:`Tokenizer` over a scheme's :class:`Backend`, and :class:`Encoding`.

A backend turns text into pieces (ids, token strings, character offsets into the text), decodes ids and names
the bytes that define it. :class:`Tokenizer` adds what every scheme shares: special tokens by role, the input
layout of one text or a pair (a :class:`Template`), truncation, padding and batching. Nothing here imports a
tokenizer library; the schemes' modules do, on use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from harness.errors import HarnessError

ROLES = ("pad", "unk", "bos", "eos", "cls", "sep", "mask")


@dataclass(frozen=True)
class Encoding:
    """One encoded input. ``offsets[i]``: the ``(start, end)`` characters of token ``i`` in the text it came from
    (``sequence_ids[i]``: 0 the first text, 1 the second; ``None`` and ``(0, 0)`` for a special token);
    ``type_ids``: the segment of each token, as the template gives it."""

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    type_ids: list[int]
    sequence_ids: list[int | None]

    def __len__(self) -> int:
        return len(self.ids)

    def head(self, n: int) -> Encoding:
        """The first ``n`` tokens."""
        fields = (self.ids, self.tokens, self.offsets, self.type_ids, self.sequence_ids)
        return Encoding(*(list(field[:n]) for field in fields))


def pieces(ids: Sequence[int], tokens: Sequence[str], offsets: Sequence[tuple[int, int]]) -> Encoding:
    """The encoding of one text without special tokens (what a backend returns)."""
    n = len(ids)
    return Encoding(list(ids), list(tokens), [(int(a), int(b)) for a, b in offsets], [0] * n, [0] * n)


class Backend(Protocol):
    """What a scheme provides (see the module docstring)."""

    vocab_size: int

    def pieces(self, text: str) -> Encoding: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def token_to_id(self, token: str) -> int | None: ...

    def content(self) -> bytes: ...


@dataclass(frozen=True)
class Template:
    """The layout of one text and of a pair, in the notation of ``tokenizers``' ``TemplateProcessing``: ``$A`` and
    ``$B`` the texts, other items special tokens, ``:n`` an item's type id (default 0). E.g. BERT's
    ``Template("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")``."""

    single: str = "$A"
    pair: str = "$A $B:1"

    def items(self, pair: bool) -> list[tuple[str, int]]:
        layout = []
        for item in (self.pair if pair else self.single).split():
            name, _, type_id = item.rpartition(":") if item.rpartition(":")[2].isdigit() else (item, "", "0")
            layout.append((name, int(type_id)))
        return layout

    def specials(self) -> list[str]:
        """The special tokens of both layouts, in order."""
        names = [name for pair in (False, True) for name, _ in self.items(pair) if name not in ("$A", "$B")]
        return list(dict.fromkeys(names))


TEXTS_ALONE = Template()  # no special tokens
BERT_TEMPLATE = Template("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")
XLNET_TEMPLATE = Template("$A <sep> <cls>:2", "$A <sep> $B:1 <sep>:1 <cls>:2")  # XLNet: segment 2 for <cls>


class Tokenizer:
    """One tokenizer of any scheme (see the package docstring for the schemes and docs/tokenizers.md).

    Args:
        backend: the scheme (pieces, decode, vocabulary, defining bytes).
        template: the layout of one text and of a pair; its special tokens must be in the vocabulary.
        specials: role (``pad``, ``unk``, ``bos``, ``eos``, ``cls``, ``sep``, ``mask``) -> token, those the scheme has.
        name: what the scheme is, for messages.

    ``<role>_token_id`` (``pad_token_id``, ``cls_token_id`` ...) is the id of a role the scheme has; asking for one
    it lacks is an ``AttributeError``, so ``getattr(tokenizer, "pad_token_id", 0)`` works as the data modules use it.
    Calling a tokenizer, ``tokenizer(text_a, text_b=None)``, gives the ids of the whole laid-out input.
    """

    def __init__(
        self, backend: Backend, template: Template = TEXTS_ALONE, specials: dict[str, str] | None = None, name: str = ""
    ) -> None:
        self.backend, self.template, self.name = backend, template, name or type(backend).__name__
        self.special_tokens = dict(specials or {})
        unknown = sorted(set(self.special_tokens) - set(ROLES))
        if unknown:
            raise HarnessError(f"tokenizer {self.name}: unknown special-token role(s) {unknown}; roles: {ROLES}")
        self._ids = {token: self._id(token) for token in [*template.specials(), *self.special_tokens.values()]}
        self.special_ids = {role: self._ids[token] for role, token in self.special_tokens.items()}

    def _id(self, token: str) -> int:
        found = self.backend.token_to_id(token)
        if found is None:
            raise HarnessError(f"tokenizer {self.name}: special token {token!r} is not in its vocabulary")
        return found

    def __getattr__(self, name: str) -> int:
        role = name.removesuffix("_token_id")
        if name.endswith("_token_id") and role in self.__dict__.get("special_ids", {}):
            return self.special_ids[role]
        raise AttributeError(f"{type(self).__name__} {self.__dict__.get('name', '')} has no {name}")

    @property
    def vocab_size(self) -> int:
        return self.backend.vocab_size

    @property
    def digest(self) -> str:
        """sha256 of the bytes that define the tokenizer (an artifact's file; the settings of a rule-based one)."""
        return hashlib.sha256(self.backend.content()).hexdigest()

    def encode(self, text: str, special_tokens: bool = True) -> Encoding:
        """``text`` laid out by the template's ``single`` (``special_tokens=False``: its pieces alone)."""
        encoding = self.backend.pieces(text)
        return self.layout([encoding]) if special_tokens else encoding

    def encode_pair(self, text_a: str, text_b: str) -> Encoding:
        """Two texts laid out by the template's ``pair``."""
        return self.layout([self.backend.pieces(text_a), self.backend.pieces(text_b)])

    def __call__(self, text_a: str, text_b: str | None = None) -> list[int]:
        return (self.encode(text_a) if text_b is None else self.encode_pair(text_a, text_b)).ids

    def layout(self, parts: Sequence[Encoding]) -> Encoding:
        """The template's layout of one or two texts' pieces."""
        ids, tokens, offsets, type_ids, sequence_ids = [], [], [], [], []
        for name, type_id in self.template.items(len(parts) == 2):
            if name in ("$A", "$B"):
                part = parts[0 if name == "$A" else 1]
                ids += part.ids
                tokens += part.tokens
                offsets += part.offsets
                sequence_ids += [0 if name == "$A" else 1] * len(part)
                type_ids += [type_id] * len(part)
            else:
                ids.append(self._ids[name])
                tokens.append(name)
                offsets.append((0, 0))
                sequence_ids.append(None)
                type_ids.append(type_id)
        return Encoding(ids, tokens, offsets, type_ids, sequence_ids)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of ``ids`` (special tokens left out unless ``skip_special_tokens`` is false)."""
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            special = set(self._ids.values())
            ids = [i for i in ids if i not in special]
        return self.backend.decode(ids)

    def truncated(self, parts: list[Encoding], max_length: int) -> list[Encoding]:
        """``parts`` cut so that their layout has at most ``max_length`` tokens: the longer text loses its last
        token first (``tokenizers``' ``longest_first``)."""
        room = max_length - sum(1 for name, _ in self.template.items(len(parts) == 2) if name not in ("$A", "$B"))
        if room < 0:
            raise HarnessError(f"tokenizer {self.name}: max_length {max_length} is shorter than its special tokens")
        lengths = [len(part) for part in parts]
        while sum(lengths) > room:
            longest = max(range(len(lengths)), key=lambda i: (lengths[i], -i))
            lengths[longest] -= 1
        return [part.head(n) for part, n in zip(parts, lengths, strict=True)]

    def encode_batch(
        self,
        texts: Sequence[str],
        pairs: Sequence[str] | None = None,
        max_length: int | None = None,
        pad_to_max_length: bool = False,
        return_tensors: bool = True,
    ) -> dict[str, Any]:
        """A padded batch: ``input_ids``, ``attention_mask``, ``token_type_ids`` (N, T) and ``offsets`` (N, T, 2),
        T the longest laid-out input (``max_length`` with ``pad_to_max_length``); inputs longer than ``max_length``
        are truncated (:meth:`truncated`). Padding has the pad id (0 where the scheme has none), mask 0 and offsets
        ``(-1, -1)``, as special tokens' offsets are. Lists of lists instead of tensors without ``return_tensors``."""
        if pairs is not None and len(pairs) != len(texts):
            raise HarnessError(f"tokenizer {self.name}: {len(texts)} texts but {len(pairs)} pairs")
        rows = []
        for i, text in enumerate(texts):
            parts = [self.backend.pieces(text)] + ([self.backend.pieces(pairs[i])] if pairs is not None else [])
            rows.append(self.layout(self.truncated(parts, max_length) if max_length is not None else parts))
        width = max([len(row) for row in rows] + [0]) if not pad_to_max_length or max_length is None else max_length
        return padded(rows, width, self.special_ids.get("pad", 0), return_tensors)


def padded(rows: Sequence[Encoding], width: int, pad_id: int, return_tensors: bool) -> dict[str, Any]:
    """``rows`` padded on the right to ``width`` tokens (see :meth:`Tokenizer.encode_batch`)."""
    batch: dict[str, list] = {"input_ids": [], "attention_mask": [], "token_type_ids": [], "offsets": []}
    for row in rows:
        fill = width - len(row)
        batch["input_ids"].append(row.ids + [pad_id] * fill)
        batch["attention_mask"].append([1] * len(row) + [0] * fill)
        batch["token_type_ids"].append(row.type_ids + [0] * fill)
        spans = [span if seq is not None else (-1, -1) for span, seq in zip(row.offsets, row.sequence_ids, strict=True)]
        batch["offsets"].append([list(span) for span in spans] + [[-1, -1]] * fill)
    if not return_tensors:
        return batch
    import torch

    shapes = {"offsets": (len(rows), width, 2)}
    return {key: torch.tensor(value, dtype=torch.long).reshape(shapes.get(key, (len(rows), width)))
            for key, value in batch.items()}  # fmt: skip


def with_template(tokenizer: Tokenizer, template: Template) -> Tokenizer:
    """The same scheme and special tokens under another layout."""
    return Tokenizer(tokenizer.backend, template, tokenizer.special_tokens, tokenizer.name)
