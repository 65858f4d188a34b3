"""Benchmark: seeds of a budget pair trained as one vectorised model (nets.stacked) against one after another.

    .venv/bin/python benchmarks/bench_stacked.py [--paper attention-augmented] [--seeds 5] [--steps 20] [--threads 1]

For each model of the paper's budget pair (params.yaml's ``models``), builds its network for each seed (the
paper's system, seeded as `harness run` seeds it), then times ``--steps`` SGD steps (momentum 0.9, weight decay
1e-4, batch 128 of each seed's own order of the budget tier's Fashion-MNIST subset) of every seed one after
another, and of all seeds at once as a ``StackedModel``; prints both times, their ratio (sequential / stacked,
measured in the same run, alternating, best of ``--repeats``), the load average, and how far the stacked seeds' final
weights and losses are from the sequential ones (float reassociation; see nets/stacked.py).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import torch
import yaml
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
BATCH = 128


def budget_pair(paper: str) -> tuple[list[str], dict]:
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["papers"][paper]
    from harness import configfile, registry

    config = configfile.read(registry.reproduction(paper).config_path("budget")).tree
    return params.get("models") or [config["model"]], config


def networks(config: dict, model: str, seeds: list[int]) -> list[nn.Module]:
    """Each seed's network, built by the paper's system under ``torch.manual_seed(seed)``."""
    from harness.registry import load_object

    system = load_object(config["system"]["class_path"])
    built = []
    for seed in seeds:
        torch.manual_seed(seed)
        built.append(system(**{**config["system"]["init_args"], "model": model}).model)
    return built


def batches(seeds: list[int], steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(steps, M, BATCH, 1, 28, 28)`` images and ``(steps, M, BATCH)`` labels: each seed its own order of the
    budget tier's 10,000-image class-balanced Fashion-MNIST subset, standardised."""
    from tasks.fashion_mnist.data import balanced_subset, load_split

    images, labels = load_split("fashion-mnist", "train")
    keep = balanced_subset(labels, 10_000)
    x = torch.from_numpy(images[keep]).float() / 255
    x, y = (x - x.mean()) / x.std(), torch.from_numpy(labels[keep])
    orders = [torch.randperm(len(x), generator=torch.Generator().manual_seed(s))[: steps * BATCH] for s in seeds]
    index = torch.stack(orders).view(len(seeds), steps, BATCH).transpose(0, 1)  # (steps, M, BATCH)
    return x[index], y[index]


def sgd(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)


def sequential(members: list[nn.Module], images: torch.Tensor, labels: torch.Tensor) -> list[float]:
    losses = []
    for index, network in enumerate(members):
        optimizer = sgd(network.parameters())
        for step in range(len(images)):
            loss = nn.functional.cross_entropy(network(images[step, index]), labels[step, index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        losses.append(float(loss))
    return losses


def stacked(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> list[float]:
    optimizer = sgd(model.parameters())
    for step in range(len(images)):
        logits = model(images[step])  # (M, BATCH, 10)
        losses = nn.functional.cross_entropy(logits.flatten(0, 1), labels[step].flatten(), reduction="none")
        optimizer.zero_grad()
        losses.view(model.size, -1).mean(1).sum().backward()
        optimizer.step()
    return losses.view(model.size, -1).mean(1).tolist()


def compare(config: dict, model: str, seeds: list[int], steps: int, repeats: int) -> None:
    from nets.stacked import StackedModel

    images, labels = batches(seeds, steps)
    members = networks(config, model, seeds)
    best = {"sequential": float("inf"), "stacked": float("inf")}
    for _ in range(repeats):
        alone = [copy.deepcopy(m).train() for m in members]
        start = time.perf_counter()
        losses_alone = sequential(alone, images, labels)
        best["sequential"] = min(best["sequential"], time.perf_counter() - start)
        together = StackedModel(members).train()
        start = time.perf_counter()
        losses_together = stacked(together, images, labels)
        best["stacked"] = min(best["stacked"], time.perf_counter() - start)
    drift = max(
        (together.member_state(i)[name] - value).abs().max().item()
        for i, network in enumerate(alone)
        for name, value in network.state_dict().items()
        if value.is_floating_point()
    )
    loss_gap = max(abs(a - b) for a, b in zip(losses_alone, losses_together, strict=True))
    ratio = best["sequential"] / best["stacked"]
    print(f"{model:<36} {len(seeds)} seeds x {steps} steps: sequential {best['sequential']:7.2f} s, stacked "
          f"{best['stacked']:7.2f} s, ratio {ratio:4.2f}x; max |weight diff| {drift:.2e}, max |final loss diff| "
          f"{loss_gap:.2e}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper", default="attention-augmented")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    models, config = budget_pair(args.paper)
    print(f"{args.paper} budget pair {models}; torch threads {args.threads}; load {os.getloadavg()}")
    for model in models:
        compare(config, model, list(range(args.seeds)), args.steps, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
