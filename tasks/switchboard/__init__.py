"""Hub5'00 (the 2000 Hub-5 English evaluation, "Switchboard"): word error rate on its ``swb`` and ``ch`` subsets.

NIST's 2000 Hub-5 English evaluation set: LDC2002S09 (``hub5e_00/english/*.sph``, 40 two-channel 8 kHz telephone
conversations in NIST SPHERE) and LDC2002T43 (``2000_hub5_eng_eval_tr/reference/hub5e00.english.000405.stm``, the
reference segments, and ``en20000405_hub5.glm``, NIST's global mapping file). The 20 Switchboard conversations
(``sw_*``) are the ``swb`` subset, the 20 CallHome English ones (``en_*``) the ``ch`` subset; SpecAugment (arXiv
1904.08779, Table 4) reports WER on both.

Protocol: WER with NIST's Hub-5 normalisation, as sclite scores it after Kaldi's hypothesis filter (reference
words in parentheses, hesitations and fragments optionally deletable; markers dropped; the GLM's whole-word
rules); ``score``'s docstring lists exactly what is done and where it differs from sclite.

Modules (imported on use): ``score`` (the scorer: STM references, ``<segment-id> WORDS`` predictions, ``--glm``),
``metric`` (:class:`~tasks.switchboard.metric.Hub5WER`), ``data`` (:class:`~tasks.switchboard.data.Hub5DataModule`:
SPHERE audio cut into the STM's segments), ``train`` (:class:`~tasks.switchboard.train.SwitchboardDataModule`:
Switchboard-1, LDC97S62, with the ms98 transcriptions, prepared as Kaldi's s5c recipe does, to train on; Hub5'00 to
test on) and ``fixtures`` (espeak-ng speech written as two-channel SPHERE, both corpora's layouts).
"""

from harness.protocols import Protocol
from harness.registry import Task

KEYS = ("wer", "wer_swb", "wer_ch", "substitutions", "deletions", "insertions", "hits", "words", "segments")

# Records scored this way name it: sclite's Hub-5 scoring as far as score.py's docstring says, not sclite itself.
PROTOCOL = "hub5-wer-optional-deletable-glm-words"

SWITCHBOARD = Task(
    id="switchboard",
    title="Hub5'00 English evaluation, swb and ch subsets (word error rate)",
    score="tasks.switchboard.score:score",
    keys=KEYS,
    options=("glm",),
    example="tasks.switchboard.fixtures:example",
    data="tasks.switchboard.data:Hub5DataModule",
    metric="tasks.switchboard.metric:Hub5WER",
    version=1,
    protocol=Protocol(
        PROTOCOL,
        "Hub5'00 word error rate on the swb and ch subsets as sclite's Hub-5 scoring counts it, as far as score.py "
        "states: words the GLM marks optionally deletable cost nothing when left out (not sclite itself)",
    ),
)
