"""Counting rules: named conventions by which a paper counts an architecture's parameters or multiply-adds.

The arch tier records the default count of every model (``params``/``params_m``: every parameter;
``macs``/``macs_m``: the convolution and matrix-product multiply-adds of :mod:`harness.profile`). A paper that
counts otherwise (say, without BatchNorm's scale and offset) gets a rule here; an arch claim that names it
(``counting: <rule>``) is judged on the arch record's metric ``<metric>@<rule>`` instead (docs/verdicts.md), which the
arch tier records for every model with the rule's counting function in :mod:`harness.profile`.

A rule is added only with the paper's or its official code's statement of the convention, cited in the notes of the
claims that name it: a rule fitted to the numbers it is meant to explain is no evidence. Where our network is the
paper's but its count follows no stated rule, the claim carries a reviewed ``deviation`` (its evidence, e.g. equal to
a reference implementation's count) instead.

No rule is registered. The arch claims that miss the paper's number (issue 29: 41 of the 78 judged) were read
against their papers and official code; none of them states a convention that explains its count. Where two
conventions fit the numbers equally (MobileNetV3's Table 6 parameters: BatchNorm left out, or folded into biases with
one class slot fewer), neither is the paper's stated rule. Each such claim is a reviewed deviation or stays
``not-reproduced`` (its paper's README, "Architecture counts").

Standard library only: loading the claims (``harness claims``, ``harness ingest``) must not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass

ARCH_METRICS = ("params", "params_m", "macs", "macs_m")


@dataclass(frozen=True)
class Rule:
    """A counting convention: the arch metrics it recounts, what it counts, and where the paper states it."""

    id: str
    metrics: tuple[str, ...]
    description: str
    source: str


RULES: dict[str, Rule] = {}


def metric_name(metric: str, rule: str) -> str:
    """The arch record's metric for ``metric`` counted by ``rule``: ``macs_m@<rule>``."""
    return f"{metric}@{rule}"


def rule(rule_id: str, metric: str) -> Rule:
    """The rule ``rule_id`` for an arch claim on ``metric``; a ``ValueError`` names an unknown rule or a metric the
    rule does not count."""
    if rule_id not in RULES:
        known = ", ".join(sorted(RULES)) or "none is registered"
        raise ValueError(f"counting rule {rule_id!r} is not one of harness.counting.RULES ({known})")
    found = RULES[rule_id]
    if metric not in found.metrics:
        raise ValueError(f"counting rule {rule_id!r} counts {', '.join(found.metrics)}, not {metric!r}")
    return found
