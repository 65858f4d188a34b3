"""Benchmark: tokenising the whole ``debian-lm`` corpus (target: at least 1 M tokens/s on 2 cores).

    .venv/bin/python benchmarks/bench_tokenize.py [--root /] [--workers 2] [--corpus OUT/debian-lm]

Reads every source document from the installed Debian packages first (not timed), then times the corpus's
tokeniser (``tasks.debian_corpora.tokenize.tokenize``, keeping each paragraph's tokens joined by spaces, as the
builder does) over all of it: in one process, and split into ``workers`` equal parts in a process pool (forked,
so the text is not copied; the pool's start is timed). The reference, measured in the same run over the same
paragraphs, is ``str.split`` in one process: the floor any tokeniser is compared with. With ``--corpus`` it also
times reading the built ``wiki.{train,valid,test}.tokens`` into id tensors (``tasks.debian_corpora.data``), the
data module's share. Prints tokens, seconds, tokens per second and ratios.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path

from tasks.debian_corpora.sources import SOURCES, read_source
from tasks.debian_corpora.tokenize import tokenize

PARAGRAPHS: list[str] = []  # set before the pool forks, so workers read it without a copy


def tokenize_part(bounds: tuple[int, int]) -> tuple[int, list[str]]:
    """Tokenise ``PARAGRAPHS[start:end]``: the token count and each paragraph's tokens joined by spaces."""
    start, end = bounds
    joined = [" ".join(tokenize(paragraph)) for paragraph in PARAGRAPHS[start:end]]
    return sum(len(tokens.split(" ")) for tokens in joined if tokens), joined


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def parallel(workers: int) -> int:
    step = -(-len(PARAGRAPHS) // workers)
    parts = [(i, min(i + step, len(PARAGRAPHS))) for i in range(0, len(PARAGRAPHS), step)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return sum(count for count, _ in pool.map(tokenize_part, parts))


def report(name: str, seconds: float, tokens: int, reference: float | None = None) -> None:
    ratio = f"  {seconds / reference:6.2f} x str.split" if reference else ""
    print(f"{name:<34} {tokens:>12,} tokens {seconds:8.2f} s {tokens / seconds / 1e6:8.2f} M tokens/s{ratio}")


def bench_corpus(folder: Path) -> None:
    from tasks.debian_corpora.data import DebianLMDataModule

    module = DebianLMDataModule(folder)
    seconds, _ = timed(module.setup)
    report("data module: .tokens -> ids", seconds, sum(len(ids) for ids in module.ids.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--corpus", type=Path, help="a built debian-lm folder: also time the data module")
    args = parser.parse_args()
    seconds, _ = timed(
        lambda: PARAGRAPHS.extend(p for s in SOURCES for d in read_source(args.root, s) for p in d.paragraphs)
    )
    print(f"read {len(PARAGRAPHS):,} paragraphs, {sum(map(len, PARAGRAPHS)) / 1e6:.1f} M characters in {seconds:.1f} s")
    split_s, split_n = timed(lambda: sum(len(p.split()) for p in PARAGRAPHS))
    report("reference: str.split, 1 process", split_s, split_n)
    one_s, (one_n, _) = timed(lambda: tokenize_part((0, len(PARAGRAPHS))))
    report("tokenize, 1 process", one_s, one_n, split_s)
    many_s, many_n = timed(lambda: parallel(args.workers))
    report(f"tokenize, {args.workers} processes", many_s, many_n, split_s)
    print(f"target 1 M tokens/s on 2 cores: {'met' if many_n / many_s >= 1e6 else 'NOT met'}")
    if args.corpus:
        bench_corpus(args.corpus)


if __name__ == "__main__":
    main()
