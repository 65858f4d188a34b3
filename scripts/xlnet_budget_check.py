"""The criteria that set XLNet's budget recipe (reproductions/xlnet/README.md, "Budget tier"), on data no judged
number uses: a pre-training's own validation measures, and a fine-tuning's fit of its training set.

    python scripts/xlnet_budget_check.py lm CHECKPOINT.safetensors [--objective permutation|left-to-right]
    python scripts/xlnet_budget_check.py fit --lr 1e-3 --epochs 40 [--init CHECKPOINT.safetensors]

``lm``: a pre-training stage's stored weights (``results/checkpoints/<sha256>.safetensors``, the record's
``checkpoint`` artifact) scored on the first ``--lines`` lines of ``debian-lm``'s validation split: the word-level
perplexity under the left-to-right order (the test record's protocol) and the permutation objective itself, the
cross-entropy per piece of Section 3.1's partial-prediction targets given the rest (a fixed draw of orders), beside
the add-one unigram of the training pieces on the same targets. ``fit``: the fine-tuning of configs/budget.yaml
(450 training glosses) from random weights or from ``--init``, its training loss and training-set accuracy every
``epochs / 5`` epochs. One torch thread; data from ``data/budget/debian``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch
import torch.nn.functional as F

from reproductions.xlnet.data import XLNetLMDataModule, XLNetTextDataModule, spm_tokenizer
from reproductions.xlnet.system import (
    XLNetPretrainSystem,
    XLNetTaskSystem,
    adam_linear,
    permutation_inputs,
    word_log_probs,
)
from tasks.debian_corpora.data import lm_file
from tasks.language_modeling.stream import TokenRows, encode_lines, file_lines

ROOT = Path("data/budget/debian")


def load_lm(system: torch.nn.Module, path: str | None) -> None:
    """The ``model.`` tensors of a stored pre-training system into ``system.model``."""
    if path is None:
        return
    from safetensors.torch import load_file

    state = {k.removeprefix("model."): v for k, v in load_file(path).items() if k.startswith("model.")}
    system.model.load_state_dict(state)


@torch.no_grad()
def lm(args: argparse.Namespace) -> None:
    data = XLNetLMDataModule(ROOT, vocab=4000, seq_len=64, batch_size=16, train_lines=100000, test_lines=1)
    data.setup()
    tokenizer = spm_tokenizer(ROOT, 4000)
    counts = torch.bincount(data.train_set.tensors[0].flatten(), minlength=4000).double() + 1
    unigram = (counts / counts.sum()).log()
    system = XLNetPretrainSystem(objective=args.objective)
    load_lm(system, args.checkpoint)
    system.eval()
    ids, ends = encode_lines(tokenizer, file_lines(lm_file(ROOT / "debian-lm", "valid"))[: args.lines])
    rows = TokenRows(ids, ends, 64, tokenizer.eos_token_id)
    partial, words = torch.zeros((), dtype=torch.float64), []
    for start in range(0, len(rows), 64):
        batch = [rows[i] for i in range(start, min(start + 64, len(rows)))]
        inputs, row_ends, mask = (torch.stack(x) for x in zip(*batch, strict=True))
        found, partial = word_log_probs(system.piece_log_probs(inputs)[mask], row_ends[mask], partial)
        words.append(found)
    print(f"validation word perplexity (left-to-right order): {math.exp(-torch.cat(words).mean().item()):.1f}")
    generator, model_ce, unigram_ce, n = torch.Generator().manual_seed(123), 0.0, 0.0, 0.0
    segments = torch.tensor(ids[: len(ids) // 64 * 64]).view(-1, 64)
    for start in range(0, len(segments), 64):
        x = segments[start : start + 64]
        perm, mapping, labels, weights = permutation_inputs(x, 6, 5, True, generator)
        logits, _ = system.model(x, perm_mask=perm, target_mapping=mapping)
        model_ce += (F.cross_entropy(logits.transpose(1, 2), labels, reduction="none") * weights).sum().item()
        unigram_ce += (-unigram[labels] * weights).sum().item()
        n += weights.sum().item()
    print(f"partial-prediction targets: {int(n)}; cross-entropy per piece {model_ce / n:.3f} (perplexity "
          f"{math.exp(model_ce / n):.1f}), unigram {unigram_ce / n:.3f} ({math.exp(unigram_ce / n):.1f})")  # fmt: skip


def fit(args: argparse.Namespace) -> None:
    data = XLNetTextDataModule(ROOT, corpus="wordnet-lexname", vocab=4000, max_length=64, batch_size=32,
                               per_class=10, subset_seed=0)  # fmt: skip
    data.setup("fit")
    torch.manual_seed(args.seed)
    system = XLNetTaskSystem(task="wordnet-lexname", classes=45, lr=args.lr)
    load_lm(system, args.init)
    system.log = lambda *a, **k: None
    loader = data.train_dataloader()

    class Trainer:
        estimated_stepping_batches = args.epochs * len(loader)

    optimizers = adam_linear(system, args.lr, 0.1, 0.01, Trainer)
    optimizer, scheduler = optimizers["optimizer"], optimizers["lr_scheduler"]["scheduler"]
    for epoch in range(1, args.epochs + 1):
        losses = []
        for index, batch in enumerate(loader):
            loss = system.training_step(batch, index)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        if epoch % max(1, args.epochs // 5) == 0:
            system.eval()
            with torch.no_grad():
                right = sum((system(*inputs).argmax(-1) == y).sum().item() for inputs, y in data.train_dataloader())
            system.train()
            print(f"epoch {epoch}: training loss {sum(losses) / len(losses):.3f}, training accuracy "
                  f"{100 * right / len(data.train_examples):.1f}%")  # fmt: skip


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("lm")
    one.add_argument("checkpoint")
    one.add_argument("--objective", default="permutation", choices=["permutation", "left-to-right"])
    one.add_argument("--lines", type=int, default=1600)
    two = commands.add_parser("fit")
    two.add_argument("--lr", type=float, required=True)
    two.add_argument("--epochs", type=int, required=True)
    two.add_argument("--init")
    two.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    (lm if args.command == "lm" else fit)(args)


if __name__ == "__main__":
    main()
