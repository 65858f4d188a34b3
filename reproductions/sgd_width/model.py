"""Networks of "The Effect of Network Width on Stochastic Gradient Descent and Generalization: an Empirical Study"
(Park, Sohl-Dickstein, Le & Smith, ICML 2019), arXiv 1905.03776v1.

Families of MLPs, plain ConvNets and ResNets, each with and without batch normalization, whose hidden widths are a
base width times a widening factor (variants.FAMILIES). Every dense and conv layer is built in one of the two
parameterizations the paper compares:

- standard: ``W ~ N(0, sigma_w^2 / fan_in)``, ``b ~ N(0, sigma_b^2)``, layer ``W x + b``;
- NTK:      ``w ~ N(0, sigma_w^2)``,          ``b ~ N(0, sigma_b^2)``, layer ``w x / sqrt(fan_in) + b``.

At initialization both compute the same function of the same draws (``W = w / sqrt(fan_in)``); they differ in
how SGD moves them: the gradient with respect to ``w`` is that with respect to ``W`` divided by ``sqrt(fan_in)``, so
a step of size ``eps`` on ``w`` is a step of size ``eps / fan_in`` on ``W``. (neural-tangents, a library co-written by
the paper's second author, writes NTK as ``w ~ N(0, 1)``, layer ``sigma_w w x / sqrt(fan_in) + sigma_b b``: the same
function, with a step ``eps`` here being ``eps / sigma_w^2`` there. The paper's section 2, which fixes its own
convention, could not be read: README.md.) ``fan_in`` is input features (dense) or
input channels x kernel height x kernel width (conv). One ``sigma_w`` serves every layer (``sqrt(2)`` by default:
He's value for ReLU), biases start at ``N(0, sigma_b^2)`` (zero by default). Batch norm, where present, follows each
conv/dense layer before the ReLU (MLP, CNN) or opens each pre-activation residual branch (ResNet).

Shapes: images ``(N, C, H, W)`` -> logits ``(N, num_classes)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from reproductions.sgd_width.variants import FAMILIES, PARAMETERIZATIONS, Family

SIGMA_W = math.sqrt(2.0)
SIGMA_B = 0.0


class ParamLayer(nn.Module):
    """Shared initialization of :class:`Dense` and :class:`Conv` in either parameterization."""

    def _init(self, shape: tuple[int, ...], fan_in: int, parameterization: str, sigma_w: float, sigma_b: float):
        if parameterization not in PARAMETERIZATIONS:
            raise ValueError(f"unknown parameterization {parameterization!r}; known: {list(PARAMETERIZATIONS)}")
        self.parameterization, self.fan_in = parameterization, fan_in
        ntk = parameterization == "ntk"
        self.scale = 1.0 / math.sqrt(fan_in) if ntk else 1.0  # applied in forward (NTK) or folded into init
        self.weight = nn.Parameter(torch.randn(shape) * (sigma_w if ntk else sigma_w / math.sqrt(fan_in)))
        self.bias = nn.Parameter(torch.randn(shape[0]) * sigma_b)


class Dense(ParamLayer):
    def __init__(self, in_features: int, out_features: int, parameterization: str, sigma_w: float, sigma_b: float):
        super().__init__()
        self._init((out_features, in_features), in_features, parameterization, sigma_w, sigma_b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, in) -> (N, out)
        return F.linear(x, self.weight * self.scale, self.bias)


class Conv(ParamLayer):
    def __init__(
        self, cin: int, cout: int, kernel: int, parameterization: str, sigma_w: float, sigma_b: float, stride: int = 1
    ):
        super().__init__()
        self.stride, self.padding = stride, kernel // 2
        self._init((cout, cin, kernel, kernel), cin * kernel * kernel, parameterization, sigma_w, sigma_b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, cin, H, W) -> (N, cout, H / stride, W / stride)
        return F.conv2d(x, self.weight * self.scale, self.bias, stride=self.stride, padding=self.padding)


def _norm(kind: str, channels: int, batch_norm: bool) -> nn.Module:
    if not batch_norm:
        return nn.Identity()
    return nn.BatchNorm1d(channels) if kind == "mlp" else nn.BatchNorm2d(channels)


class MLP(nn.Module):
    """``depth`` hidden layers of ``hidden`` units: [Dense, (BN), ReLU] x depth, then a Dense readout."""

    def __init__(self, in_features: int, hidden: int, depth: int, num_classes: int, batch_norm: bool, **layer):
        super().__init__()
        blocks: list[nn.Module] = []
        for i in range(depth):
            blocks += [Dense(in_features if i == 0 else hidden, hidden, **layer), _norm("mlp", hidden, batch_norm)]
            blocks.append(nn.ReLU())
        self.features = nn.Sequential(*blocks)
        self.readout = Dense(hidden, num_classes, **layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.features(x.flatten(1)))  # (N, C, H, W) -> (N, C*H*W) -> (N, classes)


class CNN(nn.Module):
    """Two stages of ``depth`` [Conv 3x3, (BN), ReLU] with ``width`` then ``2 width`` channels, a 2x2 max-pool
    between them, global average pooling and a Dense readout."""

    def __init__(self, cin: int, width: int, depth: int, num_classes: int, batch_norm: bool, kernel: int, **layer):
        super().__init__()
        blocks: list[nn.Module] = []
        channels = cin
        for stage, cout in enumerate((width, 2 * width)):
            if stage:
                blocks.append(nn.MaxPool2d(2))
            for _ in range(depth):
                blocks += [Conv(channels, cout, kernel, **layer), _norm("cnn", cout, batch_norm), nn.ReLU()]
                channels = cout
        self.features = nn.Sequential(*blocks)
        self.readout = Dense(channels, num_classes, **layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.features(x).mean(dim=(2, 3)))  # (N, 2w, H/2, W/2) -> (N, 2w) -> (N, classes)


class ResidualBlock(nn.Module):
    """Pre-activation block (Wide ResNet): x + conv(relu(bn(conv(relu(bn(x)))))); a 1x1 conv on the shortcut
    when the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int, batch_norm: bool, kernel: int, **layer):
        super().__init__()
        self.norm1, self.norm2 = _norm("resnet", cin, batch_norm), _norm("resnet", cout, batch_norm)
        self.conv1 = Conv(cin, cout, kernel, stride=stride, **layer)
        self.conv2 = Conv(cout, cout, kernel, **layer)
        self.shortcut = Conv(cin, cout, 1, stride=stride, **layer) if (stride != 1 or cin != cout) else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.norm1(x))
        skip = x if self.shortcut is None else self.shortcut(out)
        return skip + self.conv2(F.relu(self.norm2(self.conv1(out))))


