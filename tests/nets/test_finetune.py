"""ULMFiT's fine-tuning schedules (nets/finetune.py): STLR's shape, discriminative rates, gradual unfreezing."""

from __future__ import annotations

import pytest
from torch import nn

from nets.finetune import (
    chain_thaw,
    cosine_annealing,
    discriminative_lrs,
    set_trainable,
    slanted_triangular,
    trainable_groups,
    unfreezing_stages,
)


def test_stlr_rises_for_cut_frac_then_decays_to_one_over_ratio() -> None:
    total = 1000  # cut = 100
    assert slanted_triangular(0, total) == pytest.approx(1 / 32)  # starts at η_max / ratio
    assert slanted_triangular(50, total) == pytest.approx((1 + 0.5 * 31) / 32)  # halfway up: p = 0.5
    assert slanted_triangular(100, total) == pytest.approx(1.0)  # the peak, at cut
    assert slanted_triangular(550, total) == pytest.approx((1 + 0.5 * 31) / 32)  # p = 1 - 450 / (100 * 9)
    assert slanted_triangular(1000, total) == pytest.approx(1 / 32)  # back to η_max / ratio at T
    rates = [slanted_triangular(t, total) for t in range(total + 1)]
    assert rates.index(max(rates)) == 100 and all(a < b for a, b in zip(rates[:100], rates[1:101], strict=True))


def test_stlr_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="cut_frac"):
        slanted_triangular(0, 10, cut_frac=1.5)


def test_discriminative_rates_divide_by_2_6_per_layer_down() -> None:
    assert discriminative_lrs(3, 0.01) == pytest.approx([0.01 / 2.6**2, 0.01 / 2.6, 0.01])
    assert discriminative_lrs(4, 0.004, factor=1.0) == [0.004] * 4


def test_gradual_unfreezing_adds_one_group_per_epoch() -> None:
    assert [trainable_groups(epoch, 5) for epoch in range(7)] == [1, 2, 3, 4, 5, 5, 5]
    assert unfreezing_stages(10, 5) == [(0, 1), (1, 1), (2, 1), (3, 1), (4, 6)]
    assert unfreezing_stages(2, 5) == [(0, 1), (1, 1)]
    groups = [[nn.Linear(2, 2)] for _ in range(4)]
    set_trainable(groups, 2)
    assert [all(p.requires_grad for p in g[0].parameters()) for g in groups] == [False, False, True, True]


def test_cosine_annealing_ends_at_zero() -> None:
    assert cosine_annealing(0, 10) == pytest.approx(1.0) and cosine_annealing(10, 10) == pytest.approx(0.0)


def test_chain_thaw_trains_the_new_layer_then_each_layer_alone_then_all() -> None:
    assert [chain_thaw(epoch, 3) for epoch in range(5)] == [
        [False, False, True], [True, False, False], [False, True, False], [True, True, True], [True, True, True],
    ]  # fmt: skip
