"""DPRD: the Definite Pronoun Resolution Dataset of Winograd-style sentence pairs, scored by accuracy.

Rahman & Ng, "Resolving Complex Cases of Definite Pronouns: The Winograd Schema Challenge", EMNLP-CoNLL 2012; the
files ``train.c.txt`` (1,322 examples) and ``test.c.txt`` (564) as distributed
(http://www.hlt.utdallas.edu/~vince/data/emnlp12/). Each example is four lines and a blank one: the sentence, the
target pronoun, the two candidate antecedents separated by a comma, the correct antecedent; when the pronoun occurs
more than once in the sentence its first occurrence is the one to resolve. GPT (Radford et al. 2018, Figure 2
right) resolves it zero-shot. Id: the 0-based index of the example in its file; labels ``0`` / ``1``, the index of
the right candidate on the third line.

Predictions (``harness score dprd --references test.c.txt --predictions P``): a CSV with the header
``id,prediction``, one row per test example, the prediction ``0`` or ``1``. DPRD has no submission format of its
own (its test answers are public); the harness's CSV is used. References: ``test.c.txt`` or its folder. Key:
``accuracy`` in percent; unknown, missing or duplicate ids and answers other than 0 / 1 are errors naming the file,
line and field.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

LABELS = ("0", "1")

DPRD = Task(
    id="dprd",
    title="DPRD, Winograd-style definite pronoun resolution (Rahman & Ng 2012), test accuracy",
    score="tasks.dprd.score:score_dprd",
    keys=("accuracy",),
    example="tasks.dprd.fixtures:example",
    data="tasks.text_data:TextTaskDataModule",
    metric="tasks.text_data:AnswerAccuracy",
    version=1,
)
