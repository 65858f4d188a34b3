"""SpecAugment's system: targets, the audio/transcript rate check, truncated FLAC, and one training step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from reproductions.specaugment.system import BOS, EOS, IGNORE, SpecAugmentLAS, check_rate, decode, encode
from tasks.librispeech.data import SpeechBatch, load_audio


def test_characters_round_trip_and_targets_are_shifted() -> None:
    assert decode(encode("IT'S A CAT")) == "IT'S A CAT"
    system = SpecAugmentLAS(policy="none", beam_size=1, wordpieces=0)
    inputs, labels = system.targets(["AB", "C"])
    assert inputs.tolist() == [[BOS, *encode("AB")], [BOS, *encode("C"), EOS]]
    assert labels.tolist() == [[*encode("AB"), EOS], [*encode("C"), EOS, IGNORE]]


def test_a_transcript_too_long_for_its_audio_is_named() -> None:
    check_rate("1-2-3", "ONE TWO THREE", frames=100)  # 3 words in 1 s
    with pytest.raises(HarnessError, match=r"utterance 1-2-3: 30 words in 1\.00 s of audio: the transcript does not"):
        check_rate("1-2-3", " ".join(["WORD"] * 30), frames=100)


def test_switchboard_segments_skip_the_rate_check() -> None:
    """Switchboard's segments are cut at their transcription's own times, where short fast ones are real."""
    from tasks.switchboard.train import SwitchboardDataModule

    assert SwitchboardDataModule.max_words_per_second is None
    check_rate("sw02001-A_000098-000113", "[laughter] yeah", frames=15, limit=None)  # 13 words per second
    with pytest.raises(HarnessError, match="does not match its audio"):
        check_rate("sw02001-A_000098-000113", "[laughter] yeah", frames=15)


def test_a_truncated_flac_is_one_error_naming_it(tmp_path: Path) -> None:
    import soundfile

    path = tmp_path / "1-2-0000.flac"
    soundfile.write(path, (0.3 * np.sin(np.arange(48000) / 10)).astype(np.float32), 16000, format="FLAC")
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(HarnessError, match=r"1-2-0000\.flac: unreadable audio"):
        load_audio(path)


def test_training_features_are_augmented_per_utterance_and_reproducibly() -> None:
    torch.manual_seed(0)
    batch = SpeechBatch(torch.randn(2, 400, 80), torch.tensor([400, 300]), ["A B", "C"], ["1-1-0001", "1-1-0002"])
    system = SpecAugmentLAS(policy="LD", wordpieces=0)
    clean, _ = system.features(batch, augment=False)
    first, lengths = system.features(batch, augment=True)
    again, _ = system.features(batch, augment=True)
    assert first.shape == (2, 400, 80, 3) and lengths.tolist() == [400, 300]
    assert torch.equal(first, again) and not torch.equal(first, clean)
    assert torch.equal(first[1, 300:], torch.zeros(100, 80, 3))  # padding stays zero
    loss = system.loss(batch, augment=True, smoothing=0.1)
    loss.backward()
    assert torch.isfinite(loss)
