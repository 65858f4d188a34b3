"""Unsupervised Data Augmentation for Consistency Training (Xie, Dai, Hovy, Luong & Le, arXiv 1904.12848v6): the
objective and the networks the paper trains with it.

The objective (Section 2.2, Equation 1; Section 2.4; Appendix A.1), written from the paper's definitions:

    J(theta) = E_{x1 ~ p_L} [ -log p_theta(y* | x1) ]                                   (supervised, with TSA)
             + lambda * 1/|B| sum_{x in B} I(max_y p_~theta(y | x) > beta) * D(p^sharp_~theta(y | x) || p_theta(y | x^))

- ``~theta`` is a fixed copy of the parameters: the target, the prediction on the *original* unlabelled example,
  carries no gradient (:func:`consistency_loss` detaches it).
- Sharpening: ``p^sharp(y | x) = softmax(z / tau)`` over the original's logits ``z``; ``tau`` = 0.4 for CIFAR-10,
  SVHN and ImageNet. ``tau = 1`` is no sharpening.
- Confidence-based masking: only examples whose highest (unsharpened) probability exceeds ``beta`` count; the
  sum is still divided by the whole unlabelled batch ``|B|``, as the equation writes it. ``beta`` = 0.8 for
  CIFAR-10 and SVHN, 0.5 for ImageNet; ``beta = 0`` (or below ``1/K``) masks nothing.
- ``D`` is the KL divergence. Equation 1 writes the cross-entropy ``CE(p~ || p)``; the two differ by the target's
  entropy, which carries no gradient, so they train identically. KL is 0 for identical predictions, which makes
  the logged value readable.
- Training Signal Annealing (Appendix A.1, Figure 5): at step ``t`` of ``T`` a labelled example whose probability
  of its correct class exceeds ``eta_t = alpha_t * (1 - 1/K) + 1/K`` is removed from the supervised loss, with
  ``alpha_t = 1 - exp(-5 t/T)`` (log), ``t/T`` (linear) or ``exp(5 (t/T - 1))`` (exp). The paper does not say
  how the remaining examples are averaged; here the loss is the mean over the examples kept (0 when none is).
- ``lambda`` = 1 in most experiments (20 for ImageNet 10%).
- Entropy minimisation (Appendix E.3, full ImageNet: "We use entropy minimization to sharpen the prediction"): an
  optional ``entropy_weight`` times the mean entropy of the predictions on the original unlabelled examples, with
  its gradient (google-research/uda's image code adds it the same way, on the originals' logits; its weight for
  ImageNet is not printed).

The networks: Wide-ResNet-28-2 (CIFAR-10, SVHN; :mod:`nets.wide_resnet`), ResNet-50 (ImageNet; :mod:`nets.resnet`),
the BERT-style text classifier (:mod:`nets.bert`: BERT base / large, or the randomly initialised 6-layer,
8-head Transformer of Appendix E.1), and the small budget-tier networks; :data:`NETWORKS` is their table.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from reproductions.uda.networks import NETWORKS

TSA_SCHEDULES = ("none", "linear", "log", "exp")


def tsa_alpha(schedule: str, progress: float) -> float:
    """``alpha_t`` of Figure 5 at ``progress = t / T`` (clipped to [0, 1]); ``"none"`` releases everything (1)."""
    p = min(1.0, max(0.0, float(progress)))
    if schedule == "linear":
        return p
    if schedule == "log":
        return 1.0 - math.exp(-5.0 * p)
    if schedule == "exp":
        return math.exp(5.0 * (p - 1.0))
    if schedule == "none":
        return 1.0
    raise HarnessError(f"unknown TSA schedule {schedule!r}; known: {', '.join(TSA_SCHEDULES)}")


def tsa_threshold(schedule: str, progress: float, num_classes: int) -> float:
    """``eta_t = alpha_t (1 - 1/K) + 1/K``: from ``1/K`` at the start towards 1 at the end of training."""
    k = 1.0 / num_classes
    return tsa_alpha(schedule, progress) * (1.0 - k) + k


def tsa_keep(logits: torch.Tensor, labels: torch.Tensor, threshold: float) -> torch.Tensor:
    """Bool ``(N,)``: True for the labelled examples kept, those whose correct-class probability is at most
    ``threshold`` (an example above it is removed from the loss). ``logits`` ``(N, K)``, ``labels`` ``(N,)``."""
    with torch.no_grad():
        correct = logits.float().softmax(-1).gather(1, labels[:, None])[:, 0]
    return correct <= threshold


def supervised_loss(logits: torch.Tensor, labels: torch.Tensor, threshold: float = 1.0) -> tuple[torch.Tensor, float]:
    """Cross-entropy averaged over the examples TSA keeps, and the fraction kept. ``threshold = 1`` keeps all."""
    keep = tsa_keep(logits, labels, threshold).float()
    per_example = F.cross_entropy(logits, labels, reduction="none")
    loss = (per_example * keep).sum() / keep.sum().clamp(min=1.0)
    return loss, float(keep.mean())


def consistency_loss(
    original_logits: torch.Tensor, augmented_logits: torch.Tensor, temperature: float = 1.0, threshold: float = 0.0
) -> tuple[torch.Tensor, float]:
    """Masked KL(p^sharp(y | x) || p(y | x^)) averaged over the unlabelled batch, and the fraction not masked.

    ``original_logits`` ``(N, K)``: the prediction on the original examples, used as a fixed target (detached);
    ``augmented_logits`` ``(N, K)``: on their augmented copies, the side that gets the gradient.
    """
    if temperature <= 0:
        raise HarnessError(f"the sharpening temperature must be positive; got {temperature}")
    target_logits = original_logits.detach().float()
    mask = (target_logits.softmax(-1).max(-1).values > threshold).float()  # (N,)
    target = (target_logits / temperature).softmax(-1)  # (N, K), sharpened
    log_target = (target_logits / temperature).log_softmax(-1)
    log_predicted = augmented_logits.float().log_softmax(-1)
    kl = (target * (log_target - log_predicted)).sum(-1)  # (N,)
    return (kl * mask).sum() / max(1, kl.shape[0]), float(mask.mean())


def mean_entropy(logits: torch.Tensor) -> torch.Tensor:
    """``-sum_y p log p`` of ``softmax(logits)`` ``(N, K)``, averaged over the batch (with its gradient)."""
    log_p = logits.float().log_softmax(-1)
    return -(log_p.exp() * log_p).sum(-1).mean()


class UDAObjective(NamedTuple):
    loss: torch.Tensor
    supervised: torch.Tensor
    consistency: torch.Tensor
    tsa_kept: float
    unmasked: float
    entropy: torch.Tensor | None = None


def uda_objective(
    labelled_logits: torch.Tensor,
    labels: torch.Tensor,
    original_logits: torch.Tensor | None = None,
    augmented_logits: torch.Tensor | None = None,
    weight: float = 1.0,
    tsa_eta: float = 1.0,
    temperature: float = 1.0,
    confidence: float = 0.0,
    entropy_weight: float = 0.0,
) -> UDAObjective:
    """Equation 1 with TSA, sharpening and masking: ``supervised + weight * consistency`` (``+ entropy_weight *``
    the originals' mean entropy when that is on). Without unlabelled logits (or with ``weight = 0``) it is the
    supervised loss alone (the baseline)."""
    supervised, kept = supervised_loss(labelled_logits, labels, tsa_eta)
    if original_logits is None or augmented_logits is None or weight == 0:
        zero = supervised.new_zeros(())
        return UDAObjective(supervised, supervised, zero, kept, 0.0)
    consistency, unmasked = consistency_loss(original_logits, augmented_logits, temperature, confidence)
    loss = supervised + weight * consistency
    if not entropy_weight:
        return UDAObjective(loss, supervised, consistency, kept, unmasked)
    entropy = mean_entropy(original_logits)
    return UDAObjective(loss + entropy_weight * entropy, supervised, consistency, kept, unmasked, entropy)


# --- the networks -------------------------------------------------------------------------------------------------


OBJECTIVES = ("uda", "supervised")  # the system's ``objective``: UDA, or the same network on the labels alone


def network_name(model: str) -> str:
    """``"uda-wrn-28-2"`` -> ``"wrn-28-2"``; errors name the known ids."""
    name = model.removeprefix("uda-")
    if not model.startswith("uda-") or name not in NETWORKS:
        raise HarnessError(f"unknown UDA model id {model!r}; known: {', '.join(f'uda-{n}' for n in NETWORKS)}")
    return name


def build(model: str, num_classes: int | None = None, vocab_size: int | None = None) -> nn.Module:
    """The network of the model id ``model`` (``uda-<network>``), randomly initialised. ``num_classes`` defaults to
    the network's dataset's (10, 1000, 2 or 45)."""
    row = NETWORKS[network_name(model)]
    classes = num_classes or {"cifar-10": 10, "fashion-mnist": 10, "imagenet-1k": 1000, "imdb": 2}.get(row.dataset, 45)
    if row.kind == "wrn":
        from nets.wide_resnet import wide_resnet

        return wide_resnet(num_classes=classes, **row.args)
    if row.kind == "resnet":
        from nets.resnet import resnet

        return resnet(row.args["depth"], classes)
    if row.kind == "bow":
        return BagOfWords(vocab_size or row.args["vocab"], row.args["dim"], classes)
    from nets.bert import bert_classifier

    return bert_classifier(row.args["size"], classes, vocab_size=vocab_size)


class BagOfWords(nn.Module):
    """The budget text classifier: the mean of the word embeddings of a text (padding, id 0, left out), dropout and
    a linear layer. Token ids ``(B, T)`` -> logits ``(B, num_classes)``. Not a paper model."""

    def __init__(self, vocab: int, dim: int, num_classes: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.drop = nn.Dropout(dropout)
        self.classifier = nn.Linear(dim, num_classes)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        real = (input_ids != 0).float()[..., None]  # (B, T, 1)
        mean = (self.embedding(input_ids) * real).sum(1) / real.sum(1).clamp(min=1.0)  # (B, D)
        return self.classifier(self.drop(mean))
