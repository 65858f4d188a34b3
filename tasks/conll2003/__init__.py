"""CoNLL-2003 English named-entity recognition, scored exactly as the shared task's ``conlleval`` script scores it.

Dataset: Tjong Kim Sang & De Meulder, "Introduction to the CoNLL-2003 Shared Task: Language-Independent Named Entity
Recognition" (CoNLL 2003, arXiv:cs/0306050). Files ``eng.train``, ``eng.testa`` (development) and ``eng.testb``
(test), as distributed: one token a line, four space-separated columns ``word POS chunk NER``, sentences separated
by blank lines, documents started by a ``-DOCSTART-`` line; NER tags in IOB1 (``I-PER`` opens an entity, ``B-PER``
only where an entity directly follows another of the same type). ELMo (arXiv:1802.05365) reports test F1 on
``eng.testb``.

Predictions are ``conlleval``'s own input: the references file with one more column, the predicted tag, on every
token line (``-DOCSTART-`` lines too, predicted ``O``), blank lines where the references have them; so
``perl conlleval.pl < predictions`` gives the same numbers. Keys: ``precision``, ``recall``, ``f1`` (entity spans,
percentages) and ``accuracy`` (token tags, ``-DOCSTART-`` lines counted, as conlleval counts them). See
:mod:`tasks.conll2003.score` for the port and how it was checked against the Perl script.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

KEYS = ("precision", "recall", "f1", "accuracy")

CONLL2003_NER = Task(
    id="conll2003-ner",
    title="CoNLL-2003 English named-entity recognition (conlleval span F1)",
    score="tasks.conll2003.score:score",
    keys=KEYS,
    example="tasks.conll2003.fixtures:example",
    data="tasks.conll2003.data:Conll2003DataModule",
    metric="tasks.conll2003.metric:ConllNerMetric",
    version=1,
)
