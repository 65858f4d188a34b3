"""The input features of SpecAugment's LAS models (Park et al., arXiv 1904.08779v3, Section 4.1 / 4.2).

The paper feeds "80-dimensional filter bank coefficients with delta and delta-delta acceleration". The filter
banks are :class:`tasks.librispeech.data.LogMelSpectrogram` (80 HTK-mel triangles over 0-8 kHz of a 25 ms Hann
window every 10 ms, 512-point FFT, ``log(power + 1e-6)``), tested against librosa in
tests/reproductions/specaugment. Here:

- :func:`deltas`: the HTK regression ``d_t = sum_{n=1..N} n (c_{t+n} - c_{t-n}) / (2 sum_{n=1..N} n^2)`` with
  ``N = 2`` and the first / last frame repeated at the edges (HTK's convention; equal to librosa's
  ``feature.delta(width=5, mode="nearest")``).
- :func:`paper_features`: static, delta and delta-delta stacked as 3 channels, ``(T, 80) -> (T, 80, 3)``, each
  channel shifted to zero mean over the utterance. The paper says its log-mel spectrograms are "normalized to have
  zero mean value", so that masking to zero masks to the mean; it does not say whether the mean is global or per
  utterance. Per utterance and per bin is our choice (no corpus statistics needed on the fly).
"""

from __future__ import annotations

import torch
from torch import Tensor

DELTA_WINDOW = 2  # N of the HTK regression: 5 frames


def deltas(x: Tensor, window: int = DELTA_WINDOW) -> Tensor:
    """HTK delta coefficients along time: ``(T, F) -> (T, F)`` (edges repeat the first / last frame)."""
    frames = x.shape[0]
    padded = torch.cat([x[:1].expand(window, -1), x, x[-1:].expand(window, -1)])  # (T + 2N, F)
    out = torch.zeros_like(x)
    for n in range(1, window + 1):
        out = out + n * (padded[window + n : window + n + frames] - padded[window - n : window - n + frames])
    return out / (2 * sum(n * n for n in range(1, window + 1)))


def paper_features(log_mel: Tensor) -> Tensor:
    """``(T, 80)`` log-mel -> ``(T, 80, 3)``: static, delta, delta-delta, each zero-mean per bin over the utterance."""
    first = deltas(log_mel)
    stacked = torch.stack([log_mel, first, deltas(first)], dim=-1)  # (T, F, 3)
    return stacked - stacked.mean(dim=0, keepdim=True)
