"""A tiny LibriSpeech split with speech synthesised by espeak-ng, and a scoring example.

:func:`write_tiny_librispeech` writes ``root/<split>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt`` and one
``<speaker>-<chapter>-<utterance>.flac`` per transcript line: the corpus layout (README section 2.1) that
:class:`tasks.librispeech.data.LibriSpeechDataModule` reads with ``data_root=root``. The speech is synthesised by
the Debian package ``espeak-ng`` (called as a program, WAV out at its native 22,050 Hz), resampled to 16 kHz
with ``scipy.signal.resample_poly`` (polyphase, ratio 320/441) and stored as 16-bit FLAC, mono, as LibriSpeech is.
The transcripts follow the corpus's conventions (upper case, A-Z and apostrophe). The speakers and chapters
(``1001``, ``1002``, ...) are placeholders, not real LibriSpeech ids; each speaker has its own espeak-ng voice.

Writing is atomic and idempotent (``tasks.imagenet.fixtures``'s marker-file scheme): a complete fixture with the
same parameters is left alone. espeak-ng's output depends on its version, so the audio bytes are stable on one
machine but not across Debian releases; the transcripts are.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from harness.errors import HarnessError
from tasks.imagenet.fixtures import atomic_fixture
from tasks.librispeech.score import write_transcripts

SAMPLE_RATE = 16_000
ESPEAK = "espeak-ng"

# (utterance id, espeak-ng voice, transcript): two speakers, three short utterances.
UTTERANCES = (
    ("1001-2001-0000", "en-us", "THE CAT SAT ON THE MAT"),
    ("1001-2001-0001", "en-us", "IT IS A FINE DAY"),
    ("1002-2002-0000", "en-gb", "HELLO WORLD"),
)


def espeak_path() -> str:
    """The espeak-ng program, or a :class:`HarnessError` saying how to get it."""
    found = shutil.which(ESPEAK)
    if found is None:
        raise HarnessError(
            f"{ESPEAK} not found on PATH; the LibriSpeech fixtures synthesise speech with it: install the Debian "
            f"package (apt-get install espeak-ng; setup.sh installs it)"
        )
    return found


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Polyphase resampling by the reduced ratio ``rate_out / rate_in``."""
    from scipy.signal import resample_poly

    common = math.gcd(rate_in, rate_out)
    return resample_poly(samples, rate_out // common, rate_in // common)


def synthesize(text: str, voice: str = "en-us") -> np.ndarray:
    """espeak-ng speech of ``text`` as float samples in [-1, 1] at 16 kHz."""
    import soundfile

    program = espeak_path()
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        try:
            subprocess.run([program, "-v", voice, "-w", str(wav), text], check=True, capture_output=True, timeout=60)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            detail = (getattr(exc, "stderr", b"") or b"").decode(errors="replace").strip() or exc
            raise HarnessError(f"{ESPEAK} failed on {text!r}: {detail}") from None
        samples, rate = soundfile.read(wav, dtype="float64", always_2d=True)
    return np.clip(resample(samples[:, 0], rate, SAMPLE_RATE), -1.0, 1.0)


def _build(root: Path, split: str) -> None:
    import soundfile

    chapters: dict[str, list[tuple[str, str]]] = {}
    for utterance, voice, text in UTTERANCES:
        speaker, chapter, _ = utterance.split("-")
        folder = root / split / speaker / chapter
        folder.mkdir(parents=True, exist_ok=True)
        speech = synthesize(text, voice)
        soundfile.write(folder / f"{utterance}.flac", speech, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
        chapters.setdefault(f"{speaker}-{chapter}", []).append((utterance, text))
    for name, lines in chapters.items():
        speaker, chapter = name.split("-")
        write_transcripts(root / split / speaker / chapter / f"{name}.trans.txt", lines)


def write_tiny_librispeech(root: Path, split: str = "dev-clean") -> Path:
    """Three synthesised utterances of two speakers as ``root/<split>/...`` in the corpus layout; returns root."""
    espeak_path()  # fail before creating anything
    spec = {"fixture": "tiny-librispeech", "split": split, "utterances": [u[0] for u in UTTERANCES]}
    return atomic_fixture(Path(root), spec, lambda tmp: _build(tmp, split))


# Predictions for the scoring example: one substitution (A for THE), one deletion (A), one insertion (BIG);
# lower case and a double space, which normalisation absorbs. 13 reference words, so WER = 300 / 13.
EXAMPLE_PREDICTIONS = (
    ("1001-2001-0000", "the cat sat on a mat"),
    ("1001-2001-0001", "IT IS FINE DAY"),
    ("1002-2002-0000", "HELLO  BIG WORLD"),
)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """A transcript reference file and predictions for :data:`UTTERANCES` (no audio): S=1, D=1, I=1, N=13."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    references = write_transcripts(root / "references.trans.txt", ((u, text) for u, _, text in UTTERANCES))
    predictions = root / "predictions.txt"
    predictions.write_text("".join(f"{u} {text}\n" for u, text in EXAMPLE_PREDICTIONS), encoding="utf-8")
    return {"references": references, "predictions": predictions}
