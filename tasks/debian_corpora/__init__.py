"""Budget corpora built on this machine from Debian packages: real English text and synthesised speech.

The budget tiers of ULMFiT (arXiv 1801.06146), ELMo (1802.05365), GPT (Radford et al. 2018), XLNet (1906.08237)
and UDA (1904.12848) need real text with labels, SpecAugment's (1904.08779) needs speech; none may be downloaded.
These tasks are built from packages ``setup.sh`` installs (docs/corpora.md: sizes, licences, how to build):

- ``debian-lm``: a language-modelling corpus of about 12 M tokens in WikiText-103's layout
  (``wiki.{train,valid,test}.tokens``) from WordNet's glosses, Webster's 1913 (GCIDE), The Devil's Dictionary,
  the Jargon File, FOLDOC and the fortune files; split by document, de-duplicated; scored by word-level
  perplexity from per-token log-probabilities (``score.score_perplexity``).
- ``wordnet-lexname``: WordNet gloss -> lexicographer file (45 classes); ``fortune-category``: fortune -> its
  fortune file (32 classes); Zhang et al.'s CSV layout, fixed train/test splits, few-label subsets of N per class
  by seed (``data.DebianTextDataModule``); scored by accuracy / error as ``tasks.text_classification``.
- ``espeak-speech``: sentences of the text corpus spoken by espeak-ng voices at several speeds and pitches, in
  LibriSpeech's layout (``tasks.librispeech`` reads and scores it unchanged; ``speech``).

Build: ``python -m tasks.debian_corpora text OUT`` and ``python -m tasks.debian_corpora speech OUT``.
This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task
from tasks.librispeech import KEYS as SPEECH_KEYS
from tasks.librispeech import LIBRISPEECH

LM_KEYS = ("perplexity", "nll", "tokens")
CLASSIFICATION_KEYS = ("error", "accuracy")

DEBIAN_LM = Task(
    id="debian-lm",
    title="Debian text corpus, WikiText-103 layout (word-level perplexity)",
    score="tasks.debian_corpora.score:score_perplexity",
    keys=LM_KEYS,
    example="tasks.debian_corpora.fixtures:example",
    data="tasks.debian_corpora.data:DebianLMDataModule",
    metric="tasks.language_modeling.metric:TokenPerplexity",
    version=1,
)
WORDNET_LEXNAME = Task(
    id="wordnet-lexname",
    title="WordNet gloss -> lexicographer file, 45 classes (accuracy)",
    score="tasks.debian_corpora.score:score_classification",
    keys=CLASSIFICATION_KEYS,
    example="tasks.debian_corpora.fixtures:example",
    data="tasks.debian_corpora.data:DebianTextDataModule",
    metric="tasks.metrics:accuracy_error_metrics",
    version=1,
)
FORTUNE_CATEGORY = Task(
    id="fortune-category",
    title="Fortune -> fortune file, 32 classes (accuracy)",
    score="tasks.debian_corpora.score:score_classification",
    keys=CLASSIFICATION_KEYS,
    example="tasks.debian_corpora.fixtures:example",
    data="tasks.debian_corpora.data:DebianTextDataModule",
    metric="tasks.metrics:accuracy_error_metrics",
    version=1,
)
ESPEAK_SPEECH = Task(
    id="espeak-speech",
    title="espeak-ng speech of Debian text in LibriSpeech's layout (word error rate)",
    score="tasks.librispeech.score:score",
    keys=SPEECH_KEYS,
    example="tasks.librispeech.fixtures:example",
    data="tasks.librispeech.data:LibriSpeechDataModule",
    metric="tasks.librispeech.metric:LibriSpeechWER",
    version=1,
    protocol=LIBRISPEECH.protocol,
)
