"""Switchboard-1 Release 2 (LDC97S62, ~300 h) to train on, Hub5'00 to test on: the data of Kaldi's s5c recipe.

SpecAugment (arXiv 1904.08779v3, Section 4.2) trains on Switchboard 300h "processed with Kaldi's s5c recipe" and
tests on Hub5'00. :class:`SwitchboardDataModule` reads the corpus as ``egs/swbd/s5c/local/swbd1_data_prep.sh``
expects it (read for its facts only; nothing of Kaldi is used) and serves Hub5'00 through
:class:`tasks.switchboard.data.Hub5DataModule`. Layout under ``data_root``:

- audio: LDC97S62's conversations ``sw0NNNN.sph``, found anywhere below the root (as s5c's ``find -iname
  '*.sph'``; names of other forms, such as Hub5'00's ``sw_NNNN.sph``, are not conversations of it): NIST SPHERE,
  two channels (side A channel 1, side B channel 2), 8 kHz, 16-bit PCM or µ-law. LDC ships them
  shorten-compressed, which libsndfile cannot decode: convert each with ``sph2pipe -f sph -p IN.sph OUT.sph``
  (the error says so).
- transcripts: the ISIP Mississippi State word transcriptions, ``swb_ms98_transcriptions/NN/NNNN/
  swNNNN[AB]-ms98-a-trans.text`` (directly under the root or one folder down), one ``<utt-id> <begin> <end>
  <words>`` line per segment, e.g. ``sw2001A-ms98-a-0001 0.000000 0.977625 [silence]``; only ``*-trans.text``
  files are read (not the ``-word.text`` alignments).
- Hub5'00 (the test set): ``hub5e_00/`` and ``2000_hub5_eng_eval_tr/`` under ``hub5_root`` (default: the same
  root), as :mod:`tasks.switchboard.data` describes.

What s5c does, and so what is done here:

1. Each line becomes utterance ``sw0NNNN-S_BBBBBB-EEEEEE`` (times in hundredths, rounded half up), covering those
   rounded times on side S's channel: samples ``[100 B x 80, 100 E x 80)``.
2. ``[silence]`` and the ``<b_aside>`` / ``<e_aside>`` markers are removed (case-insensitive); a segment with no
   word left is dropped.
3. Each word is mapped as ``swbd1_map_words.pl`` does (:func:`map_word`): ``[laughter-story]`` -> ``story``;
   a mispronunciation ``[it'n/isn't]`` -> ``it'n`` (as said); partial words ``-[an]y`` -> ``-y``, ``ab[solute]-``
   -> ``ab-``; ``{yuppiedom}`` -> ``yuppiedom``; ``them_1`` -> ``them``. Its rule for a bracket inside a word
   (``ammu[n]it-``) is followed as its code does it (``ammn-t-``), not as its comment says (``ammu-it-``): the
   code made the data the paper trained on. ``[noise]``, ``[vocalized-noise]`` and ``[laughter]`` stay words.
   The text is lower case (s5c's final ``text``).
4. As Kaldi's ``extract-segments`` (default options) cuts the audio for the features: a segment ending at most
   0.5 s after its audio is cut at the audio's end; one then shorter than 0.1 s is dropped.
5. Utterances are sorted by id (byte order, s5c's ``LC_ALL=C``); the first ``dev_utterances`` (4000) are
   ``train_dev`` (s5c's ``run.sh``), the rest ``train_nodev``; ``train_nodup`` is ``train_nodev`` with at most
   about ``max_duplicates`` (300) copies of any transcript, chosen by ``remove_dup_utts.sh``'s rule
   (:func:`remove_duplicates`: its predictable generator, so the same utterances).

Where this differs from s5c, and why:

- No acronym mapping (``map_acronyms_transcripts.py``: ``ibm`` -> ``i._b._m.``, Fisher's spelling): it needs
  the lexicon and Kaldi's single-letter list, and exists to share the Fisher LM's vocabulary; an end-to-end
  system has no lexicon and no Fisher here. Acronyms keep ms98's spelling.
- The noise words stay targets, as s5c's text has them (ESPnet's Switchboard recipe keeps them too); the Hub5
  scorer drops bracketed markers from hypotheses, so decoding them costs nothing.
- ``[silence]`` is removed wherever it stands (s5c's pattern misses the second of two adjacent ones).
- A transcribed conversation whose ``.sph`` is missing is an error naming the file (s5c's ``fix_data_dir.sh``
  silently drops its utterances; it expects 2435 or 2438 files); name the conversation in ``skip_conversations``
  to train without it. A segment ending more than 0.5 s after its audio (or starting after its end) is an
  error naming the transcript line (``extract-segments`` skips it with a warning): audio and transcripts do not
  belong together.

Splits: ``train_nodup`` is the training split (``train_splits``), ``train_dev`` the validation loader (its
transcripts are written as the training ones are, so the validation loss compares like with like; Hub5'00's
STM text is not), Hub5'00's ``test_subsets`` (``swb``, ``ch``) the test loaders, scored by
:class:`tasks.switchboard.metric.Hub5WER` with the Hub5 GLM (``glm``). Batches are
:class:`tasks.librispeech.data.SpeechBatch` with Hub5'00's front ends at 8 kHz (log-mel: 25 ms / 10 ms,
256-point FFT, ``n_mels`` filters up to 4 kHz).

Bad input is one :class:`HarnessError` naming the file (and line): a malformed transcription line (fields,
times, an id that is not its file's side), a missing, corrupt, truncated, shorten-compressed, not 8 kHz or not
two-channel ``.sph``, a segment past its audio. ``verify()`` indexes everything (every transcription file, every
referenced SPHERE header), decodes ``verify_audio`` segments spread over the training split, and verifies
Hub5'00. ``data_hash`` (after ``setup``) is the sha256 of the training split's ``<id> <transcript>`` lines
followed by Hub5'00's ``data_hash``: it names the data, not the audio bytes.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pytorch_lightning as pl
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.librispeech.data import collate
from tasks.loaders import make_loader, spread
from tasks.switchboard.data import (
    SAMPLE_RATE,
    Hub5DataModule,
    SphereInfo,
    read_segment,
    read_sphere_info,
    segment_inputs,
)
from tasks.switchboard.score import _lines

TRANSCRIPTS = "swb_ms98_transcriptions"
AUDIO_NAME = re.compile(r"sw0\d{4}\.sph", re.IGNORECASE)
MS98_ID = re.compile(r"sw(?P<number>\d{4})(?P<side>[AB])-ms98-a-\d{4}")
MS98_FILE = re.compile(r"sw(?P<number>\d{4})(?P<side>[AB])-ms98-a-trans\.text")
ASIDE = re.compile(r"<[be]_aside>", re.IGNORECASE)
MAX_OVERSHOOT = 0.5  # seconds a segment may end after its audio (Kaldi extract-segments' --max-overshoot)
MIN_SEGMENT = 0.1  # seconds (extract-segments' --min-segment-length)
DEV_UTTERANCES = 4000  # s5c run.sh: utils/subset_data_dir.sh --first data/train 4000 data/train_dev
MAX_DUPLICATES = 300  # s5c run.sh: utils/data/remove_dup_utts.sh 300 data/train_nodev data/train_nodup
SPLITS = ("train", "train_dev", "train_nodev", "train_nodup")
VERIFY_AUDIO = 100

# swbd1_map_words.pl's substitutions, in its order, each applied once to each word (see the module docstring).
NOT_BRACKET = r"[^\[\]]"
WORD_RULES = (
    (re.compile(r"^\[laughter-(.+)\](-?)$", re.IGNORECASE), r"\1\2"),  # [laughter-story] -> story
    (re.compile(r"^\[(.+)/.+\](-?)$"), r"\1\2"),  # [it'n/isn't] -> it'n: the word as said
    (re.compile(rf"^-?\[{NOT_BRACKET}+\](.+)$"), r"-\1"),  # -[an]y -> -y: a word begun unheard
    (re.compile(rf"^(.+)\[{NOT_BRACKET}+\]-?$"), r"\1-"),  # ab[solute]- -> ab-: a word left unfinished
    (re.compile(r"([^\[\]]+)\[.+\]$"), r"\1"),  # anything else bracketed at the end is dropped
    (re.compile(r"^\{(.+)\}$"), r"\1"),  # {yuppiedom} -> yuppiedom
    (re.compile(rf"[a-z]\[({NOT_BRACKET})+\][a-z]", re.IGNORECASE), r"\1-"),  # as s5c's code: ammu[n]it- -> ammn-t-
    (re.compile(r"_\d"), ""),  # them_1 -> them
)


class Utterance(NamedTuple):
    """One training segment: Kaldi's utterance id, its normalised transcript and where its samples are."""

    id: str  # sw02001-A_000098-001156
    transcript: str
    path: Path  # the conversation's .sph
    channel: int  # 0: side A, 1: side B
    begin: int  # first sample
    end: int  # one past the last sample
    source: str  # "<transcription file>:<line>"


