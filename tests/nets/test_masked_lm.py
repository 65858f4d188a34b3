"""BERT's pre-training objectives (:mod:`nets.masked_lm`): the masking's proportions and determinism, the loss only at
the chosen positions, the output projection tied to the word embeddings, the sentence pairs, and the release's
pre-training heads converted (:func:`nets.bert_weights.heads_to_state`) against ``transformers``' BertForPreTraining."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from nets.bert import BertSize
from nets.bert_weights import heads_to_state
from nets.masked_lm import IGNORE, BertPreTraining, mask_tokens, masked_lm_loss, sentence_pair, step_generator

TINY = BertSize(vocab=50, dim=16, layers=2, heads=2, hidden=32, max_len=24, dropout=0.1)
MASK, CLS, SEP, VOCAB = 4, 2, 3, 1000


def batch(rows: int = 64, length: int = 128, real: int = 100, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``[CLS] pieces [SEP]`` then padding; pieces are ids 10..VOCAB-1; candidates: the pieces."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(rows, length, dtype=torch.long)
    ids[:, 1 : real - 1] = torch.randint(10, VOCAB, (rows, real - 2), generator=g)
    ids[:, 0], ids[:, real - 1] = CLS, SEP
    return ids, ids >= 10


def test_fifteen_percent_chosen_then_80_10_10() -> None:
    """64 x 100 real tokens, 200 batches: exactly round(0.15 * 100) = 15 chosen per row, never a special or padding;
    of the 192,000 chosen, [MASK] 0.8, a random token 0.1 (a random id equal to the original counts as unchanged, so
    the random share is 0.1 * (1 - 1/1000)), unchanged the rest, each within 0.005 (over 25 standard errors)."""
    counts = {"mask": 0, "random": 0, "same": 0}
    for step in range(200):
        ids, candidates = batch(seed=step)
        masked = mask_tokens(ids, candidates, step_generator(0, step), MASK, VOCAB)
        chosen = masked.labels != IGNORE
        assert chosen.sum(1).tolist() == [15] * 64 and not (chosen & ~candidates).any()
        assert torch.equal(masked.labels[chosen], ids[chosen]) and torch.equal(masked.inputs[~chosen], ids[~chosen])
        got = masked.inputs[chosen]
        counts["mask"] += int((got == MASK).sum())
        counts["same"] += int((got == ids[chosen]).sum())
        counts["random"] += int(((got != MASK) & (got != ids[chosen])).sum())
    total = sum(counts.values())
    assert total == 200 * 64 * 15
    assert counts["mask"] / total == pytest.approx(0.8, abs=0.005)
    assert counts["random"] / total == pytest.approx(0.1 * (1 - 1 / VOCAB), abs=0.005)
    assert counts["same"] / total == pytest.approx(0.1, abs=0.005)


def test_chosen_positions_are_uniform_and_the_count_follows_the_length() -> None:
    """Every piece position is chosen about equally often; a row of 7 real tokens gets round(1.05) = 1, a row of 30
    gets round(4.5) = 4 (half to even, as Python's round), and max_predictions caps the count."""
    hits = torch.zeros(128)
    for step in range(100):
        ids, candidates = batch(seed=step)
        hits += (mask_tokens(ids, candidates, step_generator(1, step), MASK, VOCAB).labels != IGNORE).sum(0)
    pieces = hits[1:99]
    assert hits[0] == hits[99:].sum() == 0 and (pieces / pieces.mean() - 1).abs().max() < 0.15
    for real, expected in ((7, 1), (30, 4)):
        ids, candidates = batch(rows=4, length=40, real=real)
        labels = mask_tokens(ids, candidates, step_generator(0, 0), MASK, VOCAB).labels
        assert (labels != IGNORE).sum(1).tolist() == [expected] * 4
    ids, candidates = batch(rows=4)
    labels = mask_tokens(ids, candidates, step_generator(0, 0), MASK, VOCAB, max_predictions=6).labels
    assert (labels != IGNORE).sum(1).tolist() == [6] * 4


def test_masks_repeat_per_seed_and_step_and_differ_otherwise() -> None:
    ids, candidates = batch()
    first, again = (mask_tokens(ids, candidates, step_generator(3, 7), MASK, VOCAB) for _ in range(2))
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.labels, again.labels)
    for other in (step_generator(3, 8), step_generator(4, 7)):
        assert not torch.equal(mask_tokens(ids, candidates, other, MASK, VOCAB).labels, first.labels)


def test_loss_only_at_chosen_positions_and_tied_projection() -> None:
    """The head scores the chosen positions only (the loss is their cross-entropy and nothing else); the output
    projection is the word-embedding matrix itself (no second copy), so the loss's gradient reaches the embeddings."""
    torch.manual_seed(0)
    model = BertPreTraining(TINY).eval()
    assert not any("decoder" in k or k.startswith("mlm.") and k.endswith("weight") and "transform" not in k
                   for k in model.state_dict())  # fmt: skip
    ids = torch.randint(5, TINY.vocab, (3, 12))
    labels = torch.full_like(ids, IGNORE)
    labels[0, 2], labels[1, 5], labels[2, 7] = 11, 12, 13
    out = model(ids, labels)
    assert out.mlm_logits.shape == (3, TINY.vocab) and out.mlm_targets.tolist() == [11, 12, 13]
    states, _ = model.encoder(ids)
    chosen = states[labels != IGNORE]
    expected = model.mlm.transform(chosen) @ model.encoder.tokens.weight.T + model.mlm.bias
    torch.testing.assert_close(out.mlm_logits, expected)
    loss = masked_lm_loss(out.mlm_logits, out.mlm_targets)
    torch.testing.assert_close(loss, torch.nn.functional.cross_entropy(expected, torch.tensor([11, 12, 13])))
    loss.backward()
    assert model.encoder.tokens.weight.grad[[11, 12, 13]].abs().sum() > 0
    assert out.nsp_logits.shape == (3, 2) and BertPreTraining(TINY, next_sentence=False).next_sentence is None


