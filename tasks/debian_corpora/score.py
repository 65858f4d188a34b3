"""Scorers of the Debian budget corpora: word-level perplexity for ``debian-lm``, accuracy for the classifiers.

**Perplexity** (``debian-lm``), as WikiText-103 results are computed, by WikiText-103's scorer
(:mod:`tasks.language_modeling.score`; Merity et al., arXiv 1609.07843): the reference token stream is every line of
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

from pathlib import Path

from tasks.language_modeling.score import EOS, reference_stream, references_file, score_stream, write_log_probs

__all__ = ["EOS", "reference_stream", "write_log_probs", "score_perplexity", "score_classification"]
LM_KEYS = ("perplexity", "nll", "tokens")
CLASSIFICATION_KEYS = ("error", "accuracy")
BUILD_HINT = "build the corpus: python -m tasks.debian_corpora text OUT"


def score_perplexity(references: Path, predictions: Path) -> dict[str, float]:
    """Perplexity, mean NLL and token count of per-token log-probabilities against a ``.tokens`` file (WikiText-103's
    scorer, :func:`tasks.language_modeling.score.score_perplexity`, with this corpus's hint for a missing file)."""
    references = references_file(references, BUILD_HINT)
    return score_stream(references, predictions, reference_stream(references))


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