class Ms98Line(NamedTuple):
    path: Path
    number: int
    conversation: str  # sw02001, as LDC97S62 names the audio
    side: str
    begin: float
    end: float
    words: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.number}"


# --- transcripts -------------------------------------------------------------------------------------------------


def map_word(word: str) -> str:
    """One word as ``swbd1_map_words.pl`` writes it (each of :data:`WORD_RULES` applied once, in order)."""
    for pattern, replacement in WORD_RULES:
        word = pattern.sub(replacement, word, count=1)
    return word


def normalise(words: Sequence[str]) -> str:
    """A segment's words as s5c's ``text`` has them (without its acronym mapping); ``""`` when none is left."""
    kept = ASIDE.sub(" ", " ".join(w for w in words if w.lower() != "[silence]")).split()
    return " ".join(mapped.lower() for mapped in map(map_word, kept) if mapped)


def hundredths(seconds: float) -> int:
    """A time in hundredths of a second, rounded half up, as s5c writes it into an utterance id."""
    return int(100 * seconds + 0.5)


def utterance_id(conversation: str, side: str, begin: float, end: float) -> str:
    """s5c's id: ``<conversation>-<side>_<begin>-<end>``, times in :func:`hundredths`, six digits."""
    return f"{conversation}-{side}_{hundredths(begin):06d}-{hundredths(end):06d}"


