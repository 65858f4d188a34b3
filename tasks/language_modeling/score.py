"""Word-level perplexity scorers of WikiText-103 (and the ``debian-lm`` corpus in its layout) and of the One Billion
Word benchmark.

``perplexity = exp(-(1/N) * sum_i ln p(token_i | tokens before it))`` over the N tokens of the reference stream:

- **WikiText-103** (Merity et al., arXiv 1609.07843; the readers of the AWD-LSTM and PyTorch word-language-model
  code count the same way): every line of ``wiki.test.tokens`` split on white space, followed by one ``<eos>``
  (a blank line gives just ``<eos>``). References: the ``.tokens`` file, or the folder holding ``wiki.test.tokens``.
- **One Billion Word** (Chelba et al., arXiv 1312.3005; Jozefowicz et al., arXiv 1602.02410, "we sum over all the
  words (including the end of sentence symbol)"): every non-blank line (a sentence) split on white space, followed
  by ``</S>``. ``<S>``, the start marker, is context and not counted. References: a heldout shard, or the archive
  folder (``1-billion-word-language-modeling-benchmark-r13output``, or its parent), whose
  ``heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050`` is the test set. The benchmark's
  vocabulary maps out-of-vocabulary words to ``<UNK>`` and counts them (about 0.3 % of the words): a prediction
  line may name ``<UNK>`` in place of any reference word (not of ``</S>``), giving the probability the model gave
  its unknown-word token.

Predictions: one line per reference token, in order: ``<token><TAB><log-probability>``, the natural logarithm of
the probability the model gave that token (a finite number <= 0). The token column is checked against the
reference stream, so an off-by-one alignment is caught rather than scored.

Keys: ``perplexity``, ``nll`` (mean negative log-likelihood, nats per token) and ``tokens`` (N). A predictions
file that is shorter or longer than the stream, names a different token, or holds a malformed line raises
:class:`HarnessError` naming the file and line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from harness.errors import HarnessError

EOS = "<eos>"
LM1B_EOS = "</S>"
LM1B_UNK = "<UNK>"
WIKITEXT_TEST = "wiki.test.tokens"
LM1B_FOLDER = "1-billion-word-language-modeling-benchmark-r13output"
LM1B_HELDOUT = "heldout-monolingual.tokenized.shuffled"
LM1B_TEST = f"{LM1B_HELDOUT}/news.en.heldout-00000-of-00050"
TRAINING = "training-monolingual.tokenized.shuffled"
HELDOUT_SHARDS = 50


def train_shard(number: int) -> str:
    """``training-monolingual.tokenized.shuffled/news.en-000NN-of-00100`` (NN from 01 to 99)."""
    return f"{TRAINING}/news.en-{number:05d}-of-00100"


def heldout_shard(number: int) -> str:
    """``heldout-monolingual.tokenized.shuffled/news.en.heldout-000NN-of-00050`` (NN from 00 to 49)."""
    return f"{LM1B_HELDOUT}/news.en.heldout-{number:05d}-of-{HELDOUT_SHARDS:05d}"


def text_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 file without their line ends; errors name the file."""
    try:
        handle = Path(path).open(encoding="utf-8", newline="")
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    with handle:
        try:
            for line in handle:
                yield line.rstrip("\n").rstrip("\r")
        except UnicodeDecodeError as exc:
            raise HarnessError(f"{path}: not UTF-8 text ({exc.reason})") from None


def reference_stream(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, token)`` of a WikiText ``.tokens`` file, each line's tokens followed by ``<eos>``."""
    for number, line in enumerate(text_lines(path), start=1):
        for token in line.split():
            yield number, token
        yield number, EOS


def lm1b_stream(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, token)`` of a One Billion Word shard: each sentence's words followed by ``</S>``."""
    for number, line in enumerate(text_lines(path), start=1):
        words = line.split()
        if words:
            yield from ((number, word) for word in words)
            yield number, LM1B_EOS


def references_file(references: Path, hint: str = "the WikiText-103 layout: wiki.test.tokens") -> Path:
    """``references`` itself, or the ``wiki.test.tokens`` of a folder."""
    references = Path(references)
    if references.is_dir():
        references = references / WIKITEXT_TEST
    if not references.is_file():
        raise HarnessError(f"{references}: missing ({hint})")
    return references


def lm1b_references_file(references: Path) -> Path:
    """``references`` itself, or heldout shard 00000 of the archive folder (or of its parent)."""
    references = Path(references)
    if references.is_dir():
        inside = references / LM1B_FOLDER
        references = (inside if inside.is_dir() else references) / LM1B_TEST
    if not references.is_file():
        raise HarnessError(f"{references}: missing (the One Billion Word archive's test shard, {LM1B_TEST})")
    return references


def _prediction(predictions: Path, number: int, line: str) -> tuple[str, float]:
    token, sep, value = line.partition("\t")
    try:
        log_prob = float(value)
    except ValueError:
        log_prob = math.nan
    if not sep or not token or not math.isfinite(log_prob) or log_prob > 0.0:
        raise HarnessError(
            f"{predictions}:{number}: expected '<token><TAB><log-probability>' with a finite log-probability <= 0, "
            f"found {line[:60]!r}"
        )
    return token, log_prob


def score_stream(
    references: Path, predictions: Path, expected: Iterator[tuple[int, str]], unk: str | None = None
) -> dict[str, float]:
    """Perplexity, mean NLL and token count of per-token log-probabilities against the ``expected`` token stream of
    ``references``; ``unk`` (if given) may stand for any reference token but the end marker."""
    predictions = Path(predictions)
    total, count = 0.0, 0
    for number, line in enumerate(text_lines(predictions), start=1):
        token, log_prob = _prediction(predictions, number, line)
        ref = next(expected, None)
        if ref is None:
            raise HarnessError(f"{predictions}:{number}: more lines than the {count} tokens of {references}")
        if token != ref[1] and not (token == unk and ref[1] not in (EOS, LM1B_EOS)):
            raise HarnessError(
                f"{predictions}:{number}: token {token!r}, but token {count + 1} of {references} "
                f"(line {ref[0]}) is {ref[1]!r}"
            )
        total, count = total - log_prob, count + 1
    left = sum(1 for _ in expected)
    if left or not count:
        raise HarnessError(f"{predictions}: {count} lines for the {count + left} tokens of {references}")
    return {"perplexity": math.exp(total / count), "nll": total / count, "tokens": float(count)}


def score_perplexity(references: Path, predictions: Path) -> dict[str, float]:
    """WikiText-103: perplexity of per-token log-probabilities against a ``.tokens`` file (or folder)."""
    references = references_file(references)
    return score_stream(references, predictions, reference_stream(references))


def score_lm1b(references: Path, predictions: Path) -> dict[str, float]:
    """One Billion Word: perplexity of per-token log-probabilities against a heldout shard (or the archive)."""
    references = lm1b_references_file(references)
    return score_stream(references, predictions, lm1b_stream(references), unk=LM1B_UNK)


def write_log_probs(path: Path, tokens: list[str], log_probs: list[float]) -> Path:
    """Write the predictions format: ``<token><TAB><log-probability>`` lines."""
    if len(tokens) != len(log_probs):
        raise HarnessError(f"{path}: {len(log_probs)} log-probabilities for {len(tokens)} tokens")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{t}\t{p!r}\n" for t, p in zip(tokens, log_probs, strict=True)), encoding="utf-8")
    return path
