"""SpecAugment's word pieces, variational weight noise, the coverage penalty in LAS decoding, and the fusion LM's own
stage loaded into the ASR system for shallow fusion (the whole path at smoke size)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from harness.checkpoints import load_into
from harness.errors import HarnessError
from nets.beam_search import BeamConfig, length_penalty
from reproductions.specaugment.lm import (
    FusionLMSystem,
    SentenceLMDataModule,
    read_sentences,
    word_numbers,
    word_positions,
)
from reproductions.specaugment.model import LAS, noisy_weights, recognize
from reproductions.specaugment.schedules import SCHEDULES
from reproductions.specaugment.system import SpecAugmentLAS, noise_generator
from reproductions.specaugment.vocab import BOS, EOS, UNK, Characters, train_wordpieces, training_transcripts
from tasks.debian_corpora.score import score_perplexity
from tasks.librispeech.data import SpeechBatch
from tasks.librispeech.metric import LibriSpeechWER

TRANSCRIPTS = [
    "THE CAT SAT ON THE MAT",
    "IT IS A FINE DAY FOR A WALK",
    "HELLO WORLD",
    "THE DOG SAT ON THE LOG",
    "A FINE CAT AND A FINE DOG",
    "WALK THE DOG IN THE PARK",
    "THE PARK IS FINE TODAY",
    "HELLO THE CAT SAID TO THE DOG",
]


def test_word_pieces_are_learnt_from_the_transcripts_and_give_back_the_words() -> None:
    pieces = train_wordpieces(TRANSCRIPTS, 40)
    assert pieces.vocab_size == 40
    tokenizer = pieces.tokenizer
    assert (tokenizer.unk_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (UNK, BOS, EOS)
    for text in [*TRANSCRIPTS, "THE DOG IS FINE"]:
        ids = pieces.encode(text)
        assert min(ids) >= 3 and pieces.decode([*ids, EOS]) == text  # no <s> / </s> inside; words come back
    assert len(pieces.encode("THE CAT SAT ON THE MAT")) < len("THE CAT SAT ON THE MAT")  # pieces, not characters
    assert train_wordpieces(TRANSCRIPTS, 40).digest == pieces.digest != Characters().digest  # deterministic
    with pytest.raises(HarnessError, match="sentencepiece training failed"):
        train_wordpieces(TRANSCRIPTS[:1], 400)


def test_the_system_targets_are_word_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the tokenizer is stored under results/tokenizers/
    system = SpecAugmentLAS(wordpieces=40, policy="none")
    assert system.vocab is None and system.model.speller.output.out_features == 40
    system.learn_vocabulary(TRANSCRIPTS)
    inputs, labels = system.targets(["HELLO WORLD"])
    ids = system.vocab.encode("HELLO WORLD")
    assert inputs.tolist() == [[BOS, *ids]] and labels.tolist() == [[*ids, EOS]]
    cited = Path(system.record_artifacts["tokenizer"])
    assert cited.is_file() and cited.name == f"{system.vocab.digest}.model"
    with pytest.raises(HarnessError, match="shallow fusion needs both"):
        SpecAugmentLAS(lm_weight=0.35)


def _batch() -> SpeechBatch:
    torch.manual_seed(0)
    return SpeechBatch(torch.randn(2, 60, 80), torch.tensor([60, 44]), ["A B", "C"], ["1-1-0001", "1-1-0002"])


def test_weight_noise_is_off_before_s_noise_and_at_eval_and_on_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """Schedule B at 1/1000: noise from step 10 on, N(0, 0.075^2) on every weight but the conv front end's, one draw
    per step seeded by (seed, step); the gradient reaches the clean weights, which the step leaves as they were."""
    system = SpecAugmentLAS(wordpieces=0, policy="none", schedule_scale=0.001, label_smoothing=0.0)
    assert system.schedule.s_noise == round(SCHEDULES["B"].s_noise * 0.001) == 10
    assert system.noisy_weights(9) is None
    noisy = system.noisy_weights(10)
    clean = dict(system.model.named_parameters())
    assert set(noisy) == set(noisy_weights(system.model)) and not any("subsample" in name for name in noisy)
    drawn = torch.cat([(noisy[name] - clean[name]).flatten() for name in noisy]).detach()
    assert drawn.std().item() == pytest.approx(0.075, rel=0.02) and abs(drawn.mean().item()) < 1e-3
    again = system.noisy_weights(10)
    assert all(torch.equal(noisy[name], again[name]) for name in noisy)  # deterministic per (seed, step)
    assert not torch.equal(system.noisy_weights(11)["speller.embed.weight"], noisy["speller.embed.weight"])
    other_seed = SpecAugmentLAS(wordpieces=0, policy="none", schedule_scale=0.001, seed=1)
    other_seed.load_state_dict(system.state_dict())
    assert not torch.equal(other_seed.noisy_weights(10)["speller.embed.weight"], noisy["speller.embed.weight"])
    before = {name: value.detach().clone() for name, value in clean.items()}
    batch = _batch()
    clean_loss = system.loss(batch, augment=False, smoothing=0.0)
    noisy_loss = system.loss(batch, augment=False, smoothing=0.0, weights=noisy)
    assert not torch.isclose(clean_loss, noisy_loss)
    noisy_loss.backward()
    assert clean["speller.embed.weight"].grad is not None and clean["listener.subsample.net.0.weight"].grad is not None
    assert all(torch.equal(before[name], value) for name, value in clean.items())
    seen: list[object] = []
    monkeypatch.setattr(system, "loss", lambda *args, weights=None, **kwargs: seen.append(weights) or clean_loss)
    monkeypatch.setattr(system, "log", lambda *args, **kwargs: None)
    for step in (9, 10):
        monkeypatch.setattr(SpecAugmentLAS, "global_step", property(lambda self, step=step: step))
        system.training_step(batch, 0)
        system.validation_step(batch, 0)
    off, val_off, on, val_on = seen
    assert off is None and val_off is None and val_on is None  # no noise before s_noise, none at evaluation
    assert all(torch.equal(on[name], noisy[name]) for name in noisy)  # the training step's noise is step 10's
    assert noise_generator(0, 10).initial_seed() != noise_generator(0, 11).initial_seed()


def small_las(vocab: int = 12) -> LAS:
    torch.manual_seed(0)
    return LAS(depth=2, width=16, vocab_size=vocab, n_mels=16, decoder_dim=32, embed_dim=8, attention_dim=16).eval()


def test_decoding_with_coverage_penalises_the_attention_the_hypothesis_used() -> None:
    """The best hypothesis's score is log P / lp plus lingvo's penalty of the speller's attention summed over its
    steps (teacher forcing of its tokens), over the encoder's 8 valid frames of the 30 input frames."""
    model, features = small_las(), torch.randn(30, 16, 3)
    with torch.no_grad():
        search = BeamConfig(bos=1, eos=2, beam_size=3, max_len=6, alpha=0.5)
        plain = recognize(model, features, 30, search)
        (best, *_) = recognize(model, features, 30, search, coverage_penalty=0.2)
        memory, keys, mask = model.encode(features[None], torch.tensor([30]))
        state, covered = model.speller.initial_state(memory), torch.zeros(memory.shape[1])
        for token in (1, *best.tokens[:-1]):
            _, state, weights = model.speller.step(torch.tensor([token]), state, keys, memory, mask)
            covered += weights[0]
    assert int(mask.sum()) == 8 and math.isclose(float(covered.sum()), len(best.tokens), rel_tol=1e-5)
    penalty = 0.2 * float(covered.clamp(0.001, 0.5).log().sum())
    expected = best.log_prob / length_penalty(len(best.tokens), 0.5) + penalty
    assert best.score == pytest.approx(expected, rel=1e-5)
    assert penalty <= 0.2 * 8 * math.log(0.5)  # at most every valid frame covered (the cap)
    assert all(h.score == pytest.approx(h.log_prob / length_penalty(len(h.tokens), 0.5)) for h in plain)


