"""``debian-lm``'s perplexity metric: WikiText-103's, :class:`tasks.language_modeling.metric.TokenPerplexity`."""

from tasks.language_modeling.metric import TokenPerplexity

__all__ = ["TokenPerplexity"]
