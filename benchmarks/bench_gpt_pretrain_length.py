"""Measurement: how many budget pre-training updates GPT's small LM needs to beat the add-one unigram model.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_gpt_pretrain_length.py --root D --updates 3000 \\
        --at 300 600 1000 1500 2000 3000 [--train-lines N]

``D`` holds the Debian text corpora (built there when missing, ``reproductions.gpt.data.prepare_text``). The model,
data, optimiser and schedule are ``configs/budget-pretrain.yaml``'s (3-layer GPT, 4,000-symbol BPE, 32 x 64-symbol
batches, the released Adam at lr 1e-3, 30 warm-up updates then cosine to 0), but the cosine runs over ``--updates``
and the training text is the first ``--train-lines`` lines of ``wiki.train.tokens`` (all by default). At each
update count of ``--at`` the LM is scored as the tier scores it (``GPTPretrainSystem``'s test step through a
Lightning test loop: word-level perplexity of the first 12,800 test lines). The intermediate scores come from a
schedule not yet annealed, so the update count at which the LM first beats the unigram model is an upper bound for
a run whose schedule ends there. The reference, computed in the same run on the same test lines: the add-one
unigram model of the training split's words (docs/corpora.md: 512.5 on the whole test split). Prints one line per
score with the updates, seconds and CPU seconds so far.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from pathlib import Path

import pytorch_lightning as pl
import torch
import torch.nn.functional as F

from nets.schedules import warmup_cosine
from reproductions.gpt.data import GPTLMDataModule, prepare_text
from reproductions.gpt.optim import OpenAIAdam
from reproductions.gpt.system import GPTPretrainSystem
from tasks.debian_corpora.data import lm_file
from tasks.debian_corpora.score import EOS
from tasks.language_modeling.stream import file_lines

TEST_LINES = 12800


def unigram_perplexity(root: Path, test_lines: int | None) -> float:
    """Add-one unigram model of the training split's words (``<eos>`` ending each line) on the first test lines."""
    counts: Counter[str] = Counter()
    for line in file_lines(lm_file(root / "debian-lm", "train")):
        counts.update([*line.split(), EOS])
    total, kinds = sum(counts.values()), len(counts) + 1  # one more kind: words the training split lacks
    words = [w for line in file_lines(lm_file(root / "debian-lm", "test"))[:test_lines] for w in [*line.split(), EOS]]
    nll = -sum(math.log((counts[w] + 1) / (total + kinds)) for w in words)
    return math.exp(nll / len(words))


def score(system: GPTPretrainSystem, data: GPTLMDataModule) -> float:
    """The tier's word-level perplexity of the test lines (the system's own test step)."""
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                         enable_model_summary=False)  # fmt: skip
    (result,) = trainer.test(system, dataloaders=data.test_dataloader(), verbose=False)
    return result["test/perplexity"]


def train(args: argparse.Namespace) -> None:
    pl.seed_everything(0)
    data = GPTLMDataModule(args.root, vocab=4000, n_ctx=64, batch_size=32, train_lines=args.train_lines,
                           test_lines=TEST_LINES)  # fmt: skip
    data.setup()
    system = GPTPretrainSystem("gpt-budget-lm", lr=1e-3, warmup_steps=30)
    opt = OpenAIAdam(system.parameters(), lr=1e-3, l2=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(args.updates, 30 / args.updates))
    unigram = [unigram_perplexity(Path(args.root), lines) for lines in (TEST_LINES, None)]
    print(f"training symbols: {data.train_set.tensors[0].numel():,}; add-one unigram perplexity: {unigram[0]:.1f} on "
          f"the same test lines, {unigram[1]:.1f} on the whole test split", flush=True)  # fmt: skip
    step, start, cpu = 0, time.perf_counter(), time.process_time()
    while step < args.updates:
        for (ids,) in data.train_dataloader():
            system.train()
            loss = F.cross_entropy(system.model(ids[:, :-1]).transpose(1, 2), ids[:, 1:])
            opt.zero_grad()
            loss.backward()
            opt.step()
            schedule.step()
            step += 1
            if step in args.at:
                perplexity = score(system, data)  # the times below count every scoring so far
                seconds = f"{time.perf_counter() - start:.0f} s, {time.process_time() - cpu:.0f} CPU s"
                print(f"updates {step}: word perplexity {perplexity:.1f}, train loss {loss.item():.3f}, {seconds}",
                      flush=True)  # fmt: skip
            if step == args.updates:
                break


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the Debian text corpora's folder (built when missing)")
    parser.add_argument("--updates", type=int, default=3000)
    parser.add_argument("--at", type=int, nargs="+", default=[300, 600, 1000, 1500, 2000, 3000])
    parser.add_argument("--train-lines", type=int, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    prepare_text(Path(args.root))
    train(args)


if __name__ == "__main__":
    main()
