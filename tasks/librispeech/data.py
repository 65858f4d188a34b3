"""LibriSpeech as it is distributed, as a Lightning data module with an 80-bin log-mel front end.

Panayotov et al., "Librispeech: an ASR corpus based on public domain audio books", ICASSP 2015
(https://www.openslr.org/12). Layout (the corpus README, section 2.1): each archive unpacks to
``LibriSpeech/<split>/<speaker>/<chapter>/`` holding ``<speaker>-<chapter>.trans.txt`` (one
``<speaker>-<chapter>-<utterance> TRANSCRIPT`` line per utterance) and one ``<utterance id>.flac`` per line,
16 kHz mono. ``data_root`` may be the ``LibriSpeech/`` folder (holding the split folders) or its parent.

Batches are :class:`SpeechBatch` ``(inputs, lengths, transcripts, ids)``:

- ``features="log-mel"``: ``inputs`` float (N, T, 80), ``log(mel power + 1e-6)`` of a 25 ms Hann window every
  10 ms (400 / 160 samples, 512-point FFT), 80 triangular filters on the HTK mel scale from 0 to 8 kHz, the
  filter-bank front end of the LAS models SpecAugment trains (arXiv 1904.08779). ``lengths`` are valid frames,
  ``1 + samples // 160`` (frames are centred, the signal zero-padded by half a window at each end). No mean or
  variance normalisation and no deltas: those belong to the reproduction.
- ``features="waveform"``: ``inputs`` float (N, S) samples in [-1, 1], ``lengths`` valid samples.

Padding is zeros after ``lengths``. ``transcripts`` are the corpus's upper-case strings, untokenized: the
reproduction owns its vocabulary (characters, word pieces). ``ids`` are utterance ids in the scorer's format, so
predictions can be written with :func:`tasks.librispeech.score.write_transcripts` and scored by
``harness score librispeech``.

``verify()`` parses every transcript file of every configured split, checks that each listed FLAC file exists,
and fully decodes ``verify_audio`` files spread evenly over all of them (``-1``: all, ``0``: none), checking
16 kHz mono; any problem raises :class:`HarnessError` naming the path. ``data_hash`` (after ``setup``) is the
sha256 of the training list (``<utterance id> <transcript>`` lines, sorted): it names the data, not its bytes.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.librispeech.score import read_split
from tasks.loaders import make_loader, spread

SAMPLE_RATE = 16_000
FEATURES = ("log-mel", "waveform")
VERIFY_AUDIO = 100
TRAIN_SPLITS = ("train-clean-100", "train-clean-360", "train-other-500")  # the 960 h training set
VAL_SPLITS = ("dev-clean", "dev-other")
TEST_SPLITS = ("test-clean", "test-other")


class Utterance(NamedTuple):
    id: str
    path: Path
    transcript: str


class SpeechBatch(NamedTuple):
    inputs: Tensor  # (N, T, n_mels) log-mel or (N, S) waveform, zero-padded
    lengths: Tensor  # (N,) long: valid frames or samples
    transcripts: list[str]
    ids: list[str]


# --- the on-disk corpus ------------------------------------------------------------------------------------------


def find_split(root: Path, split: str) -> Path:
    """``root/<split>`` or ``root/LibriSpeech/<split>``."""
    root = Path(root)
    for folder in (root / split, root / "LibriSpeech" / split):
        if folder.is_dir():
            return folder
    raise HarnessError(f"{root / split}: missing (also looked for {root / 'LibriSpeech' / split})")


def index_split(folder: Path) -> list[Utterance]:
    """Every utterance of a split folder, in path order; a transcript line without its FLAC file is an error."""
    lines = read_split(folder)
    utterances = []
    for utterance, line in lines.items():
        audio = line.path.parent / f"{utterance}.flac"
        if not audio.is_file():
            raise HarnessError(f"{audio}: missing (listed in {line.path}:{line.number})")
        utterances.append(Utterance(utterance, audio, line.text))
    chapters = {line.path.parent for line in lines.values()}
    unlisted = sorted(p for chapter in chapters for p in chapter.glob("*.flac") if p.stem not in lines)
    if unlisted:
        warnings.warn(f"{folder}: {len(unlisted)} FLAC files have no transcript line, e.g. {unlisted[0]}", stacklevel=2)
    return utterances


def load_audio(path: Path) -> np.ndarray:
    """Decode one file to float32 samples (S,) in [-1, 1]; it must be 16 kHz mono and not empty."""
    import soundfile

    try:
        samples, rate = soundfile.read(path, dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError, RuntimeError, TypeError, ... on bad files
        raise HarnessError(f"{path}: unreadable audio: {exc}") from None
    if rate != SAMPLE_RATE:
        raise HarnessError(f"{path}: sample rate {rate} Hz; LibriSpeech is {SAMPLE_RATE} Hz")
    if samples.shape[1] != 1:
        raise HarnessError(f"{path}: {samples.shape[1]} channels; LibriSpeech is mono")
    if samples.shape[0] == 0:
        raise HarnessError(f"{path}: no samples")
    return samples[:, 0]


def check_audio(utterances: Sequence[Utterance], limit: int = VERIFY_AUDIO) -> int:
    """Decode ``limit`` files spread evenly over ``utterances`` (all when ``limit < 0``); return how many."""
    chosen = spread(utterances, limit)
    for utterance in chosen:
        load_audio(utterance.path)
    return len(chosen)


# --- features ----------------------------------------------------------------------------------------------------


def hz_to_mel(hz: Tensor) -> Tensor:
    """HTK mel scale: ``2595 log10(1 + f / 700)``."""
    return 2595.0 * torch.log10(1.0 + hz / 700.0)


def mel_to_hz(mel: Tensor) -> Tensor:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(n_mels: int, n_fft: int, sample_rate: int, f_min: float = 0.0, f_max: float | None = None) -> Tensor:
    """Triangular filters (n_fft // 2 + 1, n_mels), peak 1, centres equally spaced in mel from f_min to f_max."""
    f_max = sample_rate / 2 if f_max is None else f_max
    bins = torch.linspace(0.0, sample_rate / 2, n_fft // 2 + 1, dtype=torch.float64)  # (F,) bin frequencies
    mel_min, mel_max = hz_to_mel(torch.tensor([f_min, f_max], dtype=torch.float64)).tolist()
    edges = mel_to_hz(torch.linspace(mel_min, mel_max, n_mels + 2, dtype=torch.float64))  # (M + 2,) in Hz
    lower, centre, upper = edges[:-2], edges[1:-1], edges[2:]  # (M,) each
    rising = (bins[:, None] - lower) / (centre - lower)  # (F, M)
    falling = (upper - bins[:, None]) / (upper - centre)
    return torch.minimum(rising, falling).clamp_min(0.0).float()


class LogMelSpectrogram(nn.Module):
    """``log(mel power + eps)``: waveform (..., S) -> features (..., 1 + S // hop, n_mels)."""

    def __init__(
        self,
        sample_rate: int = SAMPLE_RATE,
        n_mels: int = 80,
        window_ms: float = 25.0,
        hop_ms: float = 10.0,
        eps: float = 1e-6,
    ) -> None:
        super().__init__()
        self.win_length = round(sample_rate * window_ms / 1000)  # 400 samples at 16 kHz
        self.hop_length = round(sample_rate * hop_ms / 1000)  # 160
        self.n_fft = 2 ** math.ceil(math.log2(self.win_length))  # 512
        self.eps = eps
        self.register_buffer("window", torch.hann_window(self.win_length), persistent=False)
        self.register_buffer("filters", mel_filterbank(n_mels, self.n_fft, sample_rate), persistent=False)

    def num_frames(self, num_samples: int) -> int:
        return 1 + num_samples // self.hop_length

    def forward(self, waveform: Tensor) -> Tensor:
        spectrum = torch.stft(
            waveform,
            n_fft=self.n_fft,
            hop_length=self.hop_length,
            win_length=self.win_length,
            window=self.window,
            center=True,
            pad_mode="constant",  # zeros, so a clip shorter than half a window still works
            return_complex=True,
        )  # (..., F, T)
        power = spectrum.abs().pow(2).transpose(-1, -2)  # (..., T, F)
        return torch.log(power @ self.filters + self.eps)  # (..., T, n_mels)


# --- datasets and the data module ---------------------------------------------------------------------------------


class UtteranceDataset(Dataset):
    """``(inputs, transcript, id)`` per utterance: log-mel (T, n_mels) or waveform (S,)."""

    def __init__(self, utterances: Sequence[Utterance], front_end: nn.Module | None) -> None:
        self.utterances = list(utterances)
        self.front_end = front_end

    def __len__(self) -> int:
        return len(self.utterances)

    def __getitem__(self, index: int) -> tuple[Tensor, str, str]:
        utterance = self.utterances[index]
        waveform = torch.from_numpy(load_audio(utterance.path))
        if self.front_end is not None:
            with torch.no_grad():
                waveform = self.front_end(waveform)
        return waveform, utterance.transcript, utterance.id


def collate(items: Sequence[tuple[Tensor, str, str]]) -> SpeechBatch:
    """Zero-pad along time and keep the valid lengths."""
    inputs, transcripts, ids = zip(*items, strict=True)
    lengths = torch.tensor([x.shape[0] for x in inputs], dtype=torch.long)
    return SpeechBatch(pad_sequence(list(inputs), batch_first=True), lengths, list(transcripts), list(ids))


def _splits(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


class LibriSpeechDataModule(pl.LightningDataModule):
    """LibriSpeech splits from ``data_root``; one val / test dataloader per split, in the order given.

    Args:
        data_root: the ``LibriSpeech/`` folder holding the split folders, or its parent.
        train_splits: split folders concatenated for training (default: the 960 h set).
        val_splits / test_splits: evaluation splits, one dataloader each.
        batch_size: utterances per batch.
        features: ``"log-mel"`` (80-bin filter bank, see the module docstring) or ``"waveform"``.
        n_mels: filter-bank size for ``"log-mel"``.
        num_workers: data-loader worker processes.
        verify_audio: files ``verify()`` decodes (-1: all, 0: none).
    """

    def __init__(
        self,
        data_root: str | Path,
        train_splits: str | Sequence[str] = TRAIN_SPLITS,
        val_splits: str | Sequence[str] = VAL_SPLITS,
        test_splits: str | Sequence[str] = TEST_SPLITS,
        batch_size: int = 16,
        features: str = "log-mel",
        n_mels: int = 80,
        num_workers: int = 0,
        verify_audio: int = VERIFY_AUDIO,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if features not in FEATURES:
            raise HarnessError(f"unknown features {features!r}; choose one of {', '.join(FEATURES)}")
        self.data_root = Path(data_root)
        self.train_splits, self.val_splits, self.test_splits = map(_splits, (train_splits, val_splits, test_splits))
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.verify_audio = verify_audio
        self.front_end = LogMelSpectrogram(n_mels=n_mels) if features == "log-mel" else None
        self.index: dict[str, list[Utterance]] = {}
        self._verified = False
        self.data_hash: str | None = None

    def utterances(self, split: str) -> list[Utterance]:
        """The utterances of one split (indexed once)."""
        if split not in self.index:
            self.index[split] = index_split(find_split(self.data_root, split))
        return self.index[split]

    def verify(self) -> None:
        """Index every configured split and decode a sample of files; raise :class:`HarnessError` naming the path."""
        if self._verified:
            return
        splits = dict.fromkeys(self.train_splits + self.val_splits + self.test_splits)
        check_audio([u for split in splits for u in self.utterances(split)], self.verify_audio)
        self._verified = True

    def setup(self, stage: str | None = None) -> None:
        self.verify()
        train = sorted(f"{u.id} {u.transcript}\n" for split in self.train_splits for u in self.utterances(split))
        self.data_hash = hashlib.sha256("".join(train).encode()).hexdigest()

    def _loader(self, splits: Sequence[str], shuffle: bool) -> DataLoader:
        utterances = [u for split in splits for u in self.utterances(split)]
        return make_loader(
            UtteranceDataset(utterances, self.front_end), batch_size=self.batch_size, num_workers=self.num_workers,
            shuffle=shuffle, owner="LibriSpeechDataModule", collate_fn=collate,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_splits, shuffle=True)

    def val_dataloader(self) -> list[DataLoader]:
        return [self._loader((split,), shuffle=False) for split in self.val_splits]

    def test_dataloader(self) -> list[DataLoader]:
        return [self._loader((split,), shuffle=False) for split in self.test_splits]

    def write_references(self, split: str, path: Path) -> Path:
        """Write one split's transcripts as a reference file for the scorer."""
        from tasks.librispeech.score import write_transcripts

        return write_transcripts(path, ((u.id, u.transcript) for u in self.utterances(split)))

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How test loader ``dataloader_idx``'s hypotheses are scored: its split's transcripts written to
        ``folder/<split>.trans.txt`` (the split folder's own text, without hashing its audio), ids = utterance ids."""
        split = self.test_splits[dataloader_idx]
        references = self.write_references(split, Path(folder) / f"{split}.trans.txt")
        return Scoring("librispeech", references, [u.id for u in self.utterances(split)])
