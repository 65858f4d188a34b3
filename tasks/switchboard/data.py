"""Hub5'00 as it is distributed, as a Lightning data module: SPHERE conversations cut into the STM's segments.

Layout (LDC2002S09 and LDC2002T43 unpacked side by side under ``data_root``, as Kaldi's
``egs/swbd/s5c/local/eval2000_data_prep.sh`` expects them):

- audio: ``hub5e_00/english/<file>.sph`` (also looked for in ``english/``), NIST SPHERE, two channels (side A is
  channel 1, side B channel 2), 8 kHz, 16-bit PCM or 8-bit µ-law (read by soundfile / libsndfile). LDC ships some
  releases shorten-compressed (``sample_coding ...,embedded-shorten-...``), which libsndfile cannot decode: such a
  file is an error that says to convert it with ``sph2pipe -f sph -p IN.sph OUT.sph`` (16-bit PCM SPHERE).
- references: ``2000_hub5_eng_eval_tr/reference/hub5e00.english.000405.stm`` (also ``reference/`` or the data
  root itself), and next to it the GLM ``en20000405_hub5.glm``, used by ``scoring`` when present.

Each STM segment not marked ``IGNORE_TIME_SEGMENT_IN_SCORING`` is one example: samples
``[round(begin * 8000), round(end * 8000))`` of its side's channel. Batches are
:class:`tasks.librispeech.data.SpeechBatch` ``(inputs, lengths, transcripts, ids)``, with the same front ends as
LibriSpeech at 8 kHz (``"log-mel"``: 25 ms / 10 ms windows, 256-point FFT, ``n_mels`` filters up to 4 kHz;
``"waveform"``: samples in [-1, 1]); ``transcripts`` are the STM's reference texts unnormalised (the metric
normalises them as the scorer does) and ``ids`` the scorer's segment ids.

Hub5'00 is an evaluation set: there is no training split (Switchboard-1, LDC97S62, is a separate corpus, read by
:class:`tasks.switchboard.train.SwitchboardDataModule`, which tests on this module's loaders).
``subsets`` chooses ``swb`` (files ``sw_*``), ``ch`` (``en_*``) or both; each is one test (and validation)
loader. ``verify()`` reads every referenced file's SPHERE header and checks the file holds the samples it
declares, is 8 kHz and has the segment's channel, and every segment ends within its file: any problem is one
:class:`HarnessError` naming the file (and STM line). ``data_hash`` is the sha256 of the scored segments' ``<id>
<text>`` lines: it names the references, not the audio bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.librispeech.data import FEATURES, LogMelSpectrogram, collate
from tasks.loaders import make_loader
from tasks.switchboard.score import SUBSETS, Segment, read_stm, subset_of, write_stm

SAMPLE_RATE = 8_000
STM_NAME = "hub5e00.english.000405.stm"
GLM_NAME = "en20000405_hub5.glm"
AUDIO_DIRS = ("hub5e_00/english", "english", "LDC2002S09/hub5e_00/english")
STM_DIRS = ("2000_hub5_eng_eval_tr/reference", "reference", "LDC2002T43/2000_hub5_eng_eval_tr/reference", ".")
CODINGS = {"pcm": 2, "ulaw": 1, "mu-law": 1, "alaw": 1}  # sample_coding -> bytes per sample libsndfile reads


# --- SPHERE files ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SphereInfo:
    path: Path
    channels: int
    sample_rate: int
    samples: int  # per channel
    coding: str


def _header_fields(path: Path, head: bytes) -> dict[str, str]:
    if not head.startswith(b"NIST_1A"):
        raise HarnessError(f"{path}: not a NIST SPHERE file (no NIST_1A header)")
    lines = head.split(b"\n")
    try:
        size = int(lines[1])
    except (IndexError, ValueError):
        raise HarnessError(f"{path}: corrupt SPHERE header (no header size on line 2)") from None
    fields = {"header_size": str(size)}
    for raw in head[:size].split(b"\n")[2:]:
        parts = raw.decode("latin-1").split(None, 2)
        if parts and parts[0] == "end_head":
            return fields
        if len(parts) == 3:
            fields[parts[0]] = parts[2].strip()
    raise HarnessError(f"{path}: corrupt SPHERE header (no end_head within its {size} bytes)")


def read_sphere_info(path: Path) -> SphereInfo:
    """The header of a SPHERE file, checked against the file's size; shorten-compressed files are an error."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
        size = Path(path).stat().st_size
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    fields = _header_fields(path, head)
    coding = fields.get("sample_coding", "pcm").lower()
    if "shorten" in coding:
        raise HarnessError(
            f"{path}: shorten-compressed SPHERE ({coding}), which libsndfile cannot read; convert it to 16-bit PCM "
            f"SPHERE with sph2pipe: sph2pipe -f sph -p {path.name} OUT.sph"
        )
    try:
        channels, rate, samples = (int(fields[k]) for k in ("channel_count", "sample_rate", "sample_count"))
        width = int(fields.get("sample_n_bytes", CODINGS.get(coding.split(",")[0], 2)))
    except (KeyError, ValueError) as exc:
        raise HarnessError(f"{path}: corrupt SPHERE header (field {exc} missing or not an integer)") from None
    held = (size - int(fields["header_size"])) // max(1, channels * width)
    if held < samples:
        raise HarnessError(f"{path}: truncated: its header declares {samples} samples per channel, it holds {held}")
    return SphereInfo(Path(path), channels, rate, samples, coding)


