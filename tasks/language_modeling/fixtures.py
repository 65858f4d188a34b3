"""Tiny WikiText-103 and One Billion Word copies in their exact distributed layouts, and scoring examples.

- :func:`write_tiny_wikitext`: ``wikitext-103/wiki.{train,valid,test}.tokens`` as the archive has them: per
  article a blank line (`` ``), a heading `` = Title = ``, a blank line, paragraphs `` token token ... `` (each line
  starting and ending with a space), a sub-heading `` = = Section = = ``, ``@-@`` / ``@,@`` / ``@.@`` markers and
  ``<unk>`` tokens.
- :func:`write_tiny_lm1b`: ``1-billion-word-language-modeling-benchmark-r13output/`` with
  ``training-monolingual.tokenized.shuffled/news.en-0000{1,2}-of-00100`` and
  ``heldout-monolingual.tokenized.shuffled/news.en.heldout-0000{0,1}-of-00050``: one tokenised sentence a line,
  and a ``README``.

Sentences come from small word lists (deterministic for a ``seed``). Writing is atomic and idempotent
(``tasks.imagenet.fixtures.atomic_fixture``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tasks.imagenet.fixtures import atomic_fixture
from tasks.language_modeling.score import LM1B_FOLDER, heldout_shard, train_shard

SUBJECTS = ("The ship", "A farmer", "The council", "Her brother", "The old mill", "A new road")
VERBS = ("reached", "left", "built", "sold", "crossed", "named")
OBJECTS = ("the harbour", "a bridge", "the valley", "two houses", "the river", "a small town")


def sentence(rng: np.random.Generator) -> list[str]:
    """A short tokenised sentence ending in a full stop."""
    words = " ".join(options[rng.integers(len(options))] for options in (SUBJECTS, VERBS, OBJECTS)).split()
    return [*words, "."]


def _article(rng: np.random.Generator, number: int) -> str:
    lines = [" \n", f" = Article {number} = \n", " \n"]
    for paragraph in range(2):
        words = sentence(rng) + ["in", "1", "@,@", "200", "well", "@-@", "known", "<unk>"] + sentence(rng)
        lines.append(" " + " ".join(words) + " \n")
        if paragraph == 0:
            lines += [" \n", " = = History = = \n", " \n"]
    return "".join(lines)


def write_tiny_wikitext(root: Path, articles: int = 6, seed: int = 0) -> Path:
    """``root/wikitext-103/wiki.{train,valid,test}.tokens`` with ``articles`` articles in train, 2 in the others."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        folder = tmp / "wikitext-103"
        folder.mkdir()
        for split in ("train", "valid", "test"):
            name = f"wiki.{split}.tokens"
            count = articles if split == "train" else 2
            (folder / name).write_text("".join(_article(rng, n) for n in range(count)), encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-wikitext-103", "articles": articles, "seed": seed}, build)


def write_tiny_lm1b(root: Path, sentences: int = 40, seed: int = 0) -> Path:
    """``root/1-billion-word-language-modeling-benchmark-r13output/`` with two training and two heldout shards."""

    def build(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        folder = tmp / LM1B_FOLDER
        names = [train_shard(1), train_shard(2), heldout_shard(0), heldout_shard(1)]
        for name in names:
            count = sentences if "training" in name else sentences // 4
            lines = [" ".join(sentence(rng)) + "\n" for _ in range(count)]
            if name == heldout_shard(0):
                lines[0] = "The zeppelin reached the harbour .\n"  # "zeppelin" is never in training: <UNK>
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text("".join(lines), encoding="utf-8")
        (folder / "README").write_text("Tiny copy of the One Billion Word benchmark's layout.\n", encoding="utf-8")

    return atomic_fixture(Path(root), {"fixture": "tiny-lm1b", "sentences": sentences, "seed": seed}, build)


# wikitext-103: 2 lines -> "the cat <eos> sat <eos>", log-probabilities summing to -10 nats: nll 2, perplexity e^2.
WIKITEXT_EXAMPLE = (("the", -1.0), ("cat", -3.0), ("<eos>", -0.5), ("sat", -4.0), ("<eos>", -1.5))
# lm1b: 2 sentences -> "a zeppelin </S> b </S>", the model's <UNK> for "zeppelin"; -10 nats: nll 2, perplexity e^2.
LM1B_EXAMPLE = (("a", -1.0), ("<UNK>", -4.0), ("</S>", -0.5), ("b", -4.0), ("</S>", -0.5))


def example(root: Path, task_id: str) -> dict[str, Path]:
    """References and predictions in the task's formats, perplexity e^2 either way."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if task_id == "lm1b":
        references, rows = root / "news.en.heldout-00000-of-00050", LM1B_EXAMPLE
        references.write_text("a zeppelin\nb\n", encoding="utf-8")
    else:
        references, rows = root / "wiki.test.tokens", WIKITEXT_EXAMPLE
        references.write_text(" the cat \n sat \n", encoding="utf-8")
    predictions = root / "predictions.tsv"
    predictions.write_text("".join(f"{t}\t{p}\n" for t, p in rows), encoding="utf-8")
    return {"references": references, "predictions": predictions}
