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
VARIANTS = {
    "gpt": Variant("gpt", False, "bookscorpus", about="GPT as released; fine-tuned on each task of Tables 2-4"),
    "gpt-no-aux": Variant("gpt", False, "glue-cola", about="Table 5: fine-tuned without the auxiliary LM objective"),
    "gpt-no-pretrain": Variant("gpt", False, "glue-cola", about="Table 5: trained on the task alone"),
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
