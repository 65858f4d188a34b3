"""ImageNet's training-time metrics: top-1 / top-5 / error, the generic classification metrics of
:mod:`tasks.metrics` (where they live, shared with the text systems), named here for the image systems."""

from tasks.metrics import (
    TOP_K,
    ClassificationMetrics,
    GuessKeepingAccuracy,
    accuracy_error_metrics,
    accuracy_metrics,
    ranked_guesses,
)

__all__ = [
    "TOP_K",
    "ClassificationMetrics",
    "GuessKeepingAccuracy",
    "accuracy_error_metrics",
    "accuracy_metrics",
    "ranked_guesses",
]
