"""SpecAugment (Park et al., arXiv 1904.08779v3, Section 2 and Table 1), on the fly and deterministic per seed.

A spectrogram is ``(tau, nu)`` or ``(tau, nu, C)``: time first, mel channels second (channels such as deltas
share every mask). Applied in the paper's order:

1. **Time warping**, parameter ``W``. The paper warps with TensorFlow's ``sparse_image_warp``: a random point on the
   horizontal line through the image centre, with time index in ``(W, tau - W)``, moves left or right by a
   distance ``w`` drawn uniformly from ``[0, W]``; six anchor points (the four corners and the midpoints of the
   vertical edges) stay fixed. What we do differs, on purpose and cheaply: the time axis is warped
   **piecewise-linearly** (``[0, t0] -> [0, t0 + w]`` and ``[t0, tau-1] -> [t0 + w, tau-1]``, linear interpolation
   between frames), the same for every mel channel. ``sparse_image_warp`` interpolates the displacement of the
   control points with a polyharmonic spline, so its warp is smooth rather than piecewise linear and varies a
   little along frequency; both move the same point by the same ``w`` and keep the edges fixed. When
   ``tau <= 2 W + 2`` there is no admissible point and the spectrogram is not warped.
2. **Frequency masking**, ``m_F`` times: ``f ~ U{0..F}``, ``f0 ~ U{0..nu - f - 1}`` (``[0, nu - f)``); channels
   ``[f0, f0 + f)`` are set to zero (the mean of a zero-mean spectrogram).
3. **Time masking**, ``m_T`` times: ``t ~ U{0..min(T, floor(p tau))}`` (a mask is at most ``p`` times the number of
   time steps), ``t0 ~ U{0..tau - t - 1}``; steps ``[t0, t0 + t)`` are set to zero. Masks may overlap.

Randomness comes only from a ``torch.Generator``; :func:`generator_for` seeds one per (seed, epoch, utterance), so
the augmentation of an utterance does not depend on batch composition or worker count.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Policy:
    """One row of Table 1: time warp ``W``, frequency masks ``m_F`` of width <= ``F``, time masks ``m_T`` of width
    <= ``T`` and at most ``p`` of the utterance."""

    W: int  # noqa: N815 - the paper's symbols
    F: int  # noqa: N815
    m_F: int  # noqa: N815
    T: int  # noqa: N815
    p: float
    m_T: int  # noqa: N815


# Table 1 of arXiv 1904.08779v3 (see README "Sources": read from restatements of the table, not the PDF).
POLICIES: dict[str, Policy] = {
    "none": Policy(W=0, F=0, m_F=0, T=0, p=1.0, m_T=0),
    "LB": Policy(W=80, F=27, m_F=1, T=100, p=1.0, m_T=1),  # LibriSpeech basic
    "LD": Policy(W=80, F=27, m_F=2, T=100, p=1.0, m_T=2),  # LibriSpeech double
    "SM": Policy(W=40, F=15, m_F=2, T=70, p=0.2, m_T=2),  # Switchboard mild
    "SS": Policy(W=40, F=27, m_F=2, T=70, p=0.2, m_T=2),  # Switchboard strong
}


def generator_for(seed: int, epoch: int, key: int | str) -> torch.Generator:
    """A generator seeded from (seed, epoch, utterance index or id) by sha256, independent of batching."""
    digest = hashlib.sha256(f"specaugment:{seed}:{epoch}:{key}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") & (2**63 - 1))


def _randint(low: int, high: int, generator: torch.Generator) -> int:
    """Uniform integer in ``[low, high]`` (inclusive)."""
    return int(torch.randint(low, high + 1, (1,), generator=generator))


def warp_time_axis(x: Tensor, t0: int, w: float) -> Tensor:
    """Move time index ``t0`` to ``t0 + w`` piecewise-linearly, ends fixed; linear interpolation between frames."""
    last = x.shape[0] - 1
    dest = t0 + w
    j = torch.arange(last + 1, dtype=torch.float64)
    source = torch.where(j <= dest, j * t0 / dest, t0 + (j - dest) * (last - t0) / (last - dest))  # (tau,)
    low = source.floor().long().clamp(0, last)
    high = (low + 1).clamp(max=last)
    frac = (source - low).to(x.dtype).reshape(-1, *([1] * (x.dim() - 1)))
    return x[low] * (1 - frac) + x[high] * frac


def time_warp(x: Tensor, W: int, generator: torch.Generator) -> Tensor:  # noqa: N803
    """Warp a random point ``t0`` in ``(W, tau - W)`` by ``w ~ U[-W, W]`` (left or right by up to ``W``)."""
    tau = x.shape[0]
    if W <= 0 or tau <= 2 * W + 2:
        return x
    t0 = _randint(W + 1, tau - W - 2, generator)
    w = (2 * torch.rand((), generator=generator, dtype=torch.float64).item() - 1) * W
    return warp_time_axis(x, t0, w)


def frequency_mask(x: Tensor, F: int, generator: torch.Generator) -> Tensor:  # noqa: N803
    """Zero ``f ~ U{0..F}`` consecutive mel channels starting at ``f0 ~ U{0..nu - f - 1}``."""
    nu = x.shape[1]
    f = _randint(0, min(F, nu - 1), generator)
    f0 = _randint(0, nu - f - 1, generator)
    x = x.clone()
    x[:, f0 : f0 + f] = 0
    return x


def time_mask(x: Tensor, T: int, p: float, generator: torch.Generator) -> Tensor:  # noqa: N803
    """Zero ``t ~ U{0..min(T, floor(p tau))}`` consecutive steps starting at ``t0 ~ U{0..tau - t - 1}``."""
    tau = x.shape[0]
    t = _randint(0, min(T, int(p * tau), tau - 1), generator)
    t0 = _randint(0, tau - t - 1, generator)
    x = x.clone()
    x[t0 : t0 + t] = 0
    return x


def spec_augment(x: Tensor, policy: Policy, generator: torch.Generator) -> Tensor:
    """Time warp, then ``m_F`` frequency masks, then ``m_T`` time masks, of one utterance ``(tau, nu[, C])``."""
    x = time_warp(x, policy.W, generator)
    for _ in range(policy.m_F):
        x = frequency_mask(x, policy.F, generator)
    for _ in range(policy.m_T):
        x = time_mask(x, policy.T, policy.p, generator)
    return x
