"""ULMFiT's registered models as data: model id -> (kind, network variant, vocabulary, classes).

``paper``: Section 4.1's AWD-LSTM (embedding 400, three LSTM layers of 1150, classifier hidden layer 50) with the
released code's vocabulary cap of 60,000 tokens (the paper states no vocabulary size); the classifier with IMDb's
two classes. ``budget``: the same structure sized for two CPU cores (embedding 64, LSTMs of 128) over the budget
tier's 8,000-token vocabulary, with ``fortune-category``'s 32 classes. Importable without torch.
"""

from __future__ import annotations

from typing import Any

MODELS: dict[str, tuple[str, str, int, int | None]] = {
    "ulmfit-awd-lstm-lm": ("lm", "paper", 60_000, None),
    "ulmfit-classifier": ("classifier", "paper", 60_000, 2),
    "ulmfit-budget-lm": ("lm", "budget", 8_000, None),
    "ulmfit-budget-classifier": ("classifier", "budget", 8_000, 32),
}
PROFILE_TOKENS = 70  # the BPTT length: one window of the LM, one BPT3C chunk of the classifier


def build(model: str, vocab_size: int | None = None, num_classes: int | None = None, **kwargs: Any):
    """The network of ``model`` (a key of :data:`MODELS`), with another vocabulary or class count if given."""
    from reproductions.ulmfit.model import VARIANTS, LanguageModel, TextClassifier

    kind, variant, vocab, classes = MODELS[model]
    if kind == "lm":
        return LanguageModel(vocab_size or vocab, VARIANTS[variant], **kwargs)
    return TextClassifier(vocab_size or vocab, num_classes or classes, VARIANTS[variant], **kwargs)
