"""LibriSpeech read-English speech recognition, scored by word error rate (WER).

Panayotov, Chen, Povey & Khudanpur, "Librispeech: an ASR corpus based on public domain audio books",
ICASSP 2015 (https://www.openslr.org/12). The corpus is 16 kHz mono FLAC with upper-case transcripts (A-Z,
apostrophe, space; no punctuation, no digits). Papers report WER in percent on ``dev-clean``, ``dev-other``,
``test-clean`` and ``test-other`` (SpecAugment, arXiv 1904.08779, Table 3: test-clean and test-other).

Protocol: corpus-level WER, ``100 * (S + D + I) / N`` with S, D, I the substitutions, deletions and insertions
of a minimum-edit-distance word alignment of each utterance, summed over the split, and N the number of reference
words (not a mean of per-utterance rates). Alignment counts come from ``jiwer.process_words``.

Modules (imported on use, none of them from here):

- ``score``: the scorer, a LibriSpeech split folder or one transcript file against ``utterance-id WORDS`` lines.
- ``metric``: :class:`~tasks.librispeech.metric.LibriSpeechWER`, a torchmetrics ``Metric`` with the scorer's counts.
- ``data``: :class:`~tasks.librispeech.data.LibriSpeechDataModule` over the on-disk corpus (FLAC via soundfile),
  with an 80-bin log-mel front end written with ``torch.stft``.
- ``fixtures``: speech synthesised by espeak-ng in the corpus layout, and a tiny scoring example.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.protocols import Protocol
from harness.registry import Task

KEYS = ("wer", "substitutions", "deletions", "insertions", "hits", "words", "utterances")

# The text normalisation of score.py (upper case, white space collapsed, nothing else): papers differ, so records
# scored this way name it as their protocol.
PROTOCOL = "corpus-wer-upper-case-whitespace"

LIBRISPEECH = Task(
    id="librispeech",
    title="LibriSpeech ASR corpus (word error rate)",
    score="tasks.librispeech.score:score",
    keys=KEYS,
    example="tasks.librispeech.fixtures:example",
    data="tasks.librispeech.data:LibriSpeechDataModule",
    metric="tasks.librispeech.metric:LibriSpeechWER",
    version=1,
    protocol=Protocol(
        PROTOCOL,
        "corpus word error rate (edits over reference words, summed over the test set) after upper-casing both sides "
        "and collapsing white space, nothing else (score.py)",
    ),
)
