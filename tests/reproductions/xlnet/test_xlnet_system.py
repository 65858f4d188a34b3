"""XLNet's permutation LM, checked on the properties the paper states: the targets (about 1/K, in spans of at most
5), the factorisation order (a target's query stream sees the non-targets and the targets before it, never its own
content or a later target), the memory (no gradient into it; context from the previous segment), and the heads."""

from __future__ import annotations

import torch

from reproductions.xlnet.heads import SequenceHead, SpanHead
from reproductions.xlnet.model import XLNetConfig, XLNetLM
from reproductions.xlnet.system import (
    factorisation_mask,
    left_to_right_inputs,
    permutation_inputs,
    size_of,
    span_targets,
    token_targets,
    word_log_probs,
)

TINY = XLNetConfig(vocab=30, dim=16, layers=2, heads=2, head_dim=8, inner=32, dropout=0.0, attention_dropout=0.0)


def runs(mask: torch.Tensor) -> list[int]:
    """Lengths of the runs of True."""
    lengths, current = [], 0
    for value in [*mask.tolist(), False]:
        if value:
            current += 1
        elif current:
            lengths, current = [*lengths, current], 0
    return lengths


def test_span_targets_are_about_one_in_k_in_spans_of_at_most_five() -> None:
    gen = torch.Generator().manual_seed(0)
    for _ in range(50):
        targets = span_targets(512, 6, 5, gen)
        assert 1 <= int(targets.sum()) <= 512 // 6
        assert int(targets.sum()) >= 512 // 6 - 5  # the goal, unless the last context ran past the end
        assert max(runs(targets)) <= 5 * 2  # two spans may touch: each at most 5
    assert int(token_targets(70, 7, gen).sum()) == 10


def test_factorisation_mask_puts_non_targets_first_and_targets_in_a_random_order() -> None:
    gen = torch.Generator().manual_seed(1)
    targets = torch.tensor([False, True, False, True, True, False])
    perm = factorisation_mask(targets, gen).bool()
    assert not perm[:, ~targets].any()  # every position sees every non-target
    assert perm[~targets][:, targets].all()  # a non-target sees no target
    assert perm[targets][:, targets].diagonal().all()  # a target's query stream does not see itself
    seen = (~perm[targets][:, targets]).sum(1).sort().values
    assert seen.tolist() == [0, 1, 2]  # the targets form a chain: the k-th sees k-1 of them


def query_stream(model: XLNetLM, ids: torch.Tensor, perm: torch.Tensor, mapping: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        logits, _ = model(ids, perm_mask=perm, target_mapping=mapping)
    return logits


def test_a_target_sees_earlier_targets_and_never_its_own_or_later_content() -> None:
    torch.manual_seed(0)
    model = XLNetLM(TINY).eval()
    ids = torch.randint(0, TINY.vocab, (1, 12))
    perm, mapping, labels, weights = permutation_inputs(ids, 3, 2, True, torch.Generator().manual_seed(3))
    where = mapping[0].argmax(-1)  # position of each target
    rank = (~perm[0].bool()[where][:, where]).sum(1)  # targets seen = rank in the order
    before = query_stream(model, ids, perm, mapping)
    for m, position in enumerate(where.tolist()):
        changed = ids.clone()
        changed[0, position] = (changed[0, position] + 1) % TINY.vocab
        after = query_stream(model, changed, perm, mapping)
        same = torch.isclose(before, after, atol=1e-6).all(-1)[0]
        assert same[rank <= rank[m]].all()  # itself and the targets before it: blind to its content
        assert not same[rank > rank[m]].any()  # the targets after it see it
    assert torch.equal(labels[0], ids[0, where]) and weights.sum() == len(where)


def test_left_to_right_order_predicts_each_token_from_the_ones_before() -> None:
    torch.manual_seed(0)
    model = XLNetLM(TINY).eval()
    ids = torch.randint(0, TINY.vocab, (1, 9))
    perm, mapping = left_to_right_inputs(8, ids.device)
    before = query_stream(model, ids, perm[None], mapping[None])
    changed = ids.clone()
    changed[0, 5] = (changed[0, 5] + 1) % TINY.vocab
    after = query_stream(model, changed, perm[None], mapping[None])
    same = torch.isclose(before, after, atol=1e-6).all(-1)[0]
    assert same[:5].all() and not same[5:].any()  # targets 1..5 (rows 0..4) do not see position 5


def test_memory_carries_context_without_gradient() -> None:
    torch.manual_seed(0)
    config = XLNetConfig(**{**TINY.__dict__, "mem_len": 4})
    model = XLNetLM(config)
    first, second = torch.randint(0, 30, (2, 6)), torch.randint(0, 30, (2, 6))
    _, mems = model(first, causal=True)
    assert len(mems) == 2 and mems[0].shape == (2, 4, 16) and not mems[0].requires_grad
    with torch.no_grad():
        other, _ = model(second, mems=model(first.flip(1), causal=True)[1], causal=True)
        got, _ = model(second, mems=mems, causal=True)
    assert not torch.allclose(got, other)  # the previous segment's content reaches the next one


def test_word_log_probs_sum_pieces_across_batches() -> None:
    words, partial = word_log_probs(
        torch.tensor([-1.0, -2.0, -3.0]), torch.tensor([False, True, False]), torch.tensor(0.0)
    )
    assert words.tolist() == [-3.0] and float(partial) == -3.0
    words, partial = word_log_probs(torch.tensor([-1.0]), torch.tensor([True]), partial)
    assert words.tolist() == [-4.0] and float(partial) == 0.0


def test_model_ids_name_their_size() -> None:
    assert size_of("xlnet-budget-no-memory-lm") == "xlnet-budget" and size_of("xlnet-large") == "xlnet-large"


def test_sequence_head_reads_the_cls_token() -> None:
    head = SequenceHead(4, 3, 0.0).eval()
    h = torch.randn(2, 5, 4)
    moved = h.clone()
    moved[:, 0] += 1.0
    cls = torch.tensor([3, 4])
    torch.testing.assert_close(head(h, cls), head(moved, cls))
    torch.testing.assert_close(head(h), head(h, torch.tensor([4, 4])))


def test_span_head_decodes_an_allowed_span_and_trains() -> None:
    torch.manual_seed(0)
    head = SpanHead(8, 0.0).eval()
    h = torch.randn(3, 10, 8)
    p_mask = torch.zeros(3, 10)
    p_mask[:, :4] = 1.0  # the question and specials
    cls = torch.full((3,), 9)
    start, end, score, answer = head.decode(h, p_mask, cls, max_answer=3)
    assert (start >= 4).all() and (end >= start).all() and (end < start + 3).all()
    assert score.shape == answer.shape == (3,)
    loss = head.loss(h, p_mask, cls, torch.tensor([4, 5, 6]), torch.tensor([4, 6, 8]), torch.tensor([0, 1, 0]))
    loss.backward()
    assert torch.isfinite(loss) and head.answer_1.weight.grad is not None


def test_fine_tuning_takes_every_pre_trained_tensor() -> None:
    """The chain's ``prefixes: [model.]`` carries the whole pre-trained network into each fine-tuning system."""
    from reproductions.xlnet.system import XLNetPretrainSystem, XLNetSquadSystem, XLNetTaskSystem

    parent = {k: v.shape for k, v in XLNetPretrainSystem("xlnet-budget-lm").state_dict().items()}
    for child in (XLNetTaskSystem("xlnet-budget", classes=45), XLNetSquadSystem("xlnet-budget")):
        own = {k: v.shape for k, v in child.state_dict().items() if k.startswith("model.")}
        assert own == parent
