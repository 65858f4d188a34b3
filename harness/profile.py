"""Architecture profiling: parameter count and multiply-adds of one forward pass at batch 1.

Multiply-adds are counted with ``torch.utils.flop_counter.FlopCounterMode``, which counts 2 FLOPs per
multiply-add of matrix multiplications and convolutions (and nothing for element-wise work, pooling or
normalisation); we halve its total, which is how the papers count "FLOPs"/"MAdds" (conv and linear layers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.registry import ModelSpec


@dataclass(frozen=True)
class Profile:
    model: str
    params: int
    macs: int
    input_shape: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "params": self.params, "macs": self.macs, "input_shape": list(self.input_shape)}


def count_macs(module: Any, example: Any) -> int:
    """Multiply-adds of ``module(example)``: FlopCounterMode's FLOPs halved."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(example)
    return counter.get_total_flops() // 2


def profile_model(spec: ModelSpec) -> Profile:
    """Build the model, count its parameters and its multiply-adds at ``spec.input_shape`` in eval mode."""
    import torch

    torch.manual_seed(0)
    module = spec.instantiate().eval()
    params = sum(p.numel() for p in module.parameters())
    dtype = getattr(torch, spec.input_dtype)
    example = (
        torch.zeros(spec.input_shape, dtype=dtype) if not dtype.is_floating_point else torch.randn(spec.input_shape)
    )
    return Profile(model=spec.id, params=params, macs=count_macs(module, example), input_shape=tuple(spec.input_shape))
