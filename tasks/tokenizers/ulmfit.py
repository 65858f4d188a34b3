"""ULMFiT's rule-based tokenizer and vocabulary, following fastai v1's conventions (``fastai.text.transform``).

Howard & Ruder, "Universal Language Model Fine-tuning for Text Classification" (arXiv:1801.06146). fastai v1
tokenised with these rules around spaCy's English tokenizer; this module writes the rules after fastai's
definitions, but the word tokenizer under them is a small deterministic regular expression, not spaCy (see
:data:`WORD`): words, the clitics ``n't 's 're 've 'll 'd 'm`` split off (``don't`` -> ``do n't``), numbers
with their inner points and commas (``1,000``, ``3.5``), a new line, and any other single non-space character.
Its tokens differ from spaCy's on some inputs (URLs, abbreviations, emoticons).

Rules, in fastai's order. Before tokenising (on the text): ``fix_html`` (fastai's list of HTML and WikiText
replacements, then ``html.unescape``, then runs of spaces made one); ``replace_rep`` (a non-space character
repeated 4 or more times -> ``xxrep n c``); ``replace_wrep`` (a word and what follows it repeated 4 or more
times -> ``xxwrep n w``); ``spec_add_spaces`` (spaces around ``/``, ``#`` and new lines); ``rm_useless_spaces``.
After (on the tokens): ``replace_all_caps`` (an all-caps token of 2+ characters -> ``xxup`` + lower case);
``deal_caps`` (a capitalised token -> ``xxmaj`` + lower case; every token lower-cased). A text is laid out as
``xxbos`` + its tokens (fastai's ``_join_texts`` without field marks).

Offsets: the rules rewrite the text, so every character of the rewritten text keeps the span of the original
characters it came from; a token's offsets run from its first character's start to its last's end (the three
tokens ``xxrep 4 !`` all span ``!!!!``; a token from ``&amp;`` spans the entity). ``xxmaj``/``xxup`` take the
empty span at the start of the word they mark.

Vocabulary (:func:`build_ulmfit_vocab`, fastai's ``Vocab.create``): the ``max_vocab`` most frequent tokens (ties in
first-seen order), those seen at least ``min_freq`` times; the nine special tokens first (``xxunk`` = 0, ``xxpad`` =
1, ...); cut to ``max_vocab``; padded with ``xxfake`` to a multiple of 8 when shorter. ULMFiT: 60,000 and 2. The
artifact is a JSON file: ``{"format": "ulmfit-vocab", "itos": [...], "max_vocab": ..., "min_freq": ...}``.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from harness.errors import HarnessError
from tasks.tokenizers.core import Encoding, Template, Tokenizer, pieces

UNK, PAD, BOS, EOS, FLD = "xxunk", "xxpad", "xxbos", "xxeos", "xxfld"
TK_MAJ, TK_UP, TK_REP, TK_WREP = "xxmaj", "xxup", "xxrep", "xxwrep"
SPECIAL_TOKENS = (UNK, PAD, BOS, EOS, FLD, TK_MAJ, TK_UP, TK_REP, TK_WREP)  # fastai's text_spec_tok, in its order
FORMAT = "ulmfit-vocab"
ULMFIT_TEMPLATE = Template(f"{BOS} $A", f"{BOS} $A $B:1")
WORD = re.compile(r"(?i:\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b)|\d+(?:[.,]\d+)+|\w+|\n|[^\w\s]")

# fix_html's replacements, in fastai's order
HTML_REPLACEMENTS = (
    ("#39;", "'"), ("amp;", "&"), ("#146;", "'"), ("nbsp;", " "), ("#36;", "$"), ("\\n", "\n"), ("quot;", "'"),
    ("<br />", "\n"), ('\\"', '"'), ("<unk>", UNK), (" @.@ ", "."), (" @-@ ", "-"), (" @,@ ", ","), ("\\", " \\ "),
)  # fmt: skip
_ENTITY = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")  # what html.unescape replaces
_REP = re.compile(r"(\S)(\1{3,})")
_WREP = re.compile(r"(\b\w+\W+)(\1{3,})")


class Mapped:
    """A rewritten text and, for each of its characters, the ``(start, end)`` of the original characters it came
    from (``None`` while the text is the original)."""

    def __init__(self, text: str) -> None:
        self.text, self.spans = text, None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the rewritten characters ``[start, end)`` (``end > start``)."""
        if self.spans is None:
            return start, end
        return self.spans[start][0], self.spans[end - 1][1]

    def sub(self, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str]) -> Mapped:
        """``pattern.sub(replace, text)``, each replacement's characters spanning what it replaced (``pattern`` never
        matches the empty string)."""
        if pattern.search(self.text) is None:
            return self
        spans = self.spans or [(i, i + 1) for i in range(len(self.text))]
        text, new_spans, at = [], [], 0
        for match in pattern.finditer(self.text):
            start, end = match.span()
            replacement = replace(match)
            text += [self.text[at:start], replacement]
            new_spans += spans[at:start] + [(spans[start][0], spans[end - 1][1])] * len(replacement)
            at = end
        self.text, self.spans = "".join(text) + self.text[at:], new_spans + spans[at:]
        return self