def _parse_ms98_line(path: Path, number: int, line: str, side: tuple[str, str]) -> Ms98Line:
    fields = line.split()
    if len(fields) < 3:
        raise HarnessError(f"{path}:{number}: expected '<utt-id> <begin> <end> <words>', found {line.strip()[:60]!r}")
    found = MS98_ID.fullmatch(fields[0])
    if found is None or (found["number"], found["side"]) != side:
        raise HarnessError(
            f"{path}:{number}: utterance id {fields[0]!r} is not one of this file's (sw{side[0]}{side[1]}-ms98-a-NNNN)"
        )
    try:
        begin, end = float(fields[1]), float(fields[2])
    except ValueError:
        raise HarnessError(f"{path}:{number}: begin/end times {fields[1]!r} {fields[2]!r} are not numbers") from None
    if not (0 <= begin <= end < float("inf")):
        raise HarnessError(f"{path}:{number}: segment {fields[1]}-{fields[2]} s is not a time span")
    return Ms98Line(path, number, f"sw0{side[0]}", side[1], begin, end, tuple(fields[3:]))


def read_ms98(path: Path) -> list[Ms98Line]:
    """Every line of one ``swNNNN[AB]-ms98-a-trans.text`` file (blank lines skipped)."""
    name = MS98_FILE.fullmatch(Path(path).name)
    if name is None:
        raise HarnessError(f"{path}: not an ms98 transcription file name (swNNNN[AB]-ms98-a-trans.text)")
    side = (name["number"], name["side"])
    return [_parse_ms98_line(Path(path), n, line, side) for n, line in _lines(path) if line.strip()]


