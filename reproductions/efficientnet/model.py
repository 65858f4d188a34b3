"""EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks (Tan & Le, ICML 2019), arXiv 1905.11946v5.

EfficientNet-B0 is the block table of the paper's Table 1 (:data:`nets.mbconv.B0_STAGES`, shared with CondConv's
EfficientNet-CondConv); B1-B7 scale it with the compound coefficients of
Section 3.3 (width, depth, resolution) and the dropout rates of Section 5.2. The numbers follow the authors' released
code (tensorflow/tpu, models/official/efficientnet): ``efficientnet_builder.efficientnet_params`` for the variant rows
and the block strings, ``efficientnet_model.round_filters`` / ``round_repeats`` for the rounding, and
``efficientnet_model.MBConvBlock`` / ``Model`` for the layer order (the block is MnasNet's and the network is
:class:`nets.mbconv.MBConvNet`, both shared with CondConv):

- MBConv = [1x1 expand conv, BN, swish] (skipped when the expand ratio is 1) -> kxk depthwise conv, BN, swish ->
  squeeze-excitation (global mean, 1x1 conv to ``int(0.25 * block INPUT channels)``, swish, 1x1 conv, sigmoid gate)
  -> 1x1 project conv, BN (no activation) -> drop-connect + identity skip when stride 1 and in == out channels.
- Stem: 3x3 conv stride 2 to 32 channels (width-scaled); head: 1x1 conv to 1280 (width-scaled), BN, swish, global
  average pool, dropout, fully connected classifier.
- BatchNorm with TF momentum 0.99 (PyTorch ``momentum=0.01``) and epsilon 1e-3.
- Stochastic depth ("drop connect"): block ``i`` of ``n`` survives with probability ``1 - 0.2 * i / n`` (official
  ``survival_prob`` 0.8 scaled by block index / block count), so the last block keeps ``1 - 0.2 (n-1)/n`` ~ 0.8.
- Initialisation as the official code: conv kernels N(0, 2 / fan_out) with fan_out = k*k*out/groups (TF counts a
  depthwise kernel's outputs per input channel), the classifier U(-1/sqrt(classes), 1/sqrt(classes)), zero biases.

Padding: every conv here pads symmetrically with ``k // 2``. The TF code uses 'SAME' padding, which for a stride-2
conv on an even-sized input pads one pixel less on the top/left than on the bottom/right. Output sizes, parameter
counts and multiply-adds are identical; only the sampling grid of stride-2 layers shifts by one pixel, which matters
when loading weights converted from the TF checkpoints, not when training from scratch.

Evaluation crop: the official eval pipeline (``preprocessing._decode_and_center_crop`` of the 2019 code the paper's
numbers come from) center-crops ``res / (res + 32)`` of the shorter side, then resizes to ``res`` (bicubic); see
:func:`eval_crop_fraction`. (Later versions of the repository switched to a fixed 0.875 fraction.)
"""

from __future__ import annotations

from nets.mbconv import BN_MOMENTUM, SURVIVAL_PROB, MBConvNet
from reproductions.efficientnet.variants import CROP_PADDING, VARIANTS, Variant, eval_crop_fraction  # noqa: F401


def efficientnet(
    variant: str = "b0",
    num_classes: int = 1000,
    dropout: float | None = None,
    survival_prob: float = SURVIVAL_PROB,
    bn_momentum: float = BN_MOMENTUM,
) -> MBConvNet:
    """Build EfficientNet-``variant`` (b0..b7); ``dropout=None`` takes the variant's rate from :data:`VARIANTS`."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown EfficientNet variant {variant!r}; known: {', '.join(VARIANTS)}")
    row = VARIANTS[variant]
    return MBConvNet(
        width=row.width,
        depth=row.depth,
        dropout=row.dropout if dropout is None else dropout,
        num_classes=num_classes,
        survival_prob=survival_prob,
        bn_momentum=bn_momentum,
    )
