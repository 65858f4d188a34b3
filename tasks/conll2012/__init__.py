"""CoNLL-2012 (OntoNotes v5) semantic role labelling and coreference, scored as their official scripts score them.

Dataset: Pradhan, Moschitti, Xue, Uryupina & Zhang, "CoNLL-2012 Shared Task: Modeling Multilingual Unrestricted
Coreference in OntoNotes" (CoNLL 2012); the English ``*_gold_conll`` files the CoNLL-2012 scripts build from
OntoNotes 5.0 (LDC2013T19), under ``conll-2012/v4/data/{train,development,test}/data/english/annotations/``
(see :mod:`tasks.conll2012.data`). ELMo (arXiv:1802.05365) reports SRL F1 and the coreference average F1 on the
test split.

- ``srl-conll2012``: span-based SRL, ``srl-eval.pl`` of the CoNLL-2005 shared task (Carreras & Màrquez) applied to
  each sentence's predicate-argument columns, ``V`` excluded; keys ``precision``, ``recall``, ``f1``,
  ``perfect_props`` (percentages) and the counts ``correct``, ``excess``, ``missed``, ``propositions``.
- ``coref-conll2012``: the reference coreference scorer v8.01 (Pradhan et al. 2014); ``f1`` is the CoNLL average of
  the MUC, B³ and CEAFφ4 F1s; also ``muc_*``, ``bcub_*``, ``ceafe_*``, ``ceafm_*`` and ``mentions_*``
  (``recall``, ``precision``, ``f1``), percentages.

Predictions are a ``*_conll`` response file, as both official scorers take (``tasks.conll2012.score``). The ports
are in :mod:`tasks.conll2012.srl` and :mod:`tasks.conll2012.coref`; the tests compare them with numbers the Perl
scripts printed on cases written for them.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

_COUNTS = ("recall", "precision", "f1")
SRL_KEYS = ("precision", "recall", "f1", "perfect_props", "correct", "excess", "missed", "propositions")
COREF_KEYS = ("f1", *(f"{m}_{k}" for m in ("muc", "bcub", "ceafe", "ceafm", "mentions") for k in _COUNTS))

SRL_CONLL2012 = Task(
    id="srl-conll2012",
    title="CoNLL-2012 (OntoNotes v5) semantic role labelling (srl-eval.pl F1)",
    score="tasks.conll2012.score:score_srl",
    keys=SRL_KEYS,
    example="tasks.conll2012.fixtures:example",
    data="tasks.conll2012.data:Conll2012DataModule",
    metric="tasks.conll2012.metric:SrlMetric",
    version=1,
)

COREF_CONLL2012 = Task(
    id="coref-conll2012",
    title="CoNLL-2012 (OntoNotes v5) coreference (reference scorer v8.01, average F1 of MUC, B3, CEAF-e)",
    score="tasks.conll2012.score:score_coref",
    keys=COREF_KEYS,
    example="tasks.conll2012.fixtures:example",
    data="tasks.conll2012.data:Conll2012DataModule",
    metric="tasks.conll2012.metric:CorefMetric",
    version=1,
)
