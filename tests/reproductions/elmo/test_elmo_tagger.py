"""ELMo's NER task model: the CRF against brute force, Viterbi, and the tagger's shapes with and without ELMo."""

from __future__ import annotations

import itertools

import torch

from reproductions.elmo.tagger import CRF, BiLSTMCRFTagger, tiny_bilm, word_ids
from tasks.tokenizers.elmo import batch_char_ids


def random_crf(k: int = 3) -> CRF:
    torch.manual_seed(0)
    crf = CRF(k)
    with torch.no_grad():
        for p in crf.parameters():
            p.normal_()
    return crf


def brute_force(crf: CRF, emissions: torch.Tensor, length: int) -> tuple[torch.Tensor, list[int]]:
    """log Z and the best path of one sentence by enumerating every tag sequence."""
    scores = {}
    for path in itertools.product(range(emissions.shape[-1]), repeat=length):
        tags = torch.tensor([list(path)])
        scores[path] = crf._score(emissions[None, :length], tags, torch.ones(1, length, dtype=torch.bool))[0]
    return torch.logsumexp(torch.stack(list(scores.values())), 0), list(max(scores, key=lambda p: scores[p]))


def test_crf_matches_brute_force_with_padding() -> None:
    crf = random_crf()
    emissions, mask = torch.randn(2, 4, 3), torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    log_z = crf.log_partition(emissions, mask)
    paths = crf.decode(emissions, mask)
    for b, length in enumerate((4, 2)):
        expected_z, expected_path = brute_force(crf, emissions[b], length)
        assert torch.isclose(log_z[b], expected_z, atol=1e-5)
        assert paths[b] == expected_path
    tags = torch.tensor([[0, 1, 2, 0], [2, 2, 0, 0]])
    assert crf.nll(emissions, tags, mask) > 0


def test_tagger_shapes_with_and_without_elmo() -> None:
    sentences = [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"]]
    chars, words = batch_char_ids(sentences), word_ids(sentences)
    assert words.shape == (2, 4) and words[1, 2:].tolist() == [0, 0] and words[0, 0] == word_ids([["eu"]])[0, 0]
    torch.manual_seed(0)
    for bilm in (None, tiny_bilm()):
        model = BiLSTMCRFTagger(9, bilm=bilm).eval()
        scores, log_z = model(chars, words)
        assert scores.shape == (2, 4, 9) and torch.allclose(log_z, model.crf.log_partition(scores, words > 0))
        paths = model.crf.decode(scores, words > 0)
        assert [len(p) for p in paths] == [4, 2]
    assert not any(p.requires_grad for p in model.elmo.bilm.parameters())
