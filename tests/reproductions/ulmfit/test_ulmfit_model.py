"""ULMFiT's networks: the stated configuration's parameter counts, weight tying, concat pooling over real tokens,
BPT3C's chunking, the layer groups the fine-tuning schedules act on."""

from __future__ import annotations

import torch

from reproductions.ulmfit.model import VARIANTS, AWDConfig, LanguageModel, PoolingClassifier, TextClassifier
from reproductions.ulmfit.variants import build

# Counted by hand from Section 4.1 (see claims.yaml): LSTMs 400->1150, 1150->1150, 1150->400 with torch's two bias
# vectors; embedding 60,000 x 400 tied to the softmax (+ its 60,000 biases); the head on 3 x 400 pooled features.
LSTMS = 4 * 1150 * (400 + 1150) + 8 * 1150 + 4 * 1150 * (1150 + 1150) + 8 * 1150 + 4 * 400 * (1150 + 400) + 8 * 400
HEAD = 2 * 1200 + 1200 * 50 + 50 + 2 * 50 + 50 * 2 + 2


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # shared (tied) tensors once


def test_paper_sizes_match_the_stated_configuration() -> None:
    assert LSTMS == 20_211_600
    assert _count(build("ulmfit-awd-lstm-lm")) == LSTMS + 60_000 * 400 + 60_000 == 44_271_600
    assert _count(build("ulmfit-classifier")) == LSTMS + 60_000 * 400 + HEAD == 44_274_252


def test_decoder_is_the_embedding_and_dropouts_are_the_papers() -> None:
    model = LanguageModel(50, VARIANTS["budget"])
    assert model.decoder.weight is model.encoder.embedding.weight
    paper = VARIANTS["paper"]
    assert (paper.output_p, paper.hidden_p, paper.input_p, paper.embed_p, paper.weight_p) == (0.4, 0.3, 0.4, 0.05, 0.5)
    assert [rnn.lstm.hidden_size for rnn in build("ulmfit-awd-lstm-lm").encoder.rnns] == [1150, 1150, 400]


def test_concat_pooling_is_last_max_mean_over_the_pooled_span() -> None:
    outputs = torch.tensor([[[1.0], [5.0], [3.0], [9.0]]])  # (1, 4, 1); position 3 is padding
    pooled = PoolingClassifier.concat_pool(outputs, torch.tensor([0]), torch.tensor([3]))
    assert pooled.tolist() == [[3.0, 5.0, 3.0]]  # h_T at t = 2, max 5, mean 3; the padding's 9 is ignored


def _classifier(bptt: int, max_len: int = 1400) -> TextClassifier:
    torch.manual_seed(0)
    return TextClassifier(40, 3, AWDConfig(emb=8, hidden=12), bptt=bptt, max_len=max_len).eval()


def test_padding_does_not_change_a_documents_prediction() -> None:
    model = _classifier(bptt=4)
    document = torch.randint(3, 40, (1, 9))
    padded = torch.cat([document, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    with torch.no_grad():
        alone = model(document, torch.tensor([9]))
        batch = model(torch.cat([padded, torch.randint(3, 40, (1, 14))]), torch.tensor([9, 14]))
    torch.testing.assert_close(batch[:1], alone)


def test_bpt3c_chunks_carry_the_state_so_the_chunk_size_does_not_change_eval_outputs() -> None:
    ids, lengths = torch.randint(3, 40, (2, 23)), torch.tensor([23, 17])
    with torch.no_grad():
        whole = _classifier(bptt=100)(ids, lengths)
        chunked = _classifier(bptt=5)(ids, lengths)
    torch.testing.assert_close(chunked, whole)


def test_bpt3c_pools_the_last_max_len_tokens_and_trains_only_their_chunks() -> None:
    model = _classifier(bptt=5, max_len=10).train()
    ids = torch.randint(3, 40, (2, 30))
    logits = model(ids, torch.tensor([30, 30]))
    logits.sum().backward()  # gradients reach the embedding only through the pooled chunks' tokens
    rows_with_grad = set(model.encoder.embedding.weight.grad.abs().sum(1).nonzero().flatten().tolist())
    assert rows_with_grad <= set(ids[:, 20:].flatten().tolist())


def test_layer_groups_bottom_to_top() -> None:
    classifier, lm = build("ulmfit-budget-classifier"), build("ulmfit-budget-lm")
    assert [type(g[0]).__name__ for g in classifier.layer_groups()] == [
        "DroppedEmbedding", "WeightDropLSTM", "WeightDropLSTM", "WeightDropLSTM", "PoolingClassifier",
    ]  # fmt: skip
    assert [type(g[0]).__name__ for g in lm.layer_groups()] == [
        "WeightDropLSTM", "WeightDropLSTM", "WeightDropLSTM", "DroppedEmbedding",
    ]  # fmt: skip