def _speech_corpus(root: Path) -> Path:
    """A LibriSpeech-layout ``train`` split of :data:`TRANSCRIPTS` (empty FLAC files: only the text is read)."""
    chapter = root / "train" / "1" / "2"
    chapter.mkdir(parents=True)
    lines = [f"1-2-{i:04d} {text}\n" for i, text in enumerate(TRANSCRIPTS)]
    (chapter / "1-2.trans.txt").write_text("".join(lines), encoding="utf-8")
    for i in range(len(TRANSCRIPTS)):
        (chapter / f"1-2-{i:04d}.flac").write_bytes(b"")
    return root


def test_the_lm_stage_trains_and_fuses_into_the_asr_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole path at smoke size: the LM stage learns the ASR system's word pieces from the speech corpus's
    training transcripts, trains on one-sentence-per-line text and is tested by word perplexity; its ``lm`` tensors
    (with its vocabulary's sha256) load into the ASR system, which checks them and decodes with shallow fusion and
    the coverage penalty; the WER is computed on words."""
    monkeypatch.chdir(tmp_path)
    speech = _speech_corpus(tmp_path / "speech")
    (tmp_path / "lm-train.txt").write_text("\n".join(TRANSCRIPTS * 4) + "\n", encoding="utf-8")
    (tmp_path / "lm-test.txt").write_text("THE CAT SAT\nHELLO WORLD\n", encoding="utf-8")
    data = SentenceLMDataModule(tmp_path, speech_root=speech, speech_splits="train", wordpieces=40, batch_size=8)
    pl.seed_everything(0)
    lm_stage = FusionLMSystem(wordpieces=40, lr=1e-2)
    options = {"accelerator": "cpu", "logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
    trainer = pl.Trainer(max_steps=3, enable_model_summary=False, **options)
    trainer.fit(lm_stage, datamodule=data)
    (result,) = trainer.test(lm_stage, datamodule=data, verbose=False)
    assert result["test/tokens"] == 7 and result["test/perplexity"] == pytest.approx(math.exp(result["test/nll"]))
    (tmp_path / "kept").mkdir()
    scoring = data.scoring(0, tmp_path / "kept")
    written = lm_stage.test_metrics[0].write_predictions(tmp_path / "kept", scoring)
    rows = [line.split("\t")[0] for line in written["predictions"].read_text(encoding="utf-8").splitlines()]
    assert rows == ["THE", "CAT", "SAT", "<eos>", "HELLO", "WORLD", "<eos>"]
    scored = score_perplexity(scoring.references, written["predictions"])  # debian-lm's scorer: the record's numbers
    assert scored == pytest.approx({key.removeprefix("test/"): value for key, value in result.items()}, rel=1e-6)
    with pytest.raises(HarnessError, match="shallow fusion needs both"):
        SpecAugmentLAS(wordpieces=40, lm="lstm-lm-2-256")
    asr = SpecAugmentLAS(
        wordpieces=40, policy="none", beam_size=2, max_decode_len=8, lm="lstm-lm-2-256", lm_weight=0.35,
        coverage_penalty=0.05,
    )  # fmt: skip
    asr.learn_vocabulary(training_transcripts(speech, ["train"]))
    with pytest.raises(HarnessError, match="no trained weights were loaded"):
        asr.check_lm()
    load_into(asr, lm_stage.state_dict(), ["lm"], "the LM stage")
    asr.check_lm()
    assert all(torch.equal(a, b) for a, b in zip(asr.lm.parameters(), lm_stage.lm.parameters(), strict=True))
    optimiser = asr.configure_optimizers()["optimizer"]
    assert sum(p.numel() for g in optimiser.param_groups for p in g["params"]) == sum(
        p.numel() for p in asr.model.parameters()
    )  # the LM stays frozen
    asr.eval()
    asr.test_metrics = torch.nn.ModuleList([LibriSpeechWER()])
    with torch.no_grad():
        asr.test_step(_batch(), 0)
    counts = asr.test_metrics[0].counts()
    assert counts["words"] == 3 and counts["utterances"] == 2  # WER over the references' words
    chars = SpecAugmentLAS(wordpieces=0, policy="none", lm="lstm-lm-2-256", lm_weight=0.35)
    with pytest.raises(HarnessError, match="size mismatch|has shape"):
        load_into(chars, lm_stage.state_dict(), ["lm"], "the LM stage")
    chars.lm_vocabulary.copy_(asr.lm_vocabulary)
    with pytest.raises(HarnessError, match="trained on another vocabulary"):
        chars.check_lm()


def test_each_piece_belongs_to_the_word_it_begins_in_and_each_sentence_ends_in_a_word_of_its_own() -> None:
    """Characters: a space goes with the word after it; word pieces by their offsets (a ``▁`` piece's white space is
    not in its offset). ``</s>`` is a word of its own; words are counted from the batch's first, padding is -1."""
    assert word_numbers("AB CD", range(5)) == [0, 0, 1, 1, 1]
    assert word_numbers("A  B", range(4)) == [0, 1, 1, 1]
    assert word_positions(Characters(), ["AB C", "D"]).tolist() == [[0, 0, 1, 1, 2], [3, 4, -1, -1, -1]]
    pieces = train_wordpieces(TRANSCRIPTS, 40)
    for sentence in TRANSCRIPTS:
        tokens = pieces.tokenizer.encode(sentence, special_tokens=False).tokens
        numbers = word_numbers(sentence, pieces.starts(sentence))
        assert len(numbers) == len(tokens) == len(pieces.encode(sentence))
        spelt = ["".join(t for t, n in zip(tokens, numbers, strict=True) if n == w) for w in sorted(set(numbers))]
        assert [word.lstrip("▁") for word in spelt] == sentence.split()


def test_lm_text_errors_name_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "lm-train.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"lm-train\.txt: no sentences"):
        read_sentences(empty)
    with pytest.raises(HarnessError, match=r"lm-test\.txt: missing"):
        SentenceLMDataModule(tmp_path).verify()
