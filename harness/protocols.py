"""Evaluation protocols: the registered vocabulary a tier config's ``protocol``, a claim's ``protocol`` and a run
record's ``protocol`` are spelt in.

A protocol says how a number was measured where papers differ (one centre crop or ten, a forward model or an
ensemble, which text normalisation a WER is taken after). A claim that names one is judged only by records that
carry the same id (harness.verdicts), so an id is compared as written: the registry makes a misspelt one an error
with a "did you mean" instead of a claim that stays ``not-run``.

Protocols are registered by whoever defines them, like the reproductions and tasks they come with: the few that
several papers share are :data:`BUILTIN` here; a task gives the one its scorer follows (``Task.protocol``); a
reproduction lists its own (``Reproduction.protocols``). ``harness.registry.protocols()`` gathers them all (an id
registered twice with different descriptions is an error naming both). Standard library only.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from harness.errors import HarnessError
from harness.suggest import did_you_mean


@dataclass(frozen=True)
class Protocol:
    """A registered evaluation protocol: its id (as configs, claims and records spell it) and what it means."""

    id: str
    description: str

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id or self.id != self.id.strip():
            raise HarnessError(f"protocol {self.id!r}: the id is a non-empty string without surrounding spaces")
        if not isinstance(self.description, str) or not self.description.strip():
            raise HarnessError(f"protocol {self.id!r}: give a description (what the protocol measures, and how)")


FLOPCOUNTER_MACS = Protocol(
    "flopcounter-macs",
    "architecture counts: every parameter, and the multiply-adds of the convolutions and matrix products of one "
    "batch-1 forward pass at the paper's input size (harness.profile); what the arch tier records",
)
BUILTIN = (
    FLOPCOUNTER_MACS,
    Protocol(
        "single-crop",
        "image classification scored on one centre crop per image (the shorter side resized, the centre crop_fraction "
        "of it taken at the model's resolution, 0.875 unless a config says otherwise); no flips, no multi-crop",
    ),
    Protocol(
        "center-crop-1.0",
        "image classification scored on the whole resized image (crop_fraction 1.0): the smoke tiers' upscaled 8x8 "
        "digits, where any crop would cut the digit",
    ),
    Protocol(
        "single-scale",
        "dense prediction (segmentation, detection) scored at one input scale: no multi-scale or flipped inputs at "
        "test time",
    ),
)


def check(protocol: str, known: Collection[str]) -> None:
    """A ``ValueError`` unless ``protocol`` is one of the ``known`` ids, with a "did you mean"."""
    if protocol not in known:
        raise ValueError(
            f"unknown protocol {protocol!r}{did_you_mean(protocol, known)}; registered: {', '.join(sorted(known))} "
            "(a plugin registers its own in Reproduction.protocols)"
        )
