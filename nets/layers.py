"""Layer utilities shared by the reproductions' systems."""

from __future__ import annotations

from torch import nn


def set_bn(module: nn.Module, momentum: float, eps: float | None = None) -> None:
    """Set every ``BatchNorm2d`` of ``module`` to PyTorch ``momentum`` (``1 - `` TF's decay) and, if given, ``eps``."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = momentum
            if eps is not None:
                m.eps = eps
