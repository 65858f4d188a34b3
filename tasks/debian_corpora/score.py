"""Scorers of the Debian budget corpora: word-level perplexity for ``debian-lm``, accuracy for the classifiers.

**Perplexity** (``debian-lm``), as WikiText-103 results are computed (Merity et al., arXiv 1609.07843, and the
readers of the AWD-LSTM and PyTorch word-language-model code): the reference token stream is every line of
``wiki.test.tokens`` split on white space followed by one ``<eos>`` (blank lines included, giving just
``<eos>``). ``perplexity = exp(-(1/N) * sum log p(token_i | tokens before it))`` over all N tokens.

- references: ``wiki.test.tokens`` (or ``wiki.valid.tokens``), or the corpus folder (its ``wiki.test.tokens``);
- predictions: one line per reference token, in order: ``<token><TAB><log-probability>``, the natural logarithm
  of the probability the model gave that token (a finite number <= 0). The token column is checked against the
  reference stream, so an off-by-one alignment is caught rather than scored.

Keys: ``perplexity``, ``nll`` (mean negative log-likelihood, nats per token) and ``tokens`` (N). A predictions
file that is shorter or longer than the stream, names a different token, or holds a malformed line raises
:class:`HarnessError` naming the file and line.

**Accuracy** (``wordnet-lexname``, ``fortune-category``): ``tasks.text_classification.score``'s scoring over the
corpus's ``test.csv`` (references: an ``id,label`` CSV, or the corpus folder, whose ``test.csv`` is read with ids
the 0-based row numbers and labels the 0-based class indices); keys ``error`` and ``accuracy`` in percent.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from harness.errors import HarnessError

EOS = "<eos>"
LM_KEYS = ("perplexity", "nll", "tokens")
CLASSIFICATION_KEYS = ("error", "accuracy")


def _text_lines(path: Path) -> Iterator[str]:
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
    """``(line number, token)`` of a ``.tokens`` file, each line's tokens followed by ``<eos>``."""
    for number, line in enumerate(_text_lines(path), start=1):
        for token in line.split():
            yield number, token
        yield number, EOS


def references_file(references: Path) -> Path:
    """``references`` itself, or the ``wiki.test.tokens`` of a corpus folder."""
    references = Path(references)
    if references.is_dir():
        references = references / "wiki.test.tokens"
    if not references.is_file():
        raise HarnessError(f"{references}: missing (build the corpus: python -m tasks.debian_corpora text OUT)")
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


def score_perplexity(references: Path, predictions: Path) -> dict[str, float]:
    """Perplexity, mean NLL and token count of per-token log-probabilities against a ``.tokens`` file."""
    references, predictions = references_file(references), Path(predictions)
    expected = reference_stream(references)
    total, count = 0.0, 0
    for number, line in enumerate(_text_lines(predictions), start=1):
        token, log_prob = _prediction(predictions, number, line)
        ref = next(expected, None)
        if ref is None:
            raise HarnessError(f"{predictions}:{number}: more lines than the {count} tokens of {references}")
        if token != ref[1]:
            raise HarnessError(
                f"{predictions}:{number}: token {token!r}, but token {count + 1} of {references} "
                f"(line {ref[0]}) is {ref[1]!r}"
            )
        total, count = total - log_prob, count + 1
    left = sum(1 for _ in expected)
    if left or not count:
        raise HarnessError(f"{predictions}: {count} lines for the {count + left} tokens of {references}")
    return {"perplexity": math.exp(total / count), "nll": total / count, "tokens": float(count)}


def write_log_probs(path: Path, tokens: list[str], log_probs: list[float]) -> Path:
    """Write the predictions format: ``<token><TAB><log-probability>`` lines."""
    if len(tokens) != len(log_probs):
        raise HarnessError(f"{path}: {len(log_probs)} log-probabilities for {len(tokens)} tokens")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{t}\t{p!r}\n" for t, p in zip(tokens, log_probs, strict=True)), encoding="utf-8")
    return path


def read_reference_labels(references: Path) -> dict[str, str]:
    """``id -> label`` from an ``id,label`` CSV, or from the ``test.csv`` of a classification corpus folder."""
    from tasks.imagenet.score import read_references

    references = Path(references)
    if references.is_dir():
        from tasks.debian_corpora.data import read_classification

        return {example.id: str(example.label) for example in read_classification(references, "test")}
    return read_references(references)


def score_classification(references: Path, predictions: Path) -> dict[str, float]:
    """Accuracy and error (percent) of ``id,prediction`` rows against the test labels."""
    from tasks.imagenet.score import score_labels

    result = score_labels(read_reference_labels(references), references, predictions, stacklevel=3)
    return {"error": result["error"], "accuracy": result["top1"]}
