"""BPE merges learnt deterministically, as ``tokenizers``' ``BpeTrainer`` learns them but with its hash-map orders
replaced by sorted ones.

``tokenizers`` (0.23) numbers a word's end-of-word and continuing-subword symbols (``6</w>``, ``##6``) in the order
it meets them while walking a hash map of the words, and breaks ties between pairs of equal count by those numbers.
Hash maps are seeded afresh in every process, so on a small corpus, where many of the last merges tie at the minimum
frequency, two processes learn different merges from the same text (the smoke tier's GPT tokenizer differed at its
98th merge from one process to the next). Here the words are walked in sorted order, so the symbols' numbers, and with
them every tie-break, are the same in every process. The rest follows the library's algorithm step by step (special
tokens first; the alphabet by code point; a max-heap of pairs by count, ties to the smaller pair of ids; a popped
pair whose count has changed is pushed back with its current count; merging applied only to the words recorded with
that heap entry; the pairs a merge creates pushed as new entries), so where the library's result does not depend on
its hash order, the merges are the library's own: the GPT budget tokenizer's file is byte-identical to the one the
library trained (tests/tasks/tokenizers).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Mapping, Sequence

Pair = tuple[int, int]


def count_words(texts: Iterable[str], normalize, pre_tokenize) -> dict[str, int]:
    """How often each word occurs: each text normalised (``normalize``: str -> str, or None) and split into words
    (``pre_tokenize``: str -> [(word, offsets)]), as the library's ``train_from_iterator`` feeds its trainer."""
    counts: dict[str, int] = {}
    for text in texts:
        for word, _ in pre_tokenize(normalize(text) if normalize else text):
            counts[word] = counts.get(word, 0) + 1
    return counts


def _merge(word: list[int], a: int, b: int, new: int) -> list[tuple[Pair, int]]:
    """Merge every ``(a, b)`` of ``word`` left to right, in place; the pair-count changes, as the library's
    ``Word::merge`` reports them (the merged pair itself is not among them)."""
    changes: list[tuple[Pair, int]] = []
    i = 0
    while i < len(word):
        if word[i] == a and i + 1 < len(word) and word[i + 1] == b:
            if i > 0:
                changes += [((word[i - 1], a), -1), ((word[i - 1], new), 1)]
            word[i : i + 2] = [new]
            if i < len(word) - 1:
                changes += [((b, word[i + 1]), -1), ((new, word[i + 1]), 1)]
        i += 1
    return changes


def learn_bpe(
    word_counts: Mapping[str, int],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    initial_alphabet: Iterable[str] = (),
    min_frequency: int = 0,
    prefix: str | None = None,
    suffix: str | None = None,
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The vocabulary (token -> id) and the merges, in rank order, that ``BpeTrainer(vocab_size, min_frequency,
    special_tokens, initial_alphabet, continuing_subword_prefix=prefix, end_of_word_suffix=suffix)`` learns from
    ``word_counts``, with the ties broken the same way in every process (module docstring)."""
    vocab: dict[str, int] = {}
    names: list[str] = []

    def add(token: str) -> int:
        if token not in vocab:
            vocab[token] = len(names)
            names.append(token)
        return vocab[token]

    for token in special_tokens:
        add(token)
    for char in sorted({c for word in word_counts for c in word} | set(initial_alphabet)):
        add(char)
    words = sorted(word_counts)
    counts = [word_counts[w] for w in words]
    symbols: list[list[int]] = []
    for word in words:
        ids = []
        for i, char in enumerate(word):
            piece = (prefix + char if prefix and i > 0 else char) + (suffix if suffix and i == len(word) - 1 else "")
            ids.append(add(piece))
        symbols.append(ids)

    pair_counts: dict[Pair, int] = {}
    where: dict[Pair, set[int]] = {}
    for index, ids in enumerate(symbols):
        for pair in zip(ids, ids[1:], strict=False):
            pair_counts[pair] = pair_counts.get(pair, 0) + counts[index]
            where.setdefault(pair, set()).add(index)
    order = itertools.count()  # entries of equal count and pair leave the heap in the order they entered
    heap: list[tuple[int, Pair, int, set[int]]] = []

    def push_all(pending: dict[Pair, set[int]]) -> None:
        for pair in sorted(pending):
            if pair_counts[pair] > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair, next(order), pending[pair]))

    push_all(where)
    ranks: dict[Pair, tuple[int, int]] = {}
    merged = 0
    while len(vocab) < vocab_size and heap:
        negative, pair, _, positions = heapq.heappop(heap)
        if -negative != pair_counts[pair]:
            heapq.heappush(heap, (-pair_counts[pair], pair, next(order), positions))
            continue
        if -negative < 1 or min_frequency > -negative:
            break
        right = names[pair[1]]
        if prefix and right.startswith(prefix):
            right = right[len(prefix) :]
        new = add(names[pair[0]] + right)
        ranks[pair] = (merged, new)  # a pair merged twice keeps its later rank, as the library's merge map does
        merged += 1
        pending: dict[Pair, set[int]] = {}
        for index in sorted(positions):
            for changed, change in _merge(symbols[index], pair[0], pair[1], new):
                pair_counts[changed] = pair_counts.get(changed, 0) + change * counts[index]
                if change > 0:
                    pending.setdefault(changed, set()).add(index)
        push_all(pending)
    merges = [(names[a], names[b]) for (a, b), _ in sorted(ranks.items(), key=lambda item: item[1][0])]
    return vocab, merges
