"""Textual entailment: SNLI and SciTail, each in its distributed format, scored by accuracy.

- ``snli``: Bowman, Angeli, Potts & Manning, "A large annotated corpus for learning natural language inference",
  EMNLP 2015 (arXiv 1508.05326); the archive ``snli_1.0.zip``: ``snli_1.0/snli_1.0_{train,dev,test}.jsonl``, one
  JSON object a line with ``gold_label``, ``sentence1`` (premise), ``sentence2`` (hypothesis), ``pairID``,
  ``captionID``, ``annotator_labels`` and the parses. Pairs whose ``gold_label`` is ``-`` (no majority among the
  annotators) are dropped, as every published SNLI number does (550,152 / 10,000 / 10,000 pairs become
  549,367 / 9,842 / 9,824). Labels, in index order: ``entailment``, ``neutral``, ``contradiction``. Id: ``pairID``.
  ELMo (arXiv 1802.05365) and GPT report test accuracy.
- ``scitail``: Khot, Sabharwal & Clark, "SciTail: A Textual Entailment Dataset from Science Question Answering",
  AAAI 2018; the archive ``SciTailV1.1.zip``: ``SciTailV1.1/tsv_format/scitail_1.0_{train,dev,test}.tsv``, no
  header, one ``premise<TAB>hypothesis<TAB>label`` line a pair (23,596 / 1,304 / 2,126), quote characters being
  plain text. Labels, in index order: ``entails``, ``neutral``. Id: the 0-based line number within the file (the
  file has no id column). GPT reports test accuracy.

Predictions (``harness score snli|scitail --references R --predictions P``): a CSV with the header
``id,prediction`` and one row per scored pair, the label spelled as the dataset spells it (``entailment`` ...,
``entails`` / ``neutral``). Neither benchmark defines a submission format (both distribute their test labels), so
the harness's ``id,prediction`` CSV of the text-classification tasks is used. References: the split's file as
distributed (``snli_1.0_test.jsonl``, ``scitail_1.0_test.tsv``) or the dataset folder (its test file). Key:
``accuracy`` in percent. Unknown ids, missing ids, duplicate ids and labels outside the label set are errors naming
the file, line and field (:func:`tasks.text_files.read_answers`).

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

KEYS = ("accuracy",)
SNLI_LABELS = ("entailment", "neutral", "contradiction")
SCITAIL_LABELS = ("entails", "neutral")

SNLI = Task(
    id="snli",
    title="SNLI 1.0 (Bowman et al. 2015), test accuracy",
    score="tasks.entailment.score:score_snli",
    keys=KEYS,
    example="tasks.entailment.fixtures:example",
    data="tasks.text_data:TextTaskDataModule",
    metric="tasks.text_data:AnswerAccuracy",
    version=1,
)
SCITAIL = Task(
    id="scitail",
    title="SciTail 1.1 (Khot et al. 2018), test accuracy",
    score="tasks.entailment.score:score_scitail",
    keys=KEYS,
    example="tasks.entailment.fixtures:example",
    data="tasks.text_data:TextTaskDataModule",
    metric="tasks.text_data:AnswerAccuracy",
    version=1,
)
