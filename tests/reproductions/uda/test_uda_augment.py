"""UDA's augmentations and data steps: RandAugment (UDA's version), TF-IDF word replacement on a hand-computed
corpus, SwitchOut's count law and replacements, back-translation read from a paraphrase file the test writes, and
domain-relevance filtering."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from harness.errors import HarnessError
from reproductions.uda.data import domain_relevance_filter, read_ids, write_ids
from reproductions.uda.data.batches import unlabelled_positions
from tasks.imagenet.randaugment import UDA_OPS, RandAugment, cutout
from tasks.text_augment import Paraphrases, SwitchOut, TfidfWordReplacement, words


def test_uda_randaugment_draws_two_ops_from_fifteen_with_magnitudes_in_one_to_ten() -> None:
    augment = RandAugment(rng=random.Random(0))
    assert len(UDA_OPS) == 15 and "Cutout" in UDA_OPS and "Identity" not in UDA_OPS
    policies = [augment.sample(random.Random(seed)) for seed in range(300)]
    assert all(len(p) == 2 for p in policies)
    ops = {name for p in policies for name, _, _ in p}
    levels = [level for p in policies for _, _, level in p]
    assert ops == set(UDA_OPS) and all(prob == 0.5 for p in policies for _, prob, _ in p)
    assert 1 <= min(levels) and max(levels) < 10


@pytest.mark.parametrize("mode", ["L", "RGB"])
def test_randaugment_keeps_size_and_mode_and_changes_images(mode: str) -> None:
    rng = np.random.default_rng(0)
    shape = (28, 28) if mode == "L" else (32, 32, 3)
    img = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8))
    augment = RandAugment(probability=1.0, rng=random.Random(1))
    outs = [augment(img) for _ in range(20)]
    assert all(o.size == img.size and o.mode == mode for o in outs)
    assert sum(not np.array_equal(np.asarray(o), np.asarray(img)) for o in outs) >= 15
    assert RandAugment(probability=0.0, rng=random.Random(1))(img) is img  # probability 0: untouched


def test_cutout_fills_a_gray_square_of_the_level_s_size() -> None:
    img = Image.new("L", (32, 32), 0)
    out = np.asarray(cutout(img, 10, random.Random(3), (128,)))
    assert set(np.unique(out)) == {0, 128} and (out == 128).sum() <= 16 * 16
    assert np.asarray(cutout(img, 0, random.Random(3), (128,))).max() == 0


def test_randaugment_rejects_unknown_ops_and_bad_magnitudes() -> None:
    with pytest.raises(ValueError, match="unknown ones: \\['Blur'\\]"):
        RandAugment(ops=("Blur",))
    with pytest.raises(ValueError, match="magnitude must lie in 0..10"):
        RandAugment(magnitude=11)


CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat"], ["the", "cat", "ran"], ["a", "bird", "sang"]]


def wider_corpus() -> list[list[str]]:
    return [*CORPUS, ["the", "the", "cat"]]


def test_tfidf_scores_and_replacement_probabilities_by_hand() -> None:
    augment = TfidfWordReplacement(CORPUS, p=0.5)
    assert augment.idf["the"] == pytest.approx(math.log(4 / 3)) and augment.idf["dog"] == pytest.approx(math.log(4))
    # text "the dog": TF-IDF 0.5 log(4/3) and 0.5 log 4; C = the dog's; gaps (C - the's, 0); Z = mean gap
    probabilities = augment.replace_probabilities(["the", "dog"])
    assert probabilities == pytest.approx([min(0.5 * 2, 1.0), 0.0])  # gap / Z = 2 for "the", 0 for the keyword
    assert augment.replace_probabilities(["cat", "cat"]) == [0.5, 0.5]  # equal scores: p each


def test_tfidf_replacement_keeps_keywords_and_samples_uninformative_words() -> None:
    augment = TfidfWordReplacement(CORPUS, p=0.5, rng=random.Random(0))
    outs = [augment(["dog", "the"]) for _ in range(50)]
    assert all(o[0] == "dog" and len(o) == 2 for o in outs)  # the keyword (probability 0) is never replaced
    # S(w) = freq(w) IDF(w): "the" 3 log(4/3), every other word 1.386 (= max S), so "the" is the only word drawn
    assert {augment.sample_word(random.Random(i)) for i in range(200)} == {"the"}
    wider = TfidfWordReplacement(wider_corpus(), p=0.5)
    scores = {w: sum(doc.count(w) for doc in wider_corpus()) * wider.idf[w] for w in wider.vocab}
    drawn = [wider.sample_word(random.Random(i)) for i in range(1000)]
    assert max(scores, key=scores.get) not in drawn and len(set(drawn)) > 2


def test_switchout_count_law_is_exp_minus_n_over_tau() -> None:
    augment = SwitchOut(CORPUS, tau=2.0)
    probabilities = augment.count_probabilities(10)
    assert sum(probabilities) == pytest.approx(1.0) and len(probabilities) == 11
    assert [b / a for a, b in zip(probabilities, probabilities[1:], strict=False)] == pytest.approx(
        [math.exp(-0.5)] * 10
    )
    assert augment.count_probabilities(0) == [1.0] and {
        augment.sample_count(0, random.Random(i)) for i in range(20)
    } == {0}


def chi_square(counts: np.ndarray, probabilities: list[float]) -> tuple[float, int]:
    """Pearson's statistic and degrees of freedom, the tail bins with under 5 expected draws pooled into one."""
    expected = counts.sum() * np.array(probabilities)
    keep = int((expected >= 5).sum())  # the law decreases in n: the well-filled bins come first
    observed = np.append(counts[:keep], counts[keep:].sum())
    expected = np.append(expected[:keep], expected[keep:].sum())
    full = expected > 0
    return float(((observed - expected)[full] ** 2 / expected[full]).sum()), int(full.sum()) - 1


