"""``espeak-speech``: sentences of the Debian text corpus spoken by espeak-ng, in LibriSpeech's on-disk layout.

Layout (LibriSpeech's README, section 2.1, which ``tasks.librispeech`` reads unchanged):
``<out>/<split>/<speaker>/<chapter>/<speaker>-<chapter>-<utterance>.flac`` (16 kHz, mono, 16-bit FLAC) and one
``<speaker>-<chapter>.trans.txt`` per chapter; ``SPEAKERS.TXT`` (``ID | SEX | SUBSET | MINUTES | NAME``, NAME the
espeak-ng voice, speed and pitch) and ``corpus.json`` (counts, hours, the data hash) at the top. Splits ``train``,
``dev`` and ``test``.

**Speakers** = voice x speed x pitch. A voice is one of espeak-ng's 8 English accents (:data:`ACCENTS`) with one of
its 12 classic voice variants (:data:`VARIANTS`, ``m1``-``m7`` male, ``f1``-``f5`` female), 96 voices; each speaks
at :data:`SPEEDS` words per minute and :data:`PITCHES` (espeak's 0-99 pitch), so 4 speakers per voice. Voices are
held out by a fixed rule: voice (accent ``i``, variant ``j``) is ``test`` when ``(i + j) % 8 == 0``, ``dev`` when
it is 1, ``train`` otherwise (12 / 12 / 72 voices): every accent and every variant is heard in training, and no
test or dev voice is. Speaker id = ``1000 + 4 * (12 * i + j) + style``; chapter id = ``speaker * 1000 + c``,
``c`` counting chapters of :data:`CHAPTER_SIZE` utterances.

**Sentences** come from the text corpus's documents (``corpus.collect``: the same sources, de-duplication and
split), ``train`` speech from the LM's ``train`` documents, ``dev`` from ``valid``, ``test`` from ``test``, so
no sentence is shared between splits. Paragraphs are cut into sentences after ``.``, ``!``, ``?`` or ``;``
followed by white space; a sentence is kept when it has 4 to 20 words (``max_words`` can lower the 20), only
ASCII letters, apostrophes, spaces and the punctuation ``.,;:!?"-`` (no digits, brackets or other symbols), no
upper-case word of two or more letters (acronyms espeak-ng would spell out) and no abbreviation (a word without a
vowel, such as GCIDE's
``cf.`` and ``Fr.``, or a single letter other than ``a``, ``I`` and ``O``, as in ``e.g.``). Candidates are
de-duplicated by transcript and ranked by the sha256 of the transcript; each split takes the first ``n`` and
deals them out to its speakers in turn. The transcript is LibriSpeech's convention: upper case, hyphens read as
spaces, other punctuation removed, apostrophes inside words kept. espeak-ng speaks the sentence with its
punctuation (for prosody) and hyphens as spaces.

**Synthesis**: ``espeak-ng -v <accent>+<variant> -s <speed> -p <pitch> --stdout`` (22,050 Hz WAV), resampled to
16 kHz as ``tasks.librispeech.fixtures`` does (``resample_poly`` 320/441), clipped to [-1, 1], 16-bit FLAC. A
process pool of ``workers`` processes synthesises utterances independently, so the bytes do not depend on the
number of workers. The data hash (:func:`speech_hash`) is the sha256 over every ``.flac`` and ``.trans.txt`` file
(relative path, size, bytes) in path order; espeak-ng's output depends on its version, so the hash is stable on one
Debian release, not across releases (``corpus.json`` records espeak-ng's version).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

from harness.errors import HarnessError
from tasks.debian_corpora.corpus import Kept, collect, package_versions
from tasks.imagenet.fixtures import atomic_fixture
from tasks.librispeech.fixtures import espeak_path, resample
from tasks.librispeech.score import write_transcripts

ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp", "en-gb-x-gbcwmd", "en-029", "en-us-nyc")
VARIANTS = ("m1", "m2", "m3", "m4", "m5", "m6", "m7", "f1", "f2", "f3", "f4", "f5")
SPEEDS = (150, 185)
PITCHES = (35, 65)
SPLITS = {"train": "train", "dev": "valid", "test": "test"}  # speech split -> text corpus split
SAMPLE_RATE = 16_000
CHAPTER_SIZE = 25
MIN_WORDS, MAX_WORDS = 4, 20
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_ALLOWED = re.compile(r"[A-Za-z' .,;:!?\"-]+")
_ACRONYM = re.compile(r"\b[A-Z]{2,}\b")


class Speaker(NamedTuple):
    id: int
    split: str
    accent: str
    variant: str
    speed: int
    pitch: int

    @property
    def voice(self) -> str:
        return f"{self.accent}+{self.variant}"


class Utterance(NamedTuple):
    id: str
    speaker: Speaker
    text: str  # what espeak-ng is given
    transcript: str


def voice_split(accent_index: int, variant_index: int) -> str:
    return {0: "test", 1: "dev"}.get((accent_index + variant_index) % 8, "train")


def speakers() -> list[Speaker]:
    """Every speaker, in id order."""
    out = []
    for i, accent in enumerate(ACCENTS):
        for j, variant in enumerate(VARIANTS):
            for style, (speed, pitch) in enumerate((s, p) for s in SPEEDS for p in PITCHES):
                speaker_id = 1000 + 4 * (len(VARIANTS) * i + j) + style
                out.append(Speaker(speaker_id, voice_split(i, j), accent, variant, speed, pitch))
    return out


def transcript(sentence: str) -> str | None:
    """LibriSpeech's transcript of a sentence, or ``None`` when the sentence is not one espeak-ng can be trusted to
    read word for word (see the module docstring)."""
    if not _ALLOWED.fullmatch(sentence) or _ACRONYM.search(sentence):
        return None
    words = [word.strip("'") for word in re.sub(r"[^A-Za-z']+", " ", sentence.replace("-", " ")).split()]
    words = [word.upper() for word in words if word]
    if not MIN_WORDS <= len(words) <= MAX_WORDS or any(map(_abbreviation, words)):
        return None
    return " ".join(words)


def _abbreviation(word: str) -> bool:
    """A word without a vowel (``CF``, ``FR``, ``ST``) or a single letter other than A, I and O (``E G``)."""
    return not re.search("[AEIOUY]", word) or (len(word) == 1 and word not in "AIO")


def sentences(kept: Iterable[Kept], split: str) -> list[tuple[str, str]]:
    """``(text for espeak-ng, transcript)`` candidates of one text split, de-duplicated, ranked by sha256."""
    found: dict[str, str] = {}
    for item in kept:
        if item.split != split:
            continue
        for paragraph in item.doc.paragraphs:
            for sentence in _SENTENCE_END.split(paragraph):
                words = transcript(sentence)
                if words is not None and words not in found:
                    found[words] = sentence.replace("-", " ")
    ranked = sorted(found, key=lambda words: hashlib.sha256(words.encode()).digest())
    return [(found[words], words) for words in ranked]


def plan(kept: Sequence[Kept], sizes: dict[str, int], max_words: int = MAX_WORDS) -> list[Utterance]:
    """The utterances of every split: ``sizes[split]`` sentences (of at most ``max_words`` words) dealt out to the
    split's speakers in turn."""
    utterances = []
    for split, text_split in SPLITS.items():
        voices = [speaker for speaker in speakers() if speaker.split == split]
        candidates = [c for c in sentences(kept, text_split) if len(c[1].split()) <= max_words]
        if len(candidates) < sizes[split]:
            raise HarnessError(f"espeak-speech {split}: {sizes[split]} utterances asked, {len(candidates)} sentences")
        counts: dict[int, int] = {}
        for number, (text, words) in enumerate(candidates[: sizes[split]]):
            speaker = voices[number % len(voices)]
            n = counts[speaker.id] = counts.get(speaker.id, -1) + 1
            chapter = speaker.id * 1000 + n // CHAPTER_SIZE
            utterances.append(Utterance(f"{speaker.id}-{chapter}-{n % CHAPTER_SIZE:04d}", speaker, text, words))
    return utterances


