"""Several copies of one network trained as one vectorised model: seeds of a budget run side by side in one fit.

``StackedModel(members)`` holds the parameters and buffers of ``M`` networks of the same architecture stacked along
a new first dimension (``torch.func.stack_module_state``) and runs them with ``torch.func.functional_call`` under
``torch.vmap``: a batch ``(M, N, ...)`` (one batch per member, each seed its own data order) gives ``(M, N, ...)``.
The stacked tensors are ordinary parameters, so any element-wise optimizer (SGD with momentum and weight decay,
RMSprop, Adam) over them updates each member exactly as its own optimizer would; an optimizer or clipping that
couples elements across a tensor (a global gradient norm, LARS) would couple the members and is not for this.
The loss of a stacked step is the sum of the members' losses, so each member's gradient is its own loss's.

Batch norm: the running statistics are stacked buffers updated in place inside vmap, one set per member, as each
member's own BatchNorm would update them (checked in tests/nets/test_stacked.py). Random ops inside the network
(dropout) draw different numbers per member (``randomness="different"``), not those a member would draw alone.

Numerics: vmap runs a member's convolutions and matrix products as grouped or batched kernels, which sum in another
order, so a stacked forward differs from the member's own by float reassociation (about 1e-7 relative per layer
in float32). It is therefore a tolerance, not an identity: tests/nets/test_stacked.py checks that a few training
steps of stacked and sequential members agree within 1e-4 (absolute, on parameters of order 0.1), and a run of
thousands of steps drifts apart like two runs on different hardware. Budget results that exist are made
sequentially; this is for new budget tiers that opt in, and ``benchmarks/bench_stacked.py`` gives the speed.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state


def _attribute(name: str) -> str:
    """A parameter's dotted name as one attribute name (``layer1.0.conv.weight`` -> ``layer1__0__conv__weight``)."""
    return name.replace(".", "__")


class StackedModel(nn.Module):
    """``M`` networks of one architecture as one module: ``forward`` maps ``(M, N, ...)`` to ``(M, N, ...)``."""

    def __init__(self, members: Sequence[nn.Module]) -> None:
        super().__init__()
        if not members:
            raise ValueError("StackedModel needs at least one member network")
        params, buffers = stack_module_state(list(members))
        self.param_names, self.buffer_names = list(params), list(buffers)
        for name, value in params.items():
            self.register_parameter(_attribute(name), nn.Parameter(value))
        for name, value in buffers.items():
            self.register_buffer(_attribute(name), value)
        self.template = (copy.deepcopy(members[0]).to("meta"),)  # a tuple: not a submodule, never trained itself
        self.size = len(members)

    def stacked_state(self) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The stacked parameters and buffers by the members' own names, each ``(M, ...)``."""
        params = {name: getattr(self, _attribute(name)) for name in self.param_names}
        return params, {name: getattr(self, _attribute(name)) for name in self.buffer_names}

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        template = self.template[0].train(self.training)

        def member(params: dict, buffers: dict, batch: torch.Tensor) -> torch.Tensor:
            return functional_call(template, (params, buffers), (batch,))

        return torch.vmap(member, randomness="different")(*self.stacked_state(), inputs)  # (M, N, ...) -> (M, N, ...)

    def member_state(self, index: int) -> dict[str, torch.Tensor]:
        """Member ``index``'s state dict (parameters and buffers), to load into a network of the architecture."""
        params, buffers = self.stacked_state()
        return {name: value[index].detach().clone() for name, value in {**params, **buffers}.items()}

    def member(self, index: int, like: nn.Module) -> nn.Module:
        """A copy of ``like`` (a member network) holding member ``index``'s weights, e.g. to evaluate it alone."""
        network = copy.deepcopy(like)
        network.load_state_dict(self.member_state(index))
        return network.train(self.training)