class ResNet(nn.Module):
    """Stem conv to ``width`` channels, three stages of ``depth`` blocks with ``width``, ``2 width``, ``4 width``
    channels (strides 1, 2, 2), then (BN), ReLU, global average pooling and a Dense readout."""

    def __init__(self, cin: int, width: int, depth: int, num_classes: int, batch_norm: bool, kernel: int, **layer):
        super().__init__()
        self.stem = Conv(cin, width, kernel, **layer)
        blocks, channels = [], width
        for stage, cout in enumerate((width, 2 * width, 4 * width)):
            for i in range(depth):
                stride = 2 if stage and i == 0 else 1
                blocks.append(ResidualBlock(channels, cout, stride, batch_norm, kernel, **layer))
                channels = cout
        self.blocks = nn.Sequential(*blocks)
        self.norm = _norm("resnet", channels, batch_norm)
        self.readout = Dense(channels, num_classes, **layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.norm(self.blocks(self.stem(x))))  # (N, 4w, H/4, W/4)
        return self.readout(out.mean(dim=(2, 3)))


def build(
    family: str,
    width: int,
    parameterization: str,
    in_channels: int = 1,
    image_size: int = 28,
    num_classes: int = 10,
    sigma_w: float = SIGMA_W,
    sigma_b: float = SIGMA_B,
    base_width: int | None = None,
) -> nn.Module:
    """The member of ``family`` (variants.FAMILIES) with widening factor ``width`` in ``parameterization``.

    The module carries ``fan_in`` (the first stage's hidden fan-in, variants.Family.fan_in), which the normalized
    noise scale of the standard parameterization uses.
    """
    spec: Family = FAMILIES[family]
    hidden = spec.hidden_width(width, base_width)
    layer = {"parameterization": parameterization, "sigma_w": sigma_w, "sigma_b": sigma_b}
    if spec.kind == "mlp":
        in_features = in_channels * image_size * image_size
        model: nn.Module = MLP(in_features, hidden, spec.depth, num_classes, spec.batch_norm, **layer)
    else:
        cls = CNN if spec.kind == "cnn" else ResNet
        model = cls(in_channels, hidden, spec.depth, num_classes, spec.batch_norm, spec.kernel, **layer)
    model.fan_in = spec.fan_in(width, base_width)
    return model
