"""SpecAugment's input features: the task's 80-bin log-mel front end against librosa, and HTK deltas."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reproductions.specaugment.features import deltas, paper_features
from tasks.librispeech.data import LogMelSpectrogram, mel_filterbank

librosa = pytest.importorskip("librosa")  # a test-only dependency (pyproject's dev extra)


def test_mel_filterbank_equals_librosa_htk() -> None:
    ours = mel_filterbank(80, 512, 16000).T.numpy()  # (80, 257)
    reference = librosa.filters.mel(sr=16000, n_fft=512, n_mels=80, fmin=0.0, fmax=8000.0, htk=True, norm=None)
    np.testing.assert_allclose(ours, reference, atol=1e-5)


def test_log_mel_equals_librosa_on_speech_like_audio() -> None:
    """25 ms Hann window, 10 ms hop, 512-point FFT, power spectrum, centred frames padded with zeros."""
    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    audio = (0.3 * np.sin(2 * np.pi * 220 * t * (1 + t)) + 0.05 * rng.standard_normal(t.size)).astype(np.float32)
    ours = LogMelSpectrogram()(torch.from_numpy(audio)).numpy()  # (T, 80)
    power = librosa.feature.melspectrogram(
        y=audio, sr=16000, n_fft=512, hop_length=160, win_length=400, window="hann", center=True,
        pad_mode="constant", power=2.0, n_mels=80, fmin=0.0, fmax=8000.0, htk=True, norm=None,
    )  # fmt: skip
    assert ours.shape == (101, 80) == power.T.shape
    np.testing.assert_allclose(ours, np.log(power.T + 1e-6), atol=2e-3)


def test_deltas_equal_librosa_and_the_regression_formula() -> None:
    x = torch.randn(30, 80, dtype=torch.float64)
    ours = deltas(x).numpy()
    np.testing.assert_allclose(ours, librosa.feature.delta(x.numpy().T, width=5, order=1, mode="nearest").T, atol=1e-9)
    t = 10  # away from the edges: sum_n n (c[t+n] - c[t-n]) / 10
    by_hand = (x[t + 1] - x[t - 1] + 2 * (x[t + 2] - x[t - 2])) / 10
    np.testing.assert_allclose(ours[t], by_hand.numpy(), atol=1e-12)


def test_deltas_of_a_ramp_are_its_slope_and_of_a_constant_zero() -> None:
    ramp = torch.arange(20, dtype=torch.float64)[:, None].expand(20, 3) * 0.5
    assert torch.allclose(deltas(ramp)[2:-2], torch.full((16, 3), 0.5, dtype=torch.float64))
    assert torch.equal(deltas(torch.ones(7, 4)), torch.zeros(7, 4))


def test_paper_features_stack_three_zero_mean_channels() -> None:
    log_mel = torch.randn(50, 80) + 5.0
    features = paper_features(log_mel)
    assert features.shape == (50, 80, 3)
    assert torch.allclose(features.mean(dim=0), torch.zeros(80, 3), atol=1e-5)
    assert torch.allclose(features[..., 0], log_mel - log_mel.mean(dim=0), atol=1e-5)
