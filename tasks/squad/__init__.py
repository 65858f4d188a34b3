"""SQuAD v1.1 and v2.0: extractive question answering, scored by the official evaluation scripts' rules.

Datasets: Rajpurkar, Zhang, Lopyrev & Liang, "SQuAD: 100,000+ Questions for Machine Comprehension of Text"
(arXiv:1606.05250) and Rajpurkar, Jia & Liang, "Know What You Don't Know: Unanswerable Questions for SQuAD"
(arXiv:1806.03822). References are the official dev JSON files (``dev-v1.1.json``, ``dev-v2.0.json``);
predictions are the official prediction JSON, ``{question id: answer text}`` (``""`` = no answer, v2.0).

Keys. ``squad-v1.1``: ``exact_match``, ``f1``. ``squad-v2.0``: the nine keys of ``evaluate-v2.0.py``
(``exact``, ``f1``, ``total``, then the same three for the ``HasAns`` and ``NoAns`` subsets), plus
``best_exact``, ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh`` when ``--na-probs FILE`` is given. As in
the official script, a subset's three keys are left out when the dataset has no question of that kind (the
official dev set has both). Scores are percentages, ``*_total`` are question counts. See ``tasks.squad.score``.

This module is imported to list the registry: it imports nothing heavy.
"""

from harness.registry import Task

V1_1_KEYS = ("exact_match", "f1")
V2_0_KEYS = (
    "exact",
    "f1",
    "total",
    "HasAns_exact",
    "HasAns_f1",
    "HasAns_total",
    "NoAns_exact",
    "NoAns_f1",
    "NoAns_total",
)
V2_0_NA_PROB_KEYS = ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh")

SQUAD_V1_1 = Task(
    id="squad-v1.1",
    title="SQuAD v1.1 (Stanford Question Answering Dataset), dev set",
    score="tasks.squad.score:score_v1",
    keys=V1_1_KEYS,
    example="tasks.squad.fixtures:example",
    data="tasks.squad.data:SquadDataModule",
    metric="tasks.squad.metric:SquadMetric",
    version=1,
)

SQUAD_V2_0 = Task(
    id="squad-v2.0",
    title="SQuAD v2.0 (with unanswerable questions), dev set",
    score="tasks.squad.score:score_v2",
    keys=V2_0_KEYS,
    options=("na_probs",),
    example="tasks.squad.fixtures:example",
    data="tasks.squad.data:SquadDataModule",
    metric="tasks.squad.metric:SquadMetric",
    version=1,
)
