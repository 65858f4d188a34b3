"""GPT's optimiser: Adam with the "modified version of L2 regularization proposed in [37]" (Loshchilov & Hutter's
decoupled weight decay) "with w = 0.01 on all non bias or gain weights" (Section 4.1).

Written from the definition in the released code (openai/finetune-transformer-lm, ``opt.py``, "adam with weight
decay fix"): the gradients are first clipped to a global norm of ``max_grad_norm`` (1 in ``train.py``); then per
parameter, with ``t`` the update count from 1,

    m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,   lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)
    p = p - lr_t (m / (sqrt(v) + e) + w p)        for a matrix (two or more dimensions)
    p = p - lr_t m / (sqrt(v) + e)                for a bias or a LayerNorm gain

``lr`` already carries the schedule factor (:mod:`nets.schedules` through ``LambdaLR``). Unlike
``torch.optim.AdamW``, the decay is scaled by the bias-corrected ``lr_t``, epsilon is added after the square root
of the uncorrected ``v``, and only parameters of two or more dimensions decay.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class OpenAIAdam(torch.optim.Optimizer):
    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float = 6.25e-5,
        b1: float = 0.9,
        b2: float = 0.999,
        e: float = 1e-8,
        l2: float = 0.01,
        max_grad_norm: float = 1.0,
    ) -> None:
        super().__init__(params, {"lr": lr, "b1": b1, "b2": b2, "e": e, "l2": l2, "max_grad_norm": max_grad_norm})

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001, ANN201 (torch's signature)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        params = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        max_norm = self.param_groups[0]["max_grad_norm"]
        if max_norm > 0 and params:
            torch.nn.utils.clip_grad_norm_(params, max_norm)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, group)
        return loss

    def _update(self, p: torch.Tensor, group: dict) -> None:
        state = self.state[p]
        if not state:
            state["t"], state["m"], state["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
        state["t"] += 1
        t, m, v, g = state["t"], state["m"], state["v"], p.grad
        b1, b2 = group["b1"], group["b2"]
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        lr_t = group["lr"] * (1 - b2**t) ** 0.5 / (1 - b1**t)
        update = m / (v.sqrt() + group["e"])
        if p.dim() > 1 and group["l2"] > 0:
            update = update + group["l2"] * p
        p.sub_(lr_t * update)
