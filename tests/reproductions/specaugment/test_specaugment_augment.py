"""SpecAugment (Table 1 policies, time warp, frequency and time masks): each property the paper states."""

from __future__ import annotations

import pytest
import torch

from reproductions.specaugment.augment import (
    POLICIES,
    Policy,
    frequency_mask,
    generator_for,
    spec_augment,
    time_mask,
    time_warp,
    warp_time_axis,
)


def masked_runs(x: torch.Tensor, dim: int) -> list[int]:
    """Widths of the runs of all-zero slices of a positive ``x`` along ``dim``."""
    zero = (x == 0).all(dim=1 - dim) if x.dim() == 2 else (x == 0).flatten(1).all(1)
    runs, width = [], 0
    for flag in zero.tolist() + [False]:
        if flag:
            width += 1
        elif width:
            runs, width = runs + [width], 0
    return runs


def test_policies_are_table_1() -> None:
    assert POLICIES["LB"] == Policy(W=80, F=27, m_F=1, T=100, p=1.0, m_T=1)
    assert POLICIES["LD"] == Policy(W=80, F=27, m_F=2, T=100, p=1.0, m_T=2)
    assert POLICIES["SM"] == Policy(W=40, F=15, m_F=2, T=70, p=0.2, m_T=2)
    assert POLICIES["SS"] == Policy(W=40, F=27, m_F=2, T=70, p=0.2, m_T=2)
    x = torch.rand(300, 80) + 1
    assert torch.equal(spec_augment(x, POLICIES["none"], generator_for(0, 0, 0)), x)


def test_frequency_masks_are_one_band_of_at_most_f_channels() -> None:
    widths = []
    for seed in range(200):
        x = frequency_mask(torch.rand(50, 80) + 1, 27, generator_for(seed, 0, 0))
        runs = masked_runs(x.T, 0)
        assert len(runs) <= 1 and all(w <= 27 for w in runs)
        assert ((x == 0).any(0) == (x == 0).all(0)).all()  # whole channels, every time step
        widths.append(runs[0] if runs else 0)
    assert min(widths) == 0 and max(widths) >= 25  # f ~ U{0..F}: both ends are drawn


def test_time_masks_respect_t_and_the_upper_bound_p() -> None:
    for seed in range(200):
        x = time_mask(torch.rand(100, 80) + 1, 70, 0.2, generator_for(seed, 0, 0))
        runs = masked_runs(x, 0)
        assert len(runs) <= 1 and all(w <= 20 for w in runs)  # min(T, p * tau) = min(70, 20)
    widths = [
        sum(masked_runs(time_mask(torch.rand(400, 8) + 1, 70, 1.0, generator_for(s, 0, 0)), 0)) for s in range(200)
    ]
    assert max(widths) <= 70 and max(widths) >= 60


def test_masks_cover_every_channel_of_stacked_deltas() -> None:
    x = spec_augment(torch.rand(300, 80, 3) + 1, POLICIES["LD"], generator_for(3, 1, 7))
    zero = x == 0
    assert zero.any() and (zero.any(-1) == zero.all(-1)).all()


def test_warp_moves_the_point_and_keeps_the_ends() -> None:
    tau = 200
    x = torch.arange(tau, dtype=torch.float64)[:, None].expand(tau, 4)  # the value is the time index
    warped = warp_time_axis(x, t0=100, w=-30.0)
    assert warped[0, 0] == 0 and warped[-1, 0] == tau - 1
    assert torch.isclose(warped[70, 0], torch.tensor(100.0, dtype=torch.float64))  # frame t0 now sits at t0 + w
    assert (warped[1:, 0] > warped[:-1, 0]).all()  # monotone: nothing reordered
    assert torch.equal(warped[:, 0], warped[:, 3])  # the same warp for every mel channel


def test_time_warp_is_bounded_by_w_and_skips_short_inputs() -> None:
    x = torch.arange(300, dtype=torch.float64)[:, None].expand(300, 2)
    for seed in range(50):
        warped = time_warp(x, 40, generator_for(seed, 0, 0))
        assert (warped[:, 0] - x[:, 0]).abs().max() <= 40 + 1e-9
    short = torch.rand(80, 5)
    assert torch.equal(time_warp(short, 40, generator_for(0, 0, 0)), short)  # tau <= 2W + 2: no admissible point


def test_deterministic_per_seed_epoch_and_utterance() -> None:
    x = torch.rand(400, 80) + 1
    policy = POLICIES["LD"]
    same = [spec_augment(x, policy, generator_for(5, 2, 11)) for _ in range(2)]
    assert torch.equal(same[0], same[1])
    others = [spec_augment(x, policy, generator_for(*key)) for key in ((6, 2, 11), (5, 3, 11), (5, 2, 12))]
    assert all(not torch.equal(same[0], other) for other in others)


@pytest.mark.parametrize("name", ["LB", "LD", "SM", "SS"])
def test_each_policy_keeps_shape_and_masks_at_most_its_budget(name: str) -> None:
    policy = POLICIES[name]
    x = torch.rand(500, 80) + 1
    out = spec_augment(x, policy, generator_for(0, 0, 1))
    assert out.shape == x.shape
    masked_channels = int((out == 0).all(0).sum())
    masked_steps = int((out == 0).all(1).sum())
    assert masked_channels <= policy.m_F * policy.F
    assert masked_steps <= policy.m_T * min(policy.T, int(policy.p * 500))