def find_transcripts(root: Path) -> Path:
    """The ``swb_ms98_transcriptions`` folder: directly under ``root`` or one folder down."""
    candidates = [root / TRANSCRIPTS, *sorted(root.glob(f"*/{TRANSCRIPTS}"))]
    for folder in candidates:
        if folder.is_dir():
            return folder
    raise HarnessError(f"{root}: no {TRANSCRIPTS}/ folder (looked in {root / TRANSCRIPTS} and {root}/*/{TRANSCRIPTS})")


def read_transcripts(root: Path) -> list[Ms98Line]:
    """Every line of every ``NN/NNNN/*-trans.text`` file under the ms98 folder, in path order."""
    folder = find_transcripts(root)
    files = sorted(folder.glob("*/*/*-trans.text"))
    if not files:
        raise HarnessError(f"{folder}: no NN/NNNN/swNNNN[AB]-ms98-a-trans.text files")
    return [line for path in files for line in read_ms98(path)]


# --- audio -------------------------------------------------------------------------------------------------------


def find_audio(root: Path) -> dict[str, Path]:
    """``conversation -> .sph`` for every ``sw0NNNN.sph`` below ``root`` (any case); a conversation found twice is
    an error naming both files."""
    found: dict[str, Path] = {}
    for path in sorted(p for p in root.rglob("*") if AUDIO_NAME.fullmatch(p.name)):
        conversation = path.stem.lower()
        if conversation in found:
            raise HarnessError(f"{path}: conversation {conversation} is also {found[conversation]}; keep one")
        found[conversation] = path
    return found


def check_conversation(info: SphereInfo) -> None:
    if info.sample_rate != SAMPLE_RATE:
        raise HarnessError(f"{info.path}: sample rate {info.sample_rate} Hz; Switchboard-1 is {SAMPLE_RATE} Hz")
    if info.channels != 2:
        raise HarnessError(f"{info.path}: {info.channels} channel(s); Switchboard-1 conversations have two (A, B)")