def test_sentence_pairs_follow_create_pretraining_data() -> None:
    """Real next: A and B are the text's sentences in order; random next: B from the other text; one sentence always
    gets a random B; a pair over budget is cut to it."""
    sentences = [[1] * 3, [2] * 3, [3] * 3, [4] * 3]
    other = [[9] * 5, [8] * 5]
    labels = []
    for seed in range(200):
        pair = sentence_pair(sentences, lambda: other, 40, random.Random(seed), short_seq_prob=0.0)
        labels.append(pair.is_random_next)
        assert pair.tokens_a[0] == 1 and len(pair.tokens_a) % 3 == 0 and pair.tokens_b
        if pair.is_random_next:
            assert set(pair.tokens_b) <= {8, 9}
        else:
            assert pair.tokens_a + pair.tokens_b == [t for s in sentences for t in s]
    assert 0.4 < np.mean(labels) < 0.6
    assert sentence_pair([[1] * 3], lambda: other, 40, random.Random(0)).is_random_next
    long = sentence_pair([[1] * 30, [2] * 30], lambda: other, 20, random.Random(0), short_seq_prob=0.0)
    assert len(long.tokens_a) + len(long.tokens_b) == 17


def release_heads(model: BertPreTraining) -> dict[str, np.ndarray]:
    s = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    p = "cls/predictions/"
    return {
        p + "transform/dense/kernel": s["mlm.transform.0.weight"].T,
        p + "transform/dense/bias": s["mlm.transform.0.bias"],
        p + "transform/LayerNorm/gamma": s["mlm.transform.2.weight"],
        p + "transform/LayerNorm/beta": s["mlm.transform.2.bias"],
        p + "output_bias": s["mlm.bias"],
        "cls/seq_relationship/output_weights": s["next_sentence.weight"],
        "cls/seq_relationship/output_bias": s["next_sentence.bias"],
    }


def test_release_heads_convert_and_a_wrong_shape_is_named() -> None:
    torch.manual_seed(0)
    source = BertPreTraining(TINY)
    with torch.no_grad():
        for param in source.parameters():
            param.normal_(0.0, 0.3)
    target = BertPreTraining(TINY)
    heads = heads_to_state(release_heads(source), TINY)
    target.load_state_dict({**heads, **{k: v for k, v in source.state_dict().items() if k.startswith("encoder.")}})
    torch.testing.assert_close(target.state_dict(), source.state_dict(), rtol=0, atol=0)
    arrays = release_heads(source)
    arrays["cls/predictions/transform/dense/kernel"] = arrays["cls/predictions/transform/dense/kernel"][:, :3]
    with pytest.raises(HarnessError, match="cls/predictions/transform/dense/kernel"):
        heads_to_state(arrays, TINY, "dump.npz")


transformers = pytest.importorskip("transformers")  # dev extra, pinned in pyproject.toml


def test_same_pretraining_logits_as_transformers() -> None:
    """``transformers``' BertForPreTraining (the reference), random weights, mapped onto ours: the same MLM logits at
    the chosen positions and the same next-sentence logits."""
    from nets.bert_weights import hf_to_state

    config = transformers.BertConfig(
        vocab_size=TINY.vocab, hidden_size=TINY.dim, num_hidden_layers=TINY.layers, num_attention_heads=TINY.heads,
        intermediate_size=TINY.hidden, max_position_embeddings=TINY.max_len, type_vocab_size=2, hidden_act="gelu",
        layer_norm_eps=1e-12,
    )  # fmt: skip
    torch.manual_seed(0)
    hf = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():
        for param in hf.parameters():
            param.normal_(0.0, 0.3)
    ours = BertPreTraining(TINY).eval()
    s = hf.state_dict()
    p = "cls.predictions."
    heads = {
        "mlm.transform.0.weight": s[p + "transform.dense.weight"], "mlm.transform.0.bias": s[p + "transform.dense.bias"],
        "mlm.transform.2.weight": s[p + "transform.LayerNorm.weight"],
        "mlm.transform.2.bias": s[p + "transform.LayerNorm.bias"], "mlm.bias": s[p + "bias"],
        "next_sentence.weight": s["cls.seq_relationship.weight"], "next_sentence.bias": s["cls.seq_relationship.bias"],
    }  # fmt: skip
    encoder = {f"encoder.{k}": v for k, v in hf_to_state(s).items()}
    ours.load_state_dict({**encoder, **heads})
    ids = torch.tensor([[2, 7, 9, 31, 3, 11, 3, 0], [2, 5, 3, 11, 17, 39, 3, 0]])
    types = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1, 0]])
    mask = (ids != 0).long()
    labels = torch.full_like(ids, IGNORE)
    labels[0, 2], labels[1, 4] = 9, 17
    with torch.no_grad():
        expected = hf(input_ids=ids, attention_mask=mask, token_type_ids=types)
        got = ours(ids, labels, mask, types)
    torch.testing.assert_close(got.mlm_logits, expected.prediction_logits[labels != IGNORE], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.nsp_logits, expected.seq_relationship_logits, rtol=1e-5, atol=1e-5)
