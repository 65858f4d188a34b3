"""Word-level language modelling: WikiText-103 and the One Billion Word benchmark, scored by perplexity.

- ``wikitext-103``: Merity, Xiong, Bradbury & Socher, "Pointer Sentinel Mixture Models" (arXiv 1609.07843), the
  word-level archive ``wikitext-103-v1.zip``: ``wikitext-103/wiki.{train,valid,test}.tokens``, UTF-8, already
  tokenised (tokens separated by spaces, ``@-@`` / ``@,@`` / ``@.@`` inside words and numbers, rare words
  ``<unk>``), one paragraph or heading (`` = Title = ``) per line, blank lines between. ULMFiT (arXiv 1801.06146)
  pre-trains on it; GPT and XLNet cite it. The ``debian-lm`` budget corpus is written in this layout and read by
  the same code (:mod:`tasks.language_modeling.wikitext`).
- ``lm1b``: Chelba et al., "One Billion Word Benchmark for Measuring Progress in Statistical Language Modeling"
  (arXiv 1312.3005), the archive ``1-billion-word-language-modeling-benchmark-r13output.tar.gz``:
  ``training-monolingual.tokenized.shuffled/news.en-000NN-of-00100`` (NN = 01..99) and
  ``heldout-monolingual.tokenized.shuffled/news.en.heldout-000NN-of-00050`` (NN = 00..49), UTF-8, one tokenised
  sentence per line. The test set is heldout shard 00000, as ELMo (arXiv 1802.05365) and the papers it compares
  with use it (:mod:`tasks.language_modeling.lm1b`).

Perplexity ``exp(-(1/N) sum_i ln p(token_i | tokens before it))`` over every token of the test file, counted as
each benchmark counts it (:mod:`tasks.language_modeling.score`): WikiText-103 each line's tokens plus one
``<eos>``; the One Billion Word benchmark each sentence's words plus its end marker ``</S>`` (the start marker
``<S>`` is context, never predicted). Predictions are one ``<token><TAB><log-probability>`` line per counted token.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

LM_KEYS = ("perplexity", "nll", "tokens")

WIKITEXT_103 = Task(
    id="wikitext-103",
    title="WikiText-103 (Merity et al. 2016), word-level perplexity",
    score="tasks.language_modeling.score:score_perplexity",
    keys=LM_KEYS,
    example="tasks.language_modeling.fixtures:example",
    data="tasks.language_modeling.wikitext:WikiTextDataModule",
    metric="tasks.language_modeling.metric:TokenPerplexity",
    version=1,
)
LM1B = Task(
    id="lm1b",
    title="One Billion Word benchmark (Chelba et al. 2013), heldout shard 00000, perplexity",
    score="tasks.language_modeling.score:score_lm1b",
    keys=LM_KEYS,
    example="tasks.language_modeling.fixtures:example",
    data="tasks.language_modeling.lm1b:Lm1bDataModule",
    metric="tasks.language_modeling.metric:TokenPerplexity",
    version=1,
)