@pytest.mark.parametrize("tau", [0.5, 2.0, 8.0])
def test_switchout_replaces_as_many_words_as_its_count_law_draws(tau: float) -> None:
    """Every replacement differs from the word it replaces, so the Hamming distance of a copy is the drawn count:
    over 20,000 copies of a 12-word text its histogram matches exp(-n / tau) (Pearson's chi-square below its 0.1%
    point), and the inverse temperature's law, exp(-n tau), is rejected."""
    from scipy.stats import chi2

    text = ["the", "cat", "sat", "the", "dog", "ran", "a", "bird", "sang", "the", "cat", "sat"]
    augment, draws = SwitchOut(CORPUS, tau=tau, rng=random.Random(0)), 20_000
    distances = [sum(a != b for a, b in zip(augment(text), text, strict=True)) for _ in range(draws)]
    counts = np.bincount(distances, minlength=len(text) + 1)
    statistic, df = chi_square(counts, augment.count_probabilities(len(text)))
    assert statistic < chi2.ppf(0.999, df)
    statistic, df = chi_square(counts, SwitchOut(CORPUS, tau=1 / tau).count_probabilities(len(text)))
    assert statistic > 100 * chi2.ppf(0.999, df)


def test_switchout_draws_other_vocabulary_words_uniformly_and_keeps_the_rest() -> None:
    augment = SwitchOut(CORPUS, tau=50.0, rng=random.Random(3))  # tau 50: near-uniform counts, many replacements
    vocab = {w for doc in CORPUS for w in doc}
    assert augment.vocab == sorted(vocab)
    text = ["zebra", "the", "cat", "sat", "on", "the", "mat"]  # "zebra", "on", "mat": not in the vocabulary
    for _ in range(200):
        out = augment(text)
        assert len(out) == len(text)
        assert all(
            b in vocab and b != a for a, b in zip(text, out, strict=True) if a != b
        )  # replaced: another vocabulary word
    drawn = [augment.sample_word(random.Random(i), "the") for i in range(7000)]
    frequencies = {w: drawn.count(w) / len(drawn) for w in vocab}
    assert frequencies["the"] == 0 and all(abs(f - 1 / 7) < 0.02 for w, f in frequencies.items() if w != "the")


def test_switchout_is_deterministic_per_seed_and_refuses_bad_settings() -> None:
    text = [f"w{i}" for i in range(30)]
    corpus = [text, ["x", "y", "z"]]
    same = [SwitchOut(corpus, tau=4.0, rng=random.Random(7))(text) for _ in range(2)]
    other = [SwitchOut(corpus, tau=4.0, rng=random.Random(seed))(text) for seed in range(8, 14)]
    assert same[0] == same[1] and any(o != same[0] for o in other)
    with pytest.raises(HarnessError, match="tau must be positive"):
        SwitchOut(corpus, tau=0.0)
    with pytest.raises(HarnessError, match="fewer than 2 distinct words"):
        SwitchOut([["only"], ["only"]])


def test_words_splits_like_a_basic_tokenizer() -> None:
    assert words("Don't stop, Bob!") == ["don't", "stop", ",", "bob", "!"]


def test_paraphrases_are_read_from_the_file_format(tmp_path: Path) -> None:
    path = tmp_path / "paraphrases.tsv"
    path.write_text("# id<TAB>paraphrase\n0\tthe film was great\n0\ta great film\n\n7\tline one\\nline two\n", "utf-8")
    table = Paraphrases(path, rng=random.Random(0))
    assert {table("0", "orig") for _ in range(50)} == {"the film was great", "a great film"}
    assert table("7", "orig") == "line one\nline two"
    assert table("3", "unchanged") == "unchanged"
    with pytest.raises(HarnessError, match="no paraphrase for example id '3'"):
        Paraphrases(path, missing="error")("3", "x")


def test_a_malformed_paraphrase_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.tsv"
    path.write_text("0\tfine\nno tab here\n", "utf-8")
    with pytest.raises(HarnessError, match=r"bad.tsv:2: expected '<example id><TAB><paraphrase>'"):
        Paraphrases(path)


def test_domain_relevance_filter_keeps_each_class_s_most_probable(tmp_path: Path) -> None:
    probabilities = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.5, 0.5], [0.3, 0.7]])
    assert domain_relevance_filter(probabilities, 1) == [0, 2]
    assert domain_relevance_filter(probabilities, 2) == [0, 1, 2, 4]
    path = write_ids(domain_relevance_filter(probabilities, 2), tmp_path / "kept.txt")
    assert read_ids(path) == ["0", "1", "2", "4"]
    assert unlabelled_positions([str(i) for i in range(5)], None, str(path)) == [0, 1, 2, 4]
    with pytest.raises(HarnessError, match="ids not in the training split"):
        unlabelled_positions(["0", "1"], None, str(path))
