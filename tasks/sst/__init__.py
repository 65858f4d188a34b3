"""SST-5: the Stanford Sentiment Treebank's fine-grained sentence labels, scored by accuracy.

Socher, Perelygin, Wu, Chuang, Manning, Ng & Potts, "Recursive Deep Models for Semantic Compositionality Over a
Sentiment Treebank", EMNLP 2013; the archive ``trainDevTestTrees_PTB.zip``: ``trees/{train,dev,test}.txt``, one
sentence a line as a Penn-Treebank-style binary tree whose every node carries a sentiment label 0-4
(``(3 (2 It) (4 (2 's) (4 good)))``; 0 very negative ... 4 very positive; brackets in the text are ``-LRB-`` /
``-RRB-``). 8,544 / 1,101 / 2,210 sentences. The task (as ELMo, arXiv 1802.05365, reports it) classifies whole
sentences: the label is the root's, the text the leaves in order joined by single spaces; the phrase labels inside
the tree are not examples here. Labels ``0`` ... ``4``. Id: the 0-based line number of the tree in its file.

Predictions (``harness score sst-5 --references trees/test.txt --predictions P``): a CSV with the header
``id,prediction``, one row per test sentence, the label a digit 0-4. SST has no submission format of its own (its
test labels are public); the harness's text-classification CSV is used. References: ``trees/test.txt`` or the
folder holding ``trees/``. Key: ``accuracy`` in percent; unknown, missing or duplicate ids and labels outside 0-4
are errors naming the file, line and field.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

LABELS = ("0", "1", "2", "3", "4")

SST_5 = Task(
    id="sst-5",
    title="SST-5, fine-grained sentence sentiment (Socher et al. 2013), test accuracy",
    score="tasks.sst.score:score_sst5",
    keys=("accuracy",),
    example="tasks.sst.fixtures:example",
    data="tasks.text_data:TextTaskDataModule",
    metric="tasks.text_data:AnswerAccuracy",
    version=1,
)
