"""Benchmark: harness.evidence's bootstraps on a 10,000-example test set with 5 seeds per arm.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_evidence.py [--examples 10000] [--seeds 5] [--resamples N]

Synthetic 0/1 scores (accuracy about 80% against 78%, independent per seed) and, for a corpus-level metric,
WER-like ``(errors, words)`` pairs; times :func:`harness.evidence.paired_example_test` and
:func:`harness.evidence.hierarchical_bootstrap` at ``--resamples`` (default: ``DEFAULT_RESAMPLES``, which the
module docstring promises keeps this case under about a second), best of three.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.evidence import DEFAULT_RESAMPLES, ExampleScores, hierarchical_bootstrap, paired_example_test


def arm(rng: np.random.Generator, n: int, seeds: int, rate: float, binary: bool) -> list[ExampleScores]:
    ids = tuple(str(i) for i in range(n))
    words = np.ones(n) if binary else rng.integers(3, 30, n).astype(float)
    runs = []
    for seed in range(seeds):
        errors = (rng.random(n) < rate).astype(float) if binary else rng.binomial(words.astype(int), rate) * 1.0
        runs.append(ExampleScores(f"run-{seed}", seed, "synthetic", "m", ids, errors, words, binary=binary))
    return runs


def best_of_three(fn) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for binary in (True, False):
        ours = arm(rng, args.examples, args.seeds, 0.20, binary)
        theirs = arm(rng, args.examples, args.seeds, 0.22, binary)
        for test in (paired_example_test, hierarchical_bootstrap):
            seconds = best_of_three(lambda t=test, a=ours, b=theirs: t(a, b, False, n_resamples=args.resamples))
            kind = "0/1" if binary else "ratio"
            print(
                f"{test.__name__:24s} {kind:5s} {args.examples} examples x {args.seeds} seeds, "
                f"{args.resamples} resamples: {seconds:.3f} s"
            )


if __name__ == "__main__":
    main()
