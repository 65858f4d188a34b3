"""nets.beam_search: beam 1 is greedy, a wide beam is exhaustive search, length normalisation and fusion matter."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
import torch

from nets.beam_search import BeamConfig, Coverage, Hypothesis, beam_search, beam_search_batch, length_penalty

BOS, EOS, VOCAB = 9, 0, 4  # tokens 0..3; bos is only ever a prefix


def config(**search: object) -> BeamConfig:
    return BeamConfig(bos=BOS, eos=EOS, **search)


def _table_log_probs(prefix: tuple[int, ...]) -> torch.Tensor:
    """A fixed random next-token distribution for every prefix (seeded by the prefix itself)."""
    generator = torch.Generator().manual_seed(hash(prefix) % 2**31)
    return torch.log_softmax(2 * torch.randn(VOCAB, generator=generator), dim=0)


def table_step(prefixes: torch.Tensor, state: object) -> tuple[torch.Tensor, object]:
    return torch.stack([_table_log_probs(tuple(p.tolist())) for p in prefixes]), state


def _log_prob(tokens: tuple[int, ...]) -> float:
    prefix, total = (BOS,), 0.0
    for token in tokens:
        total += _table_log_probs(prefix)[token].item()
        prefix += (token,)
    return total


def exhaustive(max_len: int, alpha: float, norm: str) -> list[Hypothesis]:
    """Every hypothesis the search could return: ``k < max_len`` tokens then eos, or ``max_len`` tokens."""
    words = [t for t in range(VOCAB) if t != EOS]
    found = [tuple(w) + (EOS,) for k in range(max_len) for w in itertools.product(words, repeat=k)]
    found += list(itertools.product(words, repeat=max_len))
    scored = [Hypothesis(y, _log_prob(y), _log_prob(y) / length_penalty(len(y), alpha, norm)) for y in found]
    return sorted(scored, key=lambda h: h.score, reverse=True)


def test_beam_of_one_is_greedy() -> None:
    prefix: tuple[int, ...] = (BOS,)
    while len(prefix) <= 6 and prefix[-1] != EOS:
        prefix += (int(_table_log_probs(prefix).argmax()),)
    (best,) = beam_search(table_step, config(beam_size=1, max_len=6))
    assert best.tokens == prefix[1:]
    assert math.isclose(best.log_prob, _log_prob(best.tokens), rel_tol=1e-6)


@pytest.mark.parametrize(("alpha", "norm"), [(0.0, "gnmt"), (0.7, "gnmt"), (1.0, "power")])
def test_a_wide_beam_is_exhaustive_search(alpha: float, norm: str) -> None:
    found = beam_search(table_step, config(beam_size=3**4, max_len=4, alpha=alpha, length_norm=norm))
    expected = exhaustive(4, alpha, norm)[: len(found)]
    assert [h.tokens for h in found] == [h.tokens for h in expected]
    assert [h.score for h in found] == pytest.approx([h.score for h in expected], rel=1e-5)
    narrow = beam_search(table_step, config(beam_size=3, max_len=4, alpha=alpha, length_norm=norm))
    assert narrow[0].tokens == expected[0].tokens  # on this table a beam of 3 already finds the best


def _fixed_step(table: dict[tuple[int, ...], list[float]]):
    def step(prefixes: torch.Tensor, state: object) -> tuple[torch.Tensor, object]:
        rows = [table.get(tuple(p.tolist()), [0.97, 0.01, 0.01, 0.01]) for p in prefixes]
        return torch.tensor(rows).log(), state

    return step


# After bos: eos 0.5, token 1 0.49; after token 1: eos 0.95. "eos" scores log 0.5 = -0.69; "1 eos" -0.76.
SHORT_OR_LONG = {(BOS,): [0.5, 0.49, 0.005, 0.005], (BOS, 1): [0.95, 0.01, 0.03, 0.01]}


def test_length_normalisation_changes_the_winner() -> None:
    step = _fixed_step(SHORT_OR_LONG)
    assert beam_search(step, config(beam_size=2, max_len=3))[0].tokens == (EOS,)
    gnmt = beam_search(step, config(beam_size=2, max_len=3, alpha=1.0))  # lp = 1 and 7/6
    assert gnmt[0].tokens == (1, EOS)
    assert gnmt[0].score == pytest.approx((math.log(0.49) + math.log(0.95)) / (7 / 6))
    power = beam_search(step, config(beam_size=2, max_len=3, alpha=1.0, length_norm="power"))
    assert power[0].tokens == (1, EOS) and power[0].score == pytest.approx((math.log(0.49) + math.log(0.95)) / 2)


def test_shallow_fusion_adds_the_weighted_lm_log_prob() -> None:
    step = _fixed_step(SHORT_OR_LONG)
    lm = _fixed_step({(BOS,): [0.1, 0.88, 0.01, 0.01]})  # the LM prefers a word to stopping at once

    def search(weight: float) -> list[Hypothesis]:
        return beam_search(step, config(beam_size=2, max_len=3, lm_weight=weight), lm_step=lm)

    assert search(0.0)[0].tokens == (EOS,)
    fused = search(0.5)[0]
    assert fused.tokens == (1, EOS)
    expected = math.log(0.49) + math.log(0.95) + 0.5 * (math.log(0.88) + math.log(0.97))
    assert fused.log_prob == pytest.approx(expected, rel=1e-5)


def test_state_follows_the_surviving_beams() -> None:
    """A decoder that keeps its own running state gives what the same model computed from the prefixes gives."""

    def from_sum(total: torch.Tensor) -> torch.Tensor:  # (K,) -> (K, V)
        return _table_log_probs((int(total) % 7,)) if total.dim() == 0 else torch.stack([from_sum(t) for t in total])

    def stateless(prefixes: torch.Tensor, state: object) -> tuple[torch.Tensor, object]:
        return from_sum(prefixes[:, 1:].sum(dim=1)), state

    def stateful(prefixes: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict]:
        total = state["sum"] + (prefixes[:, -1] if prefixes.shape[1] > 1 else 0)
        return from_sum(total), {"sum": total, "pair": (total, total)}

    search = config(beam_size=3, max_len=5)
    expected = beam_search(stateless, search)
    got = beam_search(stateful, search, state={"sum": torch.zeros(1, dtype=torch.long)})
    assert [h.tokens for h in got] == [h.tokens for h in expected] and len(got) == 3


def _per_source_step(prefixes: torch.Tensor, state: dict[str, torch.Tensor]) -> tuple[torch.Tensor, object]:
    """Each source has its own table: the source id (carried in the state) is part of the seed."""
    rows = [
        _table_log_probs((int(s) + 100,) + tuple(p.tolist())) for s, p in zip(state["source"], prefixes, strict=True)
    ]
    return torch.stack(rows), state


def _source_lm(prefixes: torch.Tensor, state: object) -> tuple[torch.Tensor, object]:
    return torch.stack([_table_log_probs((-1,) + tuple(p.tolist()[-2:])) for p in prefixes]), state


@pytest.mark.parametrize(("beam_size", "alpha", "lm_weight"), [(1, 0.0, 0.0), (3, 0.6, 0.0), (4, 1.0, 0.3)])
def test_a_batch_searches_each_source_as_it_would_alone(beam_size: int, alpha: float, lm_weight: float) -> None:
    search = config(beam_size=beam_size, max_len=6, alpha=alpha, lm_weight=lm_weight)
    lm = {"lm_step": _source_lm if lm_weight else None}
    sources = 7
    together = beam_search_batch(
        _per_source_step, search, sources=sources, state={"source": torch.arange(sources)}, **lm
    )
    alone = [beam_search(_per_source_step, search, state={"source": torch.tensor([s])}, **lm) for s in range(sources)]
    assert together == alone
    lengths = {len(found[0].tokens) for found in alone}
    assert len(lengths) > 1  # the sources finish at different lengths, so some leave the batch early


def test_batch_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="sources"):
        beam_search_batch(table_step, config(beam_size=1, max_len=2), sources=0)


@pytest.mark.parametrize("bad", [{"beam_size": 0}, {"max_len": 0}, {"alpha": -0.1}, {"lm_weight": -1.0}])
def test_a_search_config_is_checked_when_made(bad: dict) -> None:
    with pytest.raises(ValueError, match="need beam_size, max_len >= 1 and alpha, lm_weight >= 0"):
        config(**{"beam_size": 2, "max_len": 3, **bad})


# The coverage penalty (lingvo's definition): token probabilities that do not depend on the prefix (eos 0.5, token
# 1 0.3, token 2 0.2) and an attention over 3 source positions that depends on the prefix's last token.
COVERAGE_PROBS = [0.5, 0.3, 0.2, 1e-9]
ATTENTION = {BOS: [0.6, 0.4, 0.0], 1: [0.0, 0.2, 0.8], 2: [0.1, 0.1, 0.1], 3: [0.0, 0.0, 0.0]}


def _attending_step(prefixes: torch.Tensor, state: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities ``(K, V)``; the new state is this step's attention ``(K, 3)``."""
    log_probs = torch.tensor(COVERAGE_PROBS).log().expand(len(prefixes), -1)
    return log_probs, torch.tensor([ATTENTION[int(p[-1])] for p in prefixes])