def synthesize(text: str, speaker: Speaker) -> tuple[bytes, float]:
    """16-bit FLAC bytes of ``text`` spoken by ``speaker``, at 16 kHz, and the duration in seconds."""
    import numpy as np
    import soundfile

    command = [espeak_path(), "-v", speaker.voice, "-s", str(speaker.speed), "-p", str(speaker.pitch), "--stdout"]
    try:
        done = subprocess.run([*command, text], check=True, capture_output=True, timeout=60)
        samples, rate = soundfile.read(io.BytesIO(done.stdout), dtype="float64", always_2d=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, soundfile.LibsndfileError) as exc:
        raise HarnessError(f"espeak-ng ({speaker.voice}) failed on {text!r}: {exc}") from None
    speech = np.clip(resample(samples[:, 0], rate, SAMPLE_RATE), -1.0, 1.0)
    buffer = io.BytesIO()
    soundfile.write(buffer, speech, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return buffer.getvalue(), len(speech) / SAMPLE_RATE


def _chapter_folder(root: Path, utterance: Utterance) -> Path:
    speaker, chapter, _ = utterance.id.split("-")
    return root / utterance.speaker.split / speaker / chapter


def _synthesize_to(job: tuple[Path, Utterance]) -> float:
    root, utterance = job
    flac, seconds = synthesize(utterance.text, utterance.speaker)
    (_chapter_folder(root, utterance) / f"{utterance.id}.flac").write_bytes(flac)
    return seconds


def speech_hash(root: Path) -> str:
    """sha256 over every ``.flac`` and ``.trans.txt`` below ``root`` (relative path, size, bytes), in path order."""
    root = Path(root)
    files = sorted(p for p in root.rglob("*") if p.is_file() and (p.suffix == ".flac" or p.name.endswith(".trans.txt")))
    if not files:
        raise HarnessError(f"{root}: no FLAC or transcript files (build it: python -m tasks.debian_corpora speech OUT)")
    digest = hashlib.sha256()
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def _speakers_txt(utterances: Sequence[Utterance], seconds: Sequence[float]) -> str:
    minutes: dict[int, float] = {}
    for utterance, duration in zip(utterances, seconds, strict=True):
        minutes[utterance.speaker.id] = minutes.get(utterance.speaker.id, 0.0) + duration / 60
    lines = [";ID  |SEX| SUBSET | MINUTES | NAME (espeak-ng voice, speed in words per minute, pitch)\n"]
    for speaker in speakers():
        if speaker.id in minutes:
            sex = "F" if speaker.variant.startswith("f") else "M"
            name = f"{speaker.voice} s{speaker.speed} p{speaker.pitch}"
            lines.append(f"{speaker.id:<5}| {sex} | {speaker.split:<6} | {minutes[speaker.id]:7.2f} | {name}\n")
    return "".join(lines)


def _write_speech(tmp: Path, utterances: Sequence[Utterance], workers: int, info: dict) -> None:
    chapters: dict[Path, list[tuple[str, str]]] = {}
    for utterance in utterances:
        chapters.setdefault(_chapter_folder(tmp, utterance), []).append((utterance.id, utterance.transcript))
    for folder, lines in chapters.items():
        folder.mkdir(parents=True, exist_ok=True)
        write_transcripts(folder / f"{folder.parent.name}-{folder.name}.trans.txt", lines)
    jobs = [(tmp, utterance) for utterance in utterances]
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        seconds = list(pool.map(_synthesize_to, jobs, chunksize=16))
    (tmp / "SPEAKERS.TXT").write_text(_speakers_txt(utterances, seconds), encoding="utf-8")
    hours = {split: 0.0 for split in SPLITS}
    for utterance, duration in zip(utterances, seconds, strict=True):
        hours[utterance.speaker.split] += duration / 3600
    counts = {split: sum(u.speaker.split == split for u in utterances) for split in SPLITS}
    payload = {**info, "corpus": "espeak-speech", "utterances": counts, "hours": hours, "data_hash": speech_hash(tmp)}
    (tmp / "corpus.json").write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def build_speech(
    out: Path,
    root: Path = Path("/"),
    train: int = 6000,
    dev: int = 300,
    test: int = 300,
    workers: int = 2,
    max_words: int = MAX_WORDS,
) -> str:
    """Write the speech corpus to the folder ``out`` (see the module docstring); returns its data hash.

    ``train`` / ``dev`` / ``test`` are utterance counts; ``root`` is where the Debian text packages are installed;
    ``max_words`` (at most :data:`MAX_WORDS`) keeps only sentences that short, in the same ranking.
    """
    if not MIN_WORDS <= max_words <= MAX_WORDS:
        raise HarnessError(f"espeak-speech: max_words {max_words} is outside {MIN_WORDS}..{MAX_WORDS}")
    espeak_path()  # fail before reading anything
    utterances = plan(collect(Path(root)), {"train": train, "dev": dev, "test": test}, max_words)
    params = {"builder": "tasks.debian_corpora.speech", "train": train, "dev": dev, "test": test}
    if max_words != MAX_WORDS:  # the full-length corpus keeps the parameters it was built with
        params["max_words"] = max_words
    info = {"builder": params, "packages": package_versions(Path("/"), ["espeak-ng"])}
    atomic_fixture(Path(out), params, lambda tmp: _write_speech(tmp, utterances, workers, info))
    return speech_hash(out)
