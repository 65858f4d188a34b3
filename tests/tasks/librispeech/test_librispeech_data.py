"""The LibriSpeech data module, log-mel front end and espeak-ng fixture (tasks.librispeech.data, .fixtures)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from tasks.librispeech import fixtures
from tasks.librispeech.data import LibriSpeechDataModule, LogMelSpectrogram, load_audio, mel_filterbank
from tasks.librispeech.fixtures import UTTERANCES, write_tiny_librispeech
from tasks.librispeech.score import score, write_transcripts

needs_espeak = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three synthesised utterances in ``dev-clean``, made once per test session."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    return write_tiny_librispeech(tmp_path_factory.mktemp("librispeech") / "LibriSpeech")


def copy_of(root: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(root, target)
    return target


def module(root: Path, **kw) -> LibriSpeechDataModule:
    splits = {"train_splits": "dev-clean", "val_splits": ["dev-clean"], "test_splits": ["dev-clean"]}
    return LibriSpeechDataModule(data_root=root, batch_size=3, **{**splits, **kw})


@needs_espeak
def test_fixture_layout_and_audio(tiny_root: Path) -> None:
    chapter = tiny_root / "dev-clean" / "1001" / "2001"
    assert (
        chapter / "1001-2001.trans.txt"
    ).read_text() == "1001-2001-0000 THE CAT SAT ON THE MAT\n1001-2001-0001 IT IS A FINE DAY\n"
    samples = load_audio(chapter / "1001-2001-0000.flac")
    assert samples.dtype == np.float32 and 0.5 * 16000 < len(samples) < 5 * 16000 and np.abs(samples).max() > 0.05
    assert write_tiny_librispeech(tiny_root) == tiny_root  # idempotent: a complete fixture is left alone


@needs_espeak
def test_one_log_mel_batch(tiny_root: Path) -> None:
    dm = module(tiny_root)
    dm.setup("fit")
    batch = next(iter(dm.test_dataloader()[0]))
    assert batch.inputs.shape[0] == 3 and batch.inputs.shape[2] == 80 and torch.isfinite(batch.inputs).all()
    assert batch.ids == [u for u, _, _ in UTTERANCES] and batch.transcripts == [t for _, _, t in UTTERANCES]
    for i, utterance in enumerate(dm.utterances("dev-clean")):
        assert batch.lengths[i] == 1 + len(load_audio(utterance.path)) // 160
        assert (batch.inputs[i, batch.lengths[i] :] == 0).all()  # zero padding after the valid frames
    assert batch.inputs.shape[1] == batch.lengths.max()
    assert dm.data_hash is not None and len(dm.data_hash) == 64


@needs_espeak
def test_waveform_batches_and_references(tiny_root: Path, tmp_path: Path) -> None:
    dm = module(tiny_root, features="waveform")
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert batch.inputs.ndim == 2 and batch.inputs.shape[1] == batch.lengths.max()
    references = dm.write_references("dev-clean", tmp_path / "refs.txt")
    predictions = write_transcripts(
        tmp_path / "preds.txt", zip(batch.ids, [t.lower() for t in batch.transcripts], strict=True)
    )
    assert score(references, predictions)["wer"] == 0.0
    assert score(tiny_root / "dev-clean", predictions)["wer"] == 0.0


@needs_espeak
def test_verify_names_missing_and_unreadable_audio(tiny_root: Path, tmp_path: Path) -> None:
    import soundfile

    root = copy_of(tiny_root, tmp_path)
    flac = root / "dev-clean" / "1002" / "2002" / "1002-2002-0000.flac"
    shutil.copy(flac, flac.with_name("1002-2002-0001.flac"))  # audio without a transcript line
    with pytest.warns(UserWarning, match=r"dev-clean: 1 FLAC files have no transcript line, e\.g\. .*1002-2002-0001"):
        module(root).verify()
    flac.with_name("1002-2002-0001.flac").unlink()
    flac.write_bytes(b"fLaC not really")
    with pytest.raises(HarnessError, match=r"1002-2002-0000\.flac: unreadable audio"):
        module(root, verify_audio=-1).verify()
    soundfile.write(flac, np.zeros(800), 8000, format="FLAC")
    with pytest.raises(HarnessError, match=r"1002-2002-0000\.flac: sample rate 8000 Hz"):
        module(root, verify_audio=-1).verify()
    flac.unlink()
    with pytest.raises(HarnessError, match=r"1002-2002-0000\.flac: missing \(listed in .*1002-2002\.trans\.txt:1\)"):
        module(root).verify()
    with pytest.raises(HarnessError, match=r"test-other: missing"):
        module(tiny_root, test_splits=["test-other"]).verify()


def test_missing_espeak_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fixtures.shutil, "which", lambda name: None)
    with pytest.raises(HarnessError, match=r"espeak-ng not found .*\(apt-get install espeak-ng"):
        write_tiny_librispeech(tmp_path / "ls")
    assert not (tmp_path / "ls").exists()


def test_mel_filterbank_shape_and_coverage() -> None:
    filters = mel_filterbank(80, 512, 16000)
    assert filters.shape == (257, 80)
    assert (filters.max(dim=0).values > 0).all()  # no empty filter at 80 bins and a 512-point FFT
    assert float(filters.max()) <= 1.0


def test_log_mel_of_a_tone_peaks_at_its_filter() -> None:
    front_end = LogMelSpectrogram()
    assert (front_end.win_length, front_end.hop_length, front_end.n_fft) == (400, 160, 512)
    t = torch.arange(16000) / 16000
    features = front_end(torch.sin(2 * math.pi * 1000.0 * t))  # 1 s of 1 kHz
    assert features.shape == (101, 80) and front_end.num_frames(16000) == 101
    centres = mel_filterbank(80, 512, 16000).argmax(dim=0) * 16000 / 512  # peak bin of each filter, in Hz
    expected = int(torch.argmin((centres - 1000.0).abs()))
    assert abs(int(features[50].argmax()) - expected) <= 1
    batched = front_end(torch.stack([torch.sin(2 * math.pi * 1000.0 * t), torch.zeros(16000)]))
    assert batched.shape == (2, 101, 80) and torch.allclose(batched[0], features, atol=1e-4)