def _covered(beta: float, lengths: list[int]) -> Coverage:
    return Coverage(beta=beta, attention=lambda state: state, source_lengths=lengths)


def test_the_coverage_penalty_is_lingvos_on_a_hand_computed_case() -> None:
    """By hand (max_len 2, every hypothesis kept): "eos" has log P = log 0.5 and summed attention (0.6, 0.4, 0),
    clipped to [0.001, 0.5]: (0.5, 0.4, 0.001); "1 eos" has log 0.3 + log 0.5 and (0.6, 0.6, 0.8) -> (0.5, 0.5, 0.5).
    With beta 0.5: "eos" scores log 0.5 + 0.5 (log 0.5 + log 0.4 + log 0.001) = -4.95, "1 eos" log 0.15 + 0.5 * 3 log
    0.5 = -2.94, so the penalty turns the winner round; over 2 valid source positions "eos" wins again."""
    search = config(beam_size=16, max_len=2)
    plain = beam_search(_attending_step, search)
    assert plain[0].tokens == (EOS,) and plain[0].score == pytest.approx(math.log(0.5))
    found = beam_search(_attending_step, search, coverage=_covered(0.5, [3]))
    assert found[0].tokens == (1, EOS)
    assert found[0].log_prob == pytest.approx(math.log(0.3 * 0.5))
    assert found[0].score == pytest.approx(math.log(0.15) + 0.5 * 3 * math.log(0.5))
    scores = {h.tokens: h.score for h in found}
    assert scores[(EOS,)] == pytest.approx(math.log(0.5) + 0.5 * math.log(0.5 * 0.4 * 0.001))
    assert scores[(1, 1)] == pytest.approx(math.log(0.09) + 0.5 * 3 * math.log(0.5))  # reached max_len: steps 1, 2
    assert scores[(2, EOS)] == pytest.approx(math.log(0.1) + 0.5 * math.log(0.5 * 0.5 * 0.1))
    two = beam_search(_attending_step, search, coverage=_covered(0.5, [2]))  # position 3 is padding
    assert two[0].tokens == (EOS,) and two[0].score == pytest.approx(math.log(0.5) + 0.5 * math.log(0.5 * 0.4))


