"""The TF-1 optimisation pieces: RMSProp update, warm-up + staircase schedule, EMA ramp."""

from __future__ import annotations

import math

import pytest
import torch

from nets.optim import RMSpropTF, tf_ema_avg_fn, warmup_staircase_decay


def test_learning_rate_warmup_then_staircase_decay():
    spe, peak = 100.0, 0.256  # warm-up: 500 steps; decay: every 240 steps, counted from step 0
    assert warmup_staircase_decay(0, spe, peak) == 0.0
    assert warmup_staircase_decay(250, spe, peak) == pytest.approx(peak / 2)
    assert warmup_staircase_decay(499, spe, peak) == pytest.approx(peak * 499 / 500)
    assert warmup_staircase_decay(500, spe, peak) == pytest.approx(peak * 0.97**2)  # floor(500 / 240) = 2
    assert warmup_staircase_decay(719, spe, peak) == pytest.approx(peak * 0.97**2)
    assert warmup_staircase_decay(720, spe, peak) == pytest.approx(peak * 0.97**3)
    assert warmup_staircase_decay(350 * 100, spe, peak) == pytest.approx(peak * 0.97 ** math.floor(350 / 2.4))
    assert warmup_staircase_decay(10, spe, peak, warmup_epochs=0) == peak


def test_rmsprop_tf_follows_the_tf_update():
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = RMSpropTF([w], lr=0.1, alpha=0.9, momentum=0.9, eps=1e-3, weight_decay=0.5)
    ms, mom, ref = torch.ones(2), torch.zeros(2), w.detach().clone()
    for grad in (torch.tensor([0.3, -0.1]), torch.tensor([-0.2, 0.4])):
        w.grad = grad.clone()
        opt.step()
        g = grad + 0.5 * ref  # L2 term wd * ||w||^2 / 2
        ms = 0.9 * ms + 0.1 * g * g
        mom = 0.9 * mom + 0.1 * g / torch.sqrt(ms + 1e-3)
        ref = ref - mom
        assert torch.allclose(w.detach(), ref)


def test_tf_ema_ramps_the_decay_with_the_update_count():
    update = tf_ema_avg_fn(0.9999)
    avg, cur = torch.zeros(1), torch.ones(1)
    assert update(avg, cur, 0).item() == pytest.approx(1 - 1 / 10)  # decay (1 + 0) / (10 + 0) = 0.1
    assert update(avg, cur, 10**6).item() == pytest.approx(1e-4)  # capped at 0.9999
    count = torch.tensor(5)
    assert torch.equal(update(count, torch.tensor(7), 3), torch.tensor(7))  # integer buffers are copied


def test_tf_ema_without_num_updates_keeps_the_decay_constant():
    update = tf_ema_avg_fn(0.9999, ramp=False)
    avg, cur = torch.zeros(1), torch.ones(1)
    assert update(avg, cur, 0).item() == pytest.approx(1e-4)  # no ramp: 0.9999 from the first update
    assert update(torch.full((1,), 3.0), torch.ones(1), 5).item() == pytest.approx(3 - 2e-4)
