"""SpecAugment's learning-rate schedules B, D, L (arXiv 1904.08779v3, Section 3.2), torch-free.

The rate ramps up linearly to its peak by step ``s_r``, holds until ``s_i``, decays exponentially to 1/100 of the
peak at ``s_f``, and stays there. Variational weight noise (Gaussian, std 0.075: lingvo's ``vn_std``) starts at
``s_noise``. Peak 1e-3 for LibriSpeech (Section 4.1). The step values are read from a restatement of the paper
(README "Sources").

Label smoothing (uncertainty 0.1): the paper turns it on only for part of LibriSpeech training because it
destabilises training at low learning rates; :func:`label_smoothing` switches it off once the decay starts,
our reading of "only during the initial phases" (the exact switch-off point was not read; README). For its
Switchboard state of the art it keeps label smoothing for the whole training ([S1]): ``off_at_decay=False``.
"""

from __future__ import annotations

from dataclasses import dataclass

PEAK_LR = 1e-3
FINAL_FRACTION = 0.01
WEIGHT_NOISE_STD = 0.075
LABEL_SMOOTHING = 0.1


@dataclass(frozen=True)
class Schedule:
    """``(s_r, s_noise, s_i, s_f)`` in steps."""

    s_r: int
    s_noise: int
    s_i: int
    s_f: int


SCHEDULES: dict[str, Schedule] = {
    "B": Schedule(s_r=500, s_noise=10_000, s_i=20_000, s_f=80_000),  # basic
    "D": Schedule(s_r=1_000, s_noise=20_000, s_i=40_000, s_f=160_000),  # double
    "L": Schedule(s_r=1_000, s_noise=20_000, s_i=140_000, s_f=320_000),  # long
}


def learning_rate(step: int, schedule: Schedule, peak: float = PEAK_LR) -> float:
    """Linear ramp to ``peak`` at ``s_r``, hold to ``s_i``, exponential decay to ``peak / 100`` at ``s_f``, hold."""
    if step < schedule.s_r:
        return peak * step / schedule.s_r
    if step <= schedule.s_i:
        return peak
    progress = min(1.0, (step - schedule.s_i) / (schedule.s_f - schedule.s_i))
    return peak * FINAL_FRACTION**progress


def scaled(schedule: Schedule, factor: float) -> Schedule:
    """The same shape over ``factor`` times the steps (budget runs); every boundary at least 1 step apart."""
    s_r = max(1, round(schedule.s_r * factor))
    s_i = max(s_r + 1, round(schedule.s_i * factor))
    return Schedule(s_r, max(1, round(schedule.s_noise * factor)), s_i, max(s_i + 1, round(schedule.s_f * factor)))


def weight_noise_on(step: int, schedule: Schedule) -> bool:
    return step >= schedule.s_noise


def label_smoothing(step: int, schedule: Schedule, value: float = LABEL_SMOOTHING, off_at_decay: bool = True) -> float:
    """``value`` until the decay starts (``s_i``), then 0; ``value`` throughout when not ``off_at_decay``."""
    return value if step < schedule.s_i or not off_at_decay else 0.0