def _literal(old: str, new: str) -> tuple[re.Pattern[str], Callable[[re.Match[str]], str]]:
    return re.compile(re.escape(old)), lambda _: new


def fix_html(text: Mapped) -> Mapped:
    for old, new in HTML_REPLACEMENTS:
        text = text.sub(*_literal(old, new))
    text = text.sub(_ENTITY, lambda m: html.unescape(m.group()))
    return text.sub(re.compile("  +"), lambda _: " ")


def replace_rep(text: Mapped) -> Mapped:
    return text.sub(_REP, lambda m: f" {TK_REP} {len(m.group(2)) + 1} {m.group(1)} ")


def replace_wrep(text: Mapped) -> Mapped:
    return text.sub(_WREP, lambda m: f" {TK_WREP} {len(m.group(2).split()) + 1} {m.group(1)} ")


def spec_add_spaces(text: Mapped) -> Mapped:
    return text.sub(re.compile(r"[/#\n]"), lambda m: f" {m.group()} ")


def rm_useless_spaces(text: Mapped) -> Mapped:
    return text.sub(re.compile(" {2,}"), lambda _: " ")


PRE_RULES = (fix_html, replace_rep, replace_wrep, spec_add_spaces, rm_useless_spaces)


def _caps(tokens: list[str], spans: list[tuple[int, int]]) -> tuple[list[str], list[tuple[int, int]]]:
    """fastai's ``replace_all_caps`` then ``deal_caps``, carrying the offsets."""
    out, out_spans = [], []
    for token, span in zip(tokens, spans, strict=True):
        if token.isupper() and len(token) > 1:
            out += [TK_UP, token.lower()]
            out_spans += [(span[0], span[0]), span]
            continue
        if token[0].isupper() and len(token) > 1 and token[1:].islower():
            out.append(TK_MAJ)
            out_spans.append((span[0], span[0]))
        out.append(token.lower())
        out_spans.append(span)
    return out, out_spans


def ulmfit_tokens(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The tokens of ``text`` after fastai's rules, and their offsets in ``text`` (see the module docstring)."""
    mapped = Mapped(text)
    for rule in PRE_RULES:
        mapped = rule(mapped)
    found = list(WORD.finditer(mapped.text))
    return _caps([m.group() for m in found], [mapped.span(*m.span()) for m in found])


def vocab_itos(token_lists: Iterable[Sequence[str]], max_vocab: int = 60000, min_freq: int = 2) -> list[str]:
    """fastai's ``Vocab.create`` (see the module docstring)."""
    counts = Counter(token for tokens in token_lists for token in tokens)
    itos = [token for token, count in counts.most_common(max_vocab) if count >= min_freq]
    itos = list(SPECIAL_TOKENS) + [token for token in itos if token not in SPECIAL_TOKENS]
    itos = itos[:max_vocab]
    if len(itos) < max_vocab:  # fastai: a multiple of 8 for fast mixed-precision training
        itos += ["xxfake"] * (-len(itos) % 8)
    return itos


def vocab_bytes(itos: Sequence[str], max_vocab: int, min_freq: int) -> bytes:
    """The artifact's bytes: canonical JSON (sorted keys, UTF-8, no spaces)."""
    document = {"format": FORMAT, "itos": list(itos), "max_vocab": max_vocab, "min_freq": min_freq}
    return json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


class UlmfitBackend:
    """fastai's rules and a vocabulary, read from the bytes of a ``ulmfit-vocab`` JSON artifact."""

    def __init__(self, data: bytes) -> None:
        try:
            document = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HarnessError(f"not a {FORMAT} JSON file: {exc}") from None
        itos = document.get("itos") if isinstance(document, dict) and document.get("format") == FORMAT else None
        if not isinstance(itos, list) or itos[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
            raise HarnessError(f"not a {FORMAT} JSON file: needs 'format': {FORMAT!r} and 'itos' starting {UNK}")
        self.data, self.itos = data, itos
        self.stoi = {token: i for i, token in enumerate(itos) if token != "xxfake"}
        self.vocab_size = len(itos)

    def pieces(self, text: str) -> Encoding:
        tokens, spans = ulmfit_tokens(text)
        return pieces([self.stoi.get(token, 0) for token in tokens], tokens, spans)  # 0: xxunk

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.itos[i] for i in ids)

    def token_to_id(self, token: str) -> int | None:
        return self.stoi.get(token)

    def content(self) -> bytes:
        return self.data


def ulmfit_tokenizer(data: bytes, template: Template = ULMFIT_TEMPLATE) -> Tokenizer:
    """The :class:`Tokenizer` of a ``ulmfit-vocab`` artifact's bytes."""
    specials = {"unk": UNK, "pad": PAD, "bos": BOS, "eos": EOS}
    return Tokenizer(UlmfitBackend(data), template, specials, "ulmfit")


def build_ulmfit_vocab(texts: Iterable[str], max_vocab: int = 60000, min_freq: int = 2) -> Tokenizer:
    """ULMFiT's tokenizer with the vocabulary of ``texts`` (each tokenised by :func:`ulmfit_tokens`)."""
    itos = vocab_itos((ulmfit_tokens(text)[0] for text in texts), max_vocab, min_freq)
    return ulmfit_tokenizer(vocab_bytes(itos, max_vocab, min_freq))
