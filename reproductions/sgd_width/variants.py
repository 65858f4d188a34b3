"""The model families of the SGD width study and the normalized noise scale, without torch (the registry imports this).

Park, Sohl-Dickstein, Le & Smith, "The Effect of Network Width on Stochastic Gradient Descent and Generalization:
an Empirical Study", ICML 2019, arXiv 1905.03776v1. A family is a base network; its members multiply every hidden
width (units or channels) by a widening factor ``width``. Each member exists in the "standard" and the "NTK"
parameterization (model.py). Model ids read ``<family>-w<width>-<parameterization>``, e.g. ``mlp-w4-ntk``,
``resnet-bn-w2-standard``.

The normalized noise scale (see README.md, "The normalized noise scale", for its source and what was verified):
SGD with learning rate ``eps``, batch size ``B`` and ``N`` training examples has the noise scale
``g = eps * N / B`` (Smith & Le 2018; ``g = eps (N/B - 1)`` to first order in B/N). The normalized noise scale
divides it by the variance of the initial weights that SGD updates:

    g_bar = eps * N / (B * v0),   v0 = sigma_w**2            (NTK: w ~ N(0, sigma_w^2), layer = w x / sqrt(fan_in))
                                  v0 = sigma_w**2 / fan_in   (standard: W ~ N(0, sigma_w^2 / fan_in), layer = W x)

so one SGD step of the NTK network with learning rate ``eps`` is the step of the standard network (W = w /
sqrt(fan_in)) with learning rate ``eps / fan_in``, and both have the same ``g_bar``. ``fan_in`` is that of the
network's hidden layers at the base stage (``Family.fan_in``), which grows in proportion to the widening factor.
"""

from __future__ import annotations

from dataclasses import dataclass

PARAMETERIZATIONS = ("standard", "ntk")
WIDTHS = (1, 2, 4, 8, 16)  # widening factors with registered model ids (a config may use others via --config)


@dataclass(frozen=True)
class Family:
    """A base network. ``kind`` is ``mlp``, ``cnn`` or ``resnet``; ``base_width`` is the width at widening factor 1
    (hidden units for an MLP, channels of the first stage otherwise); ``depth`` is hidden layers (MLP), conv layers
    per stage (CNN, 2 stages) or residual blocks per stage (ResNet, 3 stages)."""

    kind: str
    batch_norm: bool
    base_width: int
    depth: int
    kernel: int = 3

    def hidden_width(self, width: int, base_width: int | None = None) -> int:
        return (base_width or self.base_width) * width

    def fan_in(self, width: int, base_width: int | None = None) -> int:
        """Fan-in of a hidden layer of the first stage: units (MLP) or channels x kernel x kernel (conv)."""
        units = self.hidden_width(width, base_width)
        return units if self.kind == "mlp" else units * self.kernel * self.kernel


# Variants are rows: one builder (model.build) makes every family at every width and parameterization.
FAMILIES: dict[str, Family] = {
    "mlp": Family("mlp", batch_norm=False, base_width=32, depth=2),
    "mlp-bn": Family("mlp", batch_norm=True, base_width=32, depth=2),
    "cnn": Family("cnn", batch_norm=False, base_width=8, depth=2),
    "cnn-bn": Family("cnn", batch_norm=True, base_width=8, depth=2),
    "resnet": Family("resnet", batch_norm=False, base_width=8, depth=1),
    "resnet-bn": Family("resnet", batch_norm=True, base_width=8, depth=1),
}


def model_id(family: str, width: int, parameterization: str) -> str:
    return f"{family}-w{width}-{parameterization}"


def parse_model_id(model: str) -> tuple[str, int, str]:
    """``"resnet-bn-w4-ntk"`` -> ``("resnet-bn", 4, "ntk")``; a ValueError names the expected form."""
    head, _, parameterization = model.rpartition("-")
    family, _, width = head.rpartition("-w")
    if family not in FAMILIES or parameterization not in PARAMETERIZATIONS or not width.isdigit() or int(width) < 1:
        raise ValueError(
            f"{model!r} is not an SGD-width model id: expected <family>-w<width>-<parameterization> with family in "
            f"{sorted(FAMILIES)} and parameterization in {list(PARAMETERIZATIONS)}"
        )
    return family, int(width), parameterization


def init_variance(parameterization: str, sigma_w: float, fan_in: int) -> float:
    """Variance of the initial weights SGD updates: ``sigma_w^2`` (NTK) or ``sigma_w^2 / fan_in`` (standard)."""
    if parameterization == "ntk":
        return sigma_w**2
    if parameterization == "standard":
        return sigma_w**2 / fan_in
    raise ValueError(f"unknown parameterization {parameterization!r}; known: {list(PARAMETERIZATIONS)}")


def noise_scale(lr: float, batch_size: int, train_size: int) -> float:
    """The SGD noise scale ``g = eps N / B``."""
    return lr * train_size / batch_size


def normalized_noise_scale(
    lr: float, batch_size: int, train_size: int, parameterization: str, sigma_w: float, fan_in: int
) -> float:
    """``g_bar = eps N / (B v0)`` with ``v0`` from :func:`init_variance`."""
    return noise_scale(lr, batch_size, train_size) / init_variance(parameterization, sigma_w, fan_in)


def batch_for_noise_scale(
    g_bar: float, lr: float, train_size: int, parameterization: str, sigma_w: float, fan_in: int
) -> float:
    """The batch size at which learning rate ``lr`` gives the normalized noise scale ``g_bar`` (the inverse)."""
    return lr * train_size / (g_bar * init_variance(parameterization, sigma_w, fan_in))