def cut(line: Ms98Line, info: SphereInfo, transcript: str) -> Utterance | None:
    """The utterance of one line as ``extract-segments`` cuts it: end clipped to the audio (by at most
    :data:`MAX_OVERSHOOT`), ``None`` when then shorter than :data:`MIN_SEGMENT`."""
    uid = utterance_id(line.conversation, line.side, line.begin, line.end)
    begin_cs, end_cs = hundredths(line.begin), hundredths(line.end)  # the id's times
    length = info.samples / SAMPLE_RATE
    late = None  # what lies past the audio, if anything
    if begin_cs / 100 > length:
        late = f"starts at {begin_cs / 100:.2f} s"
    elif end_cs / 100 > length + MAX_OVERSHOOT:
        late = f"ends at {end_cs / 100:.2f} s, more than {MAX_OVERSHOOT} s"
    if late is not None:
        raise HarnessError(
            f"{line.where}: segment {uid} {late} after the end of {info.path.name} ({length:.2f} s): the transcript "
            "does not belong to this audio"
        )
    end = min(end_cs * SAMPLE_RATE // 100, info.samples)
    begin = begin_cs * SAMPLE_RATE // 100
    if end - begin < MIN_SEGMENT * SAMPLE_RATE:
        return None
    return Utterance(uid, transcript, info.path, "AB".index(line.side), begin, end, line.where)


def index_corpus(root: Path, skip: Sequence[str] = ()) -> list[Utterance]:
    """Every kept utterance (steps 1-4 of the module docstring), sorted by id; ids must be unique."""
    root = Path(root)
    audio, infos, skipped = find_audio(root), {}, {s.lower() for s in skip}
    utterances: dict[str, Utterance] = {}
    for line in read_transcripts(root):
        transcript = normalise(line.words)
        if not transcript or line.conversation in skipped:
            continue
        if line.conversation not in audio:
            raise HarnessError(
                f"{line.where}: {line.conversation}.sph is not under {root} (converted from LDC97S62); "
                "to train without this conversation, as Kaldi's recipe would, name it in skip_conversations"
            )
        if line.conversation not in infos:
            infos[line.conversation] = read_sphere_info(audio[line.conversation])
            check_conversation(infos[line.conversation])
        utterance = cut(line, infos[line.conversation], transcript)
        if utterance is None:
            continue
        if utterance.id in utterances:
            raise HarnessError(f"{line.where}: utterance {utterance.id} repeats {utterances[utterance.id].source}")
        utterances[utterance.id] = utterance
    if not utterances:
        raise HarnessError(f"{find_transcripts(root)}: no segment with words")
    return [utterances[uid] for uid in sorted(utterances)]


# --- s5c's subsets -----------------------------------------------------------------------------------------------


def remove_duplicates(utterances: Sequence[Utterance], max_count: int = MAX_DUPLICATES) -> list[Utterance]:
    """``remove_dup_utts.sh``'s rule: an utterance whose transcript occurs ``n >= max_count`` times is kept when the
    next number of its predictable generator (``k = (k + 103349) mod 71147``, drawn only for such utterances, in
    order) is below ``max_count / n`` x 71147; all others are kept."""
    if max_count < 2:
        raise HarnessError(f"max_duplicates {max_count}: must be at least 2 (as remove_dup_utts.sh requires)")
    counts = Counter(u.transcript for u in utterances)
    kept, k = [], 0
    for utterance in utterances:
        n = counts[utterance.transcript]
        if n >= max_count:
            k = (k + 103349) % 71147
            if k / 71147 >= max_count / n:
                continue
        kept.append(utterance)
    return kept


def subsets(utterances: Sequence[Utterance], dev: int, max_count: int) -> dict[str, list[Utterance]]:
    """s5c's ``train`` (all), ``train_dev`` (the first ``dev``), ``train_nodev`` and ``train_nodup``."""
    nodev = list(utterances[dev:])
    return {
        "train": list(utterances),
        "train_dev": list(utterances[:dev]),
        "train_nodev": nodev,
        "train_nodup": remove_duplicates(nodev, max_count),
    }


# --- datasets and the data module --------------------------------------------------------------------------------


class SideSegmentDataset(Dataset):
    """``(inputs, transcript, utterance id)`` per utterance: log-mel (T, n_mels) or waveform (S,)."""

    def __init__(self, utterances: Sequence[Utterance], front_end: nn.Module | None) -> None:
        self.utterances, self.front_end = list(utterances), front_end

    def __len__(self) -> int:
        return len(self.utterances)

    def __getitem__(self, index: int) -> tuple[Tensor, str, str]:
        u = self.utterances[index]
        return segment_inputs(u.path, u.channel, u.begin, u.end, self.front_end), u.transcript, u.id


class SwitchboardDataModule(pl.LightningDataModule):
    """Switchboard-1 ``train_nodup`` to train on, ``train_dev`` to validate on, Hub5'00 subsets to test on.

    Args:
        data_root: the folder holding LDC97S62's ``.sph`` files (anywhere below) and ``swb_ms98_transcriptions/``.
        hub5_root: the folder holding Hub5'00 (default: ``data_root``).
        test_subsets: Hub5'00 subsets, one test loader each, in this order (``swb``, ``ch``).
        batch_size: utterances per batch.
        features: ``"log-mel"`` or ``"waveform"``.
        n_mels: filter-bank size for ``"log-mel"``.
        num_workers: data-loader worker processes.
        dev_utterances: the first utterances held out as ``train_dev`` (s5c: 4000).
        max_duplicates: ``remove_dup_utts.sh``'s max count (s5c: 300).
        skip_conversations: conversations (``sw0NNNN``) left out, e.g. ones whose audio a release lacks.
        verify_audio: training segments ``verify()`` decodes (-1: all, 0: none).
        glm: a GLM for scoring (default: Hub5'00's ``en20000405_hub5.glm`` when present).
    """

    task = "switchboard"  # the test loaders are Hub5'00's: scored by tasks.switchboard (SpecAugmentLAS reads this)
    # Segments are cut at their own transcription's times (ms98, Hub5's STM), so a words-per-second check cannot tell
    # a mismatched transcript, and short fast segments ("[laughter] yeah" in 0.15 s) are real: SpecAugmentLAS skips
    # its check (reproductions.specaugment.system.check_rate) for this data module.
    max_words_per_second = None
    train_splits = ("train_nodup",)
    val_split = "train_dev"

    def __init__(
        self,
        data_root: str | Path,
        hub5_root: str | Path | None = None,
        test_subsets: str | Sequence[str] = ("swb", "ch"),
        batch_size: int = 16,
        features: str = "log-mel",
        n_mels: int = 80,
        num_workers: int = 0,
        dev_utterances: int = DEV_UTTERANCES,
        max_duplicates: int = MAX_DUPLICATES,
        skip_conversations: Sequence[str] = (),
        verify_audio: int = VERIFY_AUDIO,
        glm: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.hub5 = Hub5DataModule(  # checks features and test_subsets
            hub5_root if hub5_root is not None else data_root, subsets=test_subsets, batch_size=batch_size,
            features=features, n_mels=n_mels, num_workers=num_workers, glm=glm,
        )  # fmt: skip
        self.front_end = self.hub5.front_end  # the same front end for training and test (8 kHz)
        self.data_root, self.batch_size, self.num_workers = Path(data_root), batch_size, num_workers
        self.dev_utterances, self.max_duplicates, self.verify_audio = dev_utterances, max_duplicates, verify_audio
        self.skip_conversations = tuple(skip_conversations)
        self.splits: dict[str, list[Utterance]] = {}
        self._verified = False
        self.data_hash: str | None = None

    @property
    def glm(self) -> Path | None:
        """The GLM the Hub5'00 test metric scores with (known after ``verify()``)."""
        return self.hub5.glm

    def utterances(self, split: str) -> list[Utterance]:
        """One of :data:`SPLITS` (the corpus is indexed once)."""
        if split not in SPLITS:
            raise HarnessError(f"unknown Switchboard-1 split {split!r}; choose from {', '.join(SPLITS)}")
        if not self.splits:
            corpus = index_corpus(self.data_root, self.skip_conversations)
            self.splits = subsets(corpus, self.dev_utterances, self.max_duplicates)
        return self.splits[split]

    def verify(self) -> None:
        """Index the corpus, decode a sample of training segments, verify Hub5'00; errors name the file (line)."""
        if self._verified:
            return
        train = self.utterances("train_nodup")
        for u in spread(train, self.verify_audio):
            read_segment(u.path, u.channel, u.begin, u.end)
        self.hub5.verify()
        self._verified = True

    def setup(self, stage: str | None = None) -> None:
        self.verify()
        self.hub5.setup(stage)
        lines = "".join(f"{u.id} {u.transcript}\n" for u in self.utterances("train_nodup"))
        self.data_hash = hashlib.sha256(f"{lines}hub5 {self.hub5.data_hash}\n".encode()).hexdigest()

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        return make_loader(
            SideSegmentDataset(self.utterances(split), self.front_end), batch_size=self.batch_size,
            num_workers=self.num_workers, shuffle=shuffle, owner="SwitchboardDataModule", collate_fn=collate,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader("train_nodup", shuffle=True)

    def val_dataloader(self) -> list[DataLoader]:
        return [self._loader(self.val_split, shuffle=False)]

    def test_dataloader(self) -> list[DataLoader]:
        return self.hub5.test_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """Test loader ``dataloader_idx``: its Hub5'00 subset's STM lines (:meth:`Hub5DataModule.scoring`)."""
        return self.hub5.scoring(dataloader_idx, folder)
