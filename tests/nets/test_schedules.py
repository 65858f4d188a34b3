"""nets.schedules: the released GPT code's warm-up schedules, at the points its definitions fix."""

import math

import pytest

from nets.schedules import warmup_cosine, warmup_linear


def test_warmup_linear_rises_then_decays_to_zero():
    factor = warmup_linear(total=1000, warmup=0.002)  # GPT's fine-tuning: 0.2% of training = 2 updates
    assert [factor(s) for s in (0, 1, 2)] == pytest.approx([0.0, 0.5 * (1 - 0.001), 1 - 0.002])
    assert factor(500) == pytest.approx(0.5)
    assert factor(1000) == 0.0 and factor(2000) == 0.0


def test_warmup_cosine_runs_over_the_whole_of_training():
    factor = warmup_cosine(total=100_000, warmup=0.02)  # GPT's pre-training: 2000 of 100,000 updates
    assert factor(1000) == pytest.approx(0.5)
    assert factor(2000) == pytest.approx(1.0)
    assert factor(2001) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.02001)))  # cos of x, not of x after warm-up
    assert factor(50_000) == pytest.approx(0.5)
    assert factor(100_000) == pytest.approx(0.0, abs=1e-12)


def test_total_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        warmup_linear(0, 0.1)(0)