def read_segment(path: Path, channel: int, begin: int, end: int) -> np.ndarray:
    """Samples ``[begin, end)`` of one channel (0: side A, 1: side B) as float32 in [-1, 1]."""
    import soundfile

    try:
        samples, _ = soundfile.read(path, start=begin, stop=end, dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError, RuntimeError, ... on bad files
        raise HarnessError(f"{path}: unreadable audio: {exc}") from None
    if samples.shape[0] != end - begin or channel >= samples.shape[1]:
        raise HarnessError(f"{path}: samples {begin}-{end} of channel {channel + 1} could not be read")
    return samples[:, channel]


def segment_inputs(path: Path, channel: int, begin: int, end: int, front_end: torch.nn.Module | None) -> Tensor:
    """A segment's model inputs: :func:`read_segment`'s samples through ``front_end`` (``None``: the waveform)."""
    inputs = torch.from_numpy(read_segment(path, channel, begin, end))
    if front_end is None:
        return inputs
    with torch.no_grad():
        return front_end(inputs)


# --- the layout --------------------------------------------------------------------------------------------------


def _first(root: Path, candidates: Sequence[str], what: str, test) -> Path:
    for name in candidates:
        if test(root / name):
            return root / name
    raise HarnessError(f"{root}: no {what} (looked in {', '.join(str(root / c) for c in candidates)})")


def find_layout(root: Path) -> tuple[Path, Path, Path | None]:
    """``(audio folder, STM file, GLM file or None)`` under a data root (see the module docstring)."""
    root = Path(root)
    audio = _first(root, AUDIO_DIRS, "Hub5'00 audio folder of .sph files", lambda p: p.is_dir())
    stm = _first(root, [f"{d}/{STM_NAME}" for d in STM_DIRS], f"reference STM {STM_NAME}", lambda p: p.is_file())
    glm = stm.parent / GLM_NAME
    return audio, stm, glm if glm.is_file() else None


def check_segments(segments: Sequence[Segment], audio: Path) -> dict[str, SphereInfo]:
    """Every segment's file exists, has its channel and is 8 kHz, and the segment ends within it."""
    infos: dict[str, SphereInfo] = {}
    for segment in segments:
        where = f"{segment.path}:{segment.number}"
        if segment.file not in infos:
            path = audio / f"{segment.file}.sph"
            if not path.is_file():
                raise HarnessError(f"{where}: segment {segment.id} names {path.name}, which is not in {audio}")
            infos[segment.file] = read_sphere_info(path)
        info = infos[segment.file]
        if info.sample_rate != SAMPLE_RATE:
            raise HarnessError(f"{info.path}: sample rate {info.sample_rate} Hz; Hub5'00 is {SAMPLE_RATE} Hz")
        if "AB".index(segment.channel) >= info.channels:
            raise HarnessError(f"{where}: segment {segment.id} is on side B but {info.path.name} has one channel")
        if round(segment.end * SAMPLE_RATE) > info.samples:
            raise HarnessError(
                f"{where}: segment {segment.id} ends at {segment.end:.2f} s, after the end of {info.path.name} "
                f"({info.samples / SAMPLE_RATE:.2f} s)"
            )
    return infos


# --- datasets and the data module --------------------------------------------------------------------------------


class SegmentDataset(Dataset):
    """``(inputs, reference text, segment id)`` per STM segment: log-mel (T, n_mels) or waveform (S,)."""

    def __init__(self, segments: Sequence[Segment], audio: Path, front_end: torch.nn.Module | None) -> None:
        self.segments, self.audio, self.front_end = list(segments), Path(audio), front_end

    def __len__(self) -> int:
        return len(self.segments)

    def __getitem__(self, index: int) -> tuple[Tensor, str, str]:
        s = self.segments[index]
        begin, end = round(s.begin * SAMPLE_RATE), round(s.end * SAMPLE_RATE)
        path = self.audio / f"{s.file}.sph"
        return segment_inputs(path, "AB".index(s.channel), begin, end, self.front_end), s.text, s.id


class Hub5DataModule(pl.LightningDataModule):
    """Hub5'00 segments from ``data_root``; one val / test dataloader per subset, in the order given.

    Args:
        data_root: the folder holding ``hub5e_00/`` and ``2000_hub5_eng_eval_tr/`` (see the module docstring).
        subsets: ``"swb"``, ``"ch"`` or both.
        batch_size: segments per batch.
        features: ``"log-mel"`` or ``"waveform"``.
        n_mels: filter-bank size for ``"log-mel"``.
        num_workers: data-loader worker processes.
        glm: a GLM file for scoring (default: ``en20000405_hub5.glm`` next to the STM, when present).
    """

    task = "switchboard"  # what scores the test loaders (a system picks its metric by it)

    def __init__(
        self,
        data_root: str | Path,
        subsets: str | Sequence[str] = ("swb", "ch"),
        batch_size: int = 16,
        features: str = "log-mel",
        n_mels: int = 80,
        num_workers: int = 0,
        glm: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if features not in FEATURES:
            raise HarnessError(f"unknown features {features!r}; choose one of {', '.join(FEATURES)}")
        self.subsets = (subsets,) if isinstance(subsets, str) else tuple(subsets)
        unknown = [s for s in self.subsets if s not in SUBSETS]
        if unknown or not self.subsets:
            raise HarnessError(f"unknown Hub5'00 subsets {unknown or '(none)'}; choose from {', '.join(SUBSETS)}")
        self.data_root, self.batch_size, self.num_workers = Path(data_root), batch_size, num_workers
        self.front_end = LogMelSpectrogram(SAMPLE_RATE, n_mels=n_mels) if features == "log-mel" else None
        self.glm = Path(glm) if glm is not None else None
        self.segments: list[Segment] = []
        self.data_hash: str | None = None

    def verify(self) -> None:
        """Read the STM and check every scored segment against its audio's header."""
        if self.segments:
            return
        self.audio, self.stm, found_glm = find_layout(self.data_root)
        self.glm = self.glm or found_glm
        wanted = [s for s in read_stm(self.stm) if subset_of(s.file) in self.subsets]
        check_segments(wanted, self.audio)
        self.all_segments = wanted  # with the ignored segments, which the written references keep
        self.segments = [s for s in wanted if not s.ignored]

    def setup(self, stage: str | None = None) -> None:
        self.verify()
        lines = "".join(f"{s.id} {s.text}\n" for s in self.segments)
        self.data_hash = hashlib.sha256(lines.encode()).hexdigest()

    def subset(self, name: str) -> list[Segment]:
        return [s for s in self.segments if subset_of(s.file) == name]

    def _loader(self, name: str) -> DataLoader:
        return make_loader(
            SegmentDataset(self.subset(name), self.audio, self.front_end), batch_size=self.batch_size,
            num_workers=self.num_workers, shuffle=False, owner="Hub5DataModule", collate_fn=collate,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        raise HarnessError(
            "Hub5'00 is an evaluation set: train on Switchboard-1 (LDC97S62) with "
            "tasks.switchboard.train:SwitchboardDataModule"
        )

    def val_dataloader(self) -> list[DataLoader]:
        return [self._loader(name) for name in self.subsets]

    def test_dataloader(self) -> list[DataLoader]:
        return [self._loader(name) for name in self.subsets]

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """Test loader ``dataloader_idx``'s references: its subset's STM lines (ignored segments included) written to
        ``folder/hub5e00.<subset>.stm``; ids = segment ids."""
        name = self.subsets[dataloader_idx]
        lines = [s for s in self.all_segments if subset_of(s.file) == name]
        references = write_stm(Path(folder) / f"hub5e00.{name}.stm", lines)
        return Scoring("switchboard", references, [s.id for s in self.subset(name)])
