"""Multiple-choice reading: RACE (middle, high, all) and the Story Cloze Test, scored by accuracy.

- ``race``, ``race-m``, ``race-h``: Lai, Xie, Liu, Yang & Hovy, "RACE: Large-scale ReAding Comprehension Dataset
  From Examinations", EMNLP 2017 (arXiv 1704.04683); the archive ``RACE.tar.gz``:
  ``RACE/{train,dev,test}/{middle,high}/<n>.txt``, each file one JSON object: ``article`` (the passage),
  ``questions`` (a list; a ``_`` in a question marks a blank to fill), ``options`` (per question a list of four
  answers), ``answers`` (per question the letter ``A``-``D`` of the right option), ``id`` (``high10024.txt``).
  ``race-m`` reads ``middle`` (test: 1,436 questions), ``race-h`` ``high`` (3,498), ``race`` both (4,934), as GPT
  and XLNet report RACE-m, RACE-h and RACE. A question's id is ``<file id>#<0-based question index>``
  (``high10024.txt#0``); labels ``A``, ``B``, ``C``, ``D``.
- ``story-cloze``: Mostafazadeh et al., "A Corpus and Cloze Evaluation for Deeper Understanding of Commonsense
  Stories", NAACL 2016 (arXiv 1604.01696); the Spring 2016 release's ``cloze_test_val__spring2016 -
  cloze_test_ALL_val.csv`` and ``cloze_test_test__spring2016 - cloze_test_ALL_test.csv`` (1,871 stories each; the
  same names without `` - cloze_test_ALL_<split>`` are accepted too): a CSV with the header ``InputStoryid,
  InputSentence1, ..., InputSentence4, RandomFifthSentenceQuiz1, RandomFifthSentenceQuiz2, AnswerRightEnding``
  (the right ending's number, ``1`` or ``2``). The ROCStories training stories have no wrong endings, so GPT
  (Radford et al. 2018) and the papers before it train on the validation set: the data module's train and
  validation loaders both serve it, the test loader the test set. Labels ``1``, ``2``; id ``InputStoryid``.

Records (``tasks.text_data.TextTaskDataModule`` with ``task: race`` / ``race-m`` / ``race-h`` / ``story-cloze``)
have three raw fields, ``context`` (RACE: the article; Story Cloze: the four sentences joined by single spaces),
``question`` (RACE: the question; Story Cloze: the empty string) and ``options`` (the candidate answers or
endings, in order); the label is the right option's index.

Predictions: a CSV of id -> answer. RACE has no submission format of its own (its test answers are public), so
the harness's ``id,prediction`` CSV is used, the answer a letter ``A``-``D``; references: the split folder
(``RACE/test``, holding ``middle/`` and ``high/``) or the ``RACE`` folder (its ``test``). Story Cloze's
predictions use the reference file's own id and answer columns, a CSV with the header
``InputStoryid,AnswerRightEnding`` and ``1`` / ``2`` answers (the format of the CodaLab evaluation server could not
be checked here); references: the test CSV (or its folder).
Key: ``accuracy`` in percent. Unknown, missing or duplicate ids and answers outside the answer set are errors
naming the file, line and field.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

KEYS = ("accuracy",)
RACE_LEVELS = {"race": ("middle", "high"), "race-m": ("middle",), "race-h": ("high",)}
RACE_LABELS = ("A", "B", "C", "D")
CLOZE_LABELS = ("1", "2")


def _race(task_id: str, name: str) -> Task:
    return Task(
        id=task_id,
        title=f"RACE{name} (Lai et al. 2017), test accuracy",
        score=f"tasks.multiple_choice.score:score_{task_id.replace('-', '_')}",
        keys=KEYS,
        example="tasks.multiple_choice.fixtures:example",
        data="tasks.text_data:TextTaskDataModule",
        metric="tasks.text_data:AnswerAccuracy",
        version=1,
    )


RACE = _race("race", "")
RACE_M = _race("race-m", "-M, middle school")
RACE_H = _race("race-h", "-H, high school")
STORY_CLOZE = Task(
    id="story-cloze",
    title="Story Cloze Test, Spring 2016 (Mostafazadeh et al. 2016), test accuracy",
    score="tasks.multiple_choice.score:score_story_cloze",
    keys=KEYS,
    example="tasks.multiple_choice.fixtures:example",
    data="tasks.text_data:TextTaskDataModule",
    metric="tasks.text_data:AnswerAccuracy",
    version=1,
)
