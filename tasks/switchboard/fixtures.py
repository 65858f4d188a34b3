"""A tiny Hub5'00 copy with speech synthesised by espeak-ng, and a scoring example.

:func:`write_tiny_hub5` writes ``root/hub5e_00/english/{sw_9001,en_9001}.sph`` and
``root/2000_hub5_eng_eval_tr/reference/hub5e00.english.000405.stm``: the layout
:class:`tasks.switchboard.data.Hub5DataModule` reads with ``data_root=root``. Each conversation is two-channel
NIST SPHERE at 8 kHz, as LDC2002S09's are: ``sw_9001`` 16-bit PCM, ``en_9001`` 8-bit µ-law (written by soundfile).
Each side holds its utterances at the STM's times (espeak-ng speech at 16 kHz from
:func:`tasks.librispeech.fixtures.synthesize`, resampled to 8 kHz), silence elsewhere. The STM follows the
hub5e00 file's conventions: a ``;;`` header, speaker ``<file>_<side>``, a label field, upper case, hesitations and
fragments in parentheses, and one ``IGNORE_TIME_SEGMENT_IN_SCORING`` segment. The file names are
placeholders (``sw_`` and ``en_`` say the subset), not real Hub5'00 conversations.

Writing is atomic and idempotent (``tasks.imagenet.fixtures.atomic_fixture``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tasks.imagenet.fixtures import atomic_fixture
from tasks.librispeech.fixtures import espeak_path, resample, synthesize
from tasks.switchboard.score import write_hypotheses

SAMPLE_RATE = 8_000
DURATION = 8.0  # seconds per conversation
SUBTYPES = {"sw_9001": "PCM_16", "en_9001": "ULAW"}

# (file, side, begin, end, voice, spoken text, STM text): two conversations, both sides, one ignored stretch.
SEGMENTS = (
    ("sw_9001", "A", 0.50, 3.00, "en-us", "uh the cat sat down", "(%HESITATION) THE CAT SAT DOWN"),
    ("sw_9001", "B", 3.50, 6.00, "en-gb", "it is a fine day", "IT IS A FINE DAY"),
    ("sw_9001", "A", 6.20, 7.80, "en-us", "hello", "IGNORE_TIME_SEGMENT_IN_SCORING"),
    ("en_9001", "A", 0.50, 3.50, "en-us", "we went to the store", "WE WENT (TO-) TO THE STORE"),
    ("en_9001", "B", 4.00, 7.00, "en-gb", "yeah that is right", "YEAH THAT'S RIGHT"),
)
STM_HEADER = ';; CATEGORY "0" "" ""\n;; LABEL "O" "Overall" "The Overall Set"\n'


def stm_text() -> str:
    lines = [f"{f} {c} {f}_{c} {b:.2f} {e:.2f} <O,{f[:2]}> {text}\n" for f, c, b, e, _, _, text in SEGMENTS]
    return STM_HEADER + "".join(lines)


def _conversation(file: str) -> np.ndarray:
    """(samples, 2) float: each side's utterances placed at their STM times."""
    audio = np.zeros((round(DURATION * SAMPLE_RATE), 2))
    for name, side, begin, end, voice, spoken, _ in SEGMENTS:
        if name != file:
            continue
        speech = resample(synthesize(spoken, voice), 16_000, SAMPLE_RATE)[: round((end - begin) * SAMPLE_RATE)]
        start = round(begin * SAMPLE_RATE)
        audio[start : start + len(speech), "AB".index(side)] = speech
    return np.clip(audio, -1.0, 1.0)


def _build(root: Path) -> None:
    import soundfile

    english = root / "hub5e_00" / "english"
    english.mkdir(parents=True)
    for file, subtype in SUBTYPES.items():
        soundfile.write(english / f"{file}.sph", _conversation(file), SAMPLE_RATE, format="NIST", subtype=subtype)
    reference = root / "2000_hub5_eng_eval_tr" / "reference"
    reference.mkdir(parents=True)
    (reference / "hub5e00.english.000405.stm").write_text(stm_text(), encoding="utf-8")


def write_tiny_hub5(root: Path) -> Path:
    """Two synthesised two-channel conversations (one ``swb``, one ``ch``) in the Hub5'00 layout; returns root."""
    espeak_path()  # fail before creating anything
    spec = {"fixture": "tiny-hub5", "segments": [list(s[:4]) for s in SEGMENTS], "subtypes": SUBTYPES}
    return atomic_fixture(Path(root), spec, _build)


# A GLM with one rule for both sides, one for hypotheses only (a section, as en20000405_hub5.glm has), and an
# alternation that is not applied (see tasks.switchboard.score.Glm).
EXAMPLE_GLM = """;; example.glm: rules in NIST's GLM format
* name "example.glm"
* copy_no_hit = 'T'
* case_sensitive = 'F'
THAT'S => [THAT IS] / [ ] __ [ ]
;;  INPUT_DEPENDENT_APPLICATION = "ctm"
GONNA => [GOING TO] / [ ] __ [ ]
HE'S => [{HE IS / HE HAS}] / [ ] __ [ ]
"""

# Predictions: swb A: a hesitation (removed) and one substitution (mat for down); swb B: one deletion (fine);
# ch A: the fragment left out (optional), an insertion (big); ch B: "that's" mapped by the GLM to "that is", as the
# reference is. The ignored segment has no line. N = 5 + 5 + 6 + 4 = 20 (optional words included), S = D = I = 1;
# swb: N = 10, 2 errors; ch: N = 10, 1 error.
EXAMPLE_PREDICTIONS = (
    ("sw_9001-A_000050-000300", "um the cat sat mat"),
    ("sw_9001-B_000350-000600", "it is a day"),
    ("en_9001-A_000050-000350", "we went to the big store"),
    ("en_9001-B_000400-000700", "yeah that's right"),
)


def example(root: Path, task_id: str) -> dict[str, Path]:
    """The fixture's STM (no audio), predictions for it and a GLM: WER 15.0 (swb 20.0, ch 10.0)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    references = root / "hub5e00.english.000405.stm"
    references.write_text(stm_text(), encoding="utf-8")
    glm = root / "example.glm"
    glm.write_text(EXAMPLE_GLM, encoding="utf-8")
    predictions = write_hypotheses(root / "hypotheses.txt", EXAMPLE_PREDICTIONS)
    return {"references": references, "predictions": predictions, "glm": glm}