def test_a_zero_coverage_weight_changes_nothing() -> None:
    search = config(beam_size=3, max_len=5, alpha=0.6)
    assert beam_search(_attending_step, search, coverage=_covered(0.0, [3])) == beam_search(_attending_step, search)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_with_coverage_a_batch_searches_each_source_as_alone(beam_size: int) -> None:
    """Each source's own valid length, and the early stop's bound with the penalty: a batch of sources of 1, 2 and 3
    valid positions finds what each finds alone, and a wide beam finds what every hypothesis scored finds."""
    search = config(beam_size=beam_size, max_len=4, alpha=0.5)
    together = beam_search_batch(_attending_step, search, sources=3, coverage=_covered(0.3, [1, 2, 3]))
    alone = [beam_search(_attending_step, search, coverage=_covered(0.3, [n])) for n in (1, 2, 3)]
    assert together == alone
    wide = beam_search(_attending_step, replace(search, beam_size=3**4), coverage=_covered(0.3, [3]))
    assert alone[2][0] == wide[0]


def test_coverage_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="one source length per source"):
        beam_search_batch(_attending_step, config(beam_size=1, max_len=2), sources=2, coverage=_covered(1, [3]))
    with pytest.raises(ValueError, match="beta >= 0"):
        beam_search(_attending_step, config(beam_size=1, max_len=2), coverage=_covered(-1.0, [3]))
