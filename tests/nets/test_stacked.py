"""nets.stacked: seeds of one network trained as one vectorised model agree with the same seeds trained one after
another, within the stated tolerance (float reassociation of vmap's grouped and batched kernels)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from nets.stacked import StackedModel

SEEDS, STEPS, BATCH = (0, 1, 2), 3, 8
TOLERANCE = 1e-4  # absolute, on parameters and running statistics of order 0.1-1 after STEPS steps


def tiny(seed: int) -> nn.Module:
    """A small conv net with batch norm (as every budget network has) and a depthwise conv."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
    )  # fmt: skip


def batches(seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each seed its own data: STEPS batches of (BATCH, 1, 12, 12) images and labels."""
    generator = torch.Generator().manual_seed(100 + seed)
    return [(torch.randn(BATCH, 1, 12, 12, generator=generator), torch.randint(0, 10, (BATCH,), generator=generator))
            for _ in range(STEPS)]  # fmt: skip


def sgd(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)


def train_alone(seed: int) -> nn.Module:
    network = tiny(seed).train()
    optimizer = sgd(network.parameters())
    for images, labels in batches(seed):
        optimizer.zero_grad()
        nn.functional.cross_entropy(network(images), labels).backward()
        optimizer.step()
    return network


def train_stacked() -> StackedModel:
    stacked = StackedModel([tiny(seed) for seed in SEEDS]).train()
    optimizer = sgd(stacked.parameters())
    for step in zip(*(batches(seed) for seed in SEEDS), strict=True):
        images, labels = torch.stack([b[0] for b in step]), torch.stack([b[1] for b in step])  # (M, N, ...), (M, N)
        logits = stacked(images)  # (M, N, 10)
        losses = [nn.functional.cross_entropy(logits[m], labels[m]) for m in range(len(SEEDS))]
        optimizer.zero_grad()
        torch.stack(losses).sum().backward()  # each member's gradient is its own loss's
        optimizer.step()
    return stacked


def test_stacking_keeps_each_members_weights_exactly() -> None:
    members = [tiny(seed) for seed in SEEDS]
    stacked = StackedModel(members)
    for index, network in enumerate(members):
        state = stacked.member_state(index)
        assert all(torch.equal(state[name], value) for name, value in network.state_dict().items())
        images = torch.randn(4, 1, 12, 12)
        assert torch.equal(stacked.member(index, network).eval()(images), network.eval()(images))


def test_stacked_training_matches_sequential_within_tolerance() -> None:
    stacked = train_stacked()
    for index, seed in enumerate(SEEDS):
        alone = train_alone(seed)
        state = stacked.member_state(index)
        moved = (alone.state_dict()["1.running_mean"] - tiny(seed).state_dict()["1.running_mean"]).abs().max()
        assert moved > 1e-3  # batch norm's running statistics were updated, per member
        assert int(state["1.num_batches_tracked"]) == STEPS
        for name, value in alone.state_dict().items():
            assert torch.allclose(state[name].float(), value.float(), rtol=0, atol=TOLERANCE), name
        images = torch.randn(8, 1, 12, 12)
        expected = alone.eval()(images)
        got = stacked.eval()(images.expand(len(SEEDS), *images.shape))[index]
        assert torch.allclose(got, expected, rtol=0, atol=TOLERANCE)


def test_members_differ_and_empty_is_refused() -> None:
    stacked = train_stacked()
    first, second = stacked.member_state(0), stacked.member_state(1)
    assert not torch.allclose(first["0.weight"], second["0.weight"])  # seeds stay separate models
    assert copy.deepcopy(stacked).size == len(SEEDS)
    with pytest.raises(ValueError, match="at least one member"):
        StackedModel([])
