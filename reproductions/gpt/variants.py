"""GPT's model ids (importable without torch): each names a size of :data:`reproductions.gpt.model.SIZES` and the
dataset its arch record and claims use. The pre-training system builds the LM of that size, the fine-tuning system
the LM with Figure 1's head; what differs between ids of one size (auxiliary LM weight, layers transferred) is in
the tier configs (``overrides``), so each id's records are judged on their own."""

from __future__ import annotations

from typing import NamedTuple


class Variant(NamedTuple):
    size: str  # key of model.SIZES
    task: bool  # the registered (profiled) network: the LM (False) or the LM with a classification head (True)
    dataset: str  # where its records (and the arch record) belong
    classes: int = 0
    about: str = ""


BUDGET_CLASSES = 45  # wordnet-lexname
# Figure 2 (right): the pre-training's zero-shot heuristics after N updates (log-spaced, the figure's 10^3 .. 10^6)
ZERO_SHOT_UPDATES = (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
VARIANTS = {
    "gpt": Variant("gpt", False, "bookscorpus", about="GPT as released; fine-tuned on each task of Tables 2-4"),
    "gpt-no-aux": Variant("gpt", False, "glue-cola", about="Table 5: fine-tuned without the auxiliary LM objective"),
    "gpt-no-pretrain": Variant("gpt", False, "glue-cola", about="Table 5: trained on the task alone"),
    "gpt-lstm": Variant("gpt-lstm", False, "glue-cola", about="Table 5: a single-layer 2048-unit LSTM, same framework"),
    **{
        f"gpt-transfer-{k}": Variant("gpt", False, "glue-mnli-m", about=f"Figure 2 (left): embeddings and {k} blocks")
        for k in range(13)
    },
    **{
        f"gpt-updates-{n}": Variant("gpt", False, "bookscorpus", about=f"Figure 2 (right): the LM after {n} updates")
        for n in ZERO_SHOT_UPDATES
    },
    "gpt-budget-lm": Variant("gpt-budget", False, "debian-lm", about="budget pre-training on debian-lm"),
    "gpt-budget": Variant("gpt-budget", True, "wordnet-lexname", BUDGET_CLASSES, "all transferred, aux LM 0.5"),
    "gpt-budget-no-aux": Variant("gpt-budget", True, "wordnet-lexname", BUDGET_CLASSES, "all transferred, no aux LM"),
    "gpt-budget-no-pretrain": Variant("gpt-budget", True, "wordnet-lexname", BUDGET_CLASSES, "nothing transferred"),
    **{
        f"gpt-budget-transfer-{k}": Variant(
            "gpt-budget", True, "wordnet-lexname", BUDGET_CLASSES, f"embeddings and the first {k} blocks transferred"
        )
        for k in range(3)
    },
}
