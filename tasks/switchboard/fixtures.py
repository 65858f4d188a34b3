"""A tiny Hub5'00 copy and a tiny Switchboard-1 beside it, with speech synthesised by espeak-ng; a scoring example.

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

:func:`write_tiny_switchboard` writes the same Hub5'00 copy and, beside it, two Switchboard-1 conversations in
LDC97S62's and the ms98 transcriptions' layout (``LDC97S62/swb1_d1/data/sw0900{1,2}.sph``,
``swb_ms98_transcriptions/90/900N/sw900N{A,B}-ms98-a-trans.text``): what
:class:`tasks.switchboard.train.SwitchboardDataModule` reads with ``data_root=root``. ``sw09001`` is 16-bit PCM,
``sw09002`` µ-law, both two-channel 8 kHz SPHERE of 10 s. The transcripts use ms98's conventions (``[silence]``,
``[noise]``, ``[laughter-word]``, a partial word ``th[e]-``, a mispronunciation ``[went/gone]``, ``{word}``, an
aside) and hold a segment too short to keep (0.05 s), one ending 0.3 s after its audio (cut at its end), and
three ``uh-huh``; the conversation numbers are placeholders, not real Switchboard-1 conversations.
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


def _conversation(file: str, rows: tuple = SEGMENTS, duration: float = DURATION) -> np.ndarray:
    """(samples, 2) float: each side's utterances placed at their times (rows without speech left silent)."""
    audio = np.zeros((round(duration * SAMPLE_RATE), 2))
    for name, side, begin, end, voice, spoken, _ in rows:
        if name != file or not spoken:
            continue
        speech = resample(synthesize(spoken, voice), 16_000, SAMPLE_RATE)[: round((end - begin) * SAMPLE_RATE)]
        start = round(begin * SAMPLE_RATE)
        audio[start : start + len(speech), "AB".index(side)] = speech
    return np.clip(audio, -1.0, 1.0)


def _build_hub5(root: Path) -> None:
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
    return atomic_fixture(Path(root), spec, _build_hub5)


# Switchboard-1: (conversation, side, begin, end, voice, spoken text, ms98 words); "" speaks nothing.
SWBD1_DURATION = 10.0
SWBD1_SUBTYPES = {"sw09001": "PCM_16", "sw09002": "ULAW"}
SWBD1_LINES = (
    ("sw09001", "A", 0.0, 0.5, "", "", "[silence]"),
    ("sw09001", "A", 0.5, 3.0, "en-us", "uh the cat sat down", "[silence] uh the cat sat down [noise]"),
    ("sw09001", "A", 6.0, 8.5, "en-us", "hello the world", "hello th[e]- world <b_aside> [laughter] <e_aside>"),
    ("sw09001", "A", 9.0, 9.05, "", "", "[noise]"),
    ("sw09001", "B", 3.2, 6.0, "en-gb", "it is a fine day", "it is a [laughter-fine] day"),
    ("sw09001", "B", 7.0, 9.5, "en-gb", "uh huh", "uh-huh"),
    ("sw09002", "A", 0.5, 3.0, "en-us", "we went to the store", "we [went/gone] to the store"),
    ("sw09002", "A", 6.0, 8.0, "en-us", "yuppiedom is fine", "{yuppiedom} is fine"),
    ("sw09002", "B", 3.5, 5.5, "en-gb", "uh huh", "uh-huh"),
    ("sw09002", "B", 8.2, 10.3, "en-gb", "uh huh", "uh-huh"),
)
SWBD1_AUDIO = Path("LDC97S62/swb1_d1/data")


def ms98_path(conversation: str, side: str) -> Path:
    """Where the ms98 transcription of one side lies: ``swb_ms98_transcriptions/NN/NNNN/swNNNN<side>-...``."""
    number = conversation.removeprefix("sw0")
    return Path("swb_ms98_transcriptions") / number[:2] / number / f"sw{number}{side}-ms98-a-trans.text"


def ms98_text(conversation: str, side: str) -> str:
    """One side's transcription file: ``sw<NNNN><side>-ms98-a-<line> <begin> <end> <words>`` lines."""
    rows = [r for r in SWBD1_LINES if r[:2] == (conversation, side)]
    stem = ms98_path(conversation, side).name.removesuffix("-trans.text")
    return "".join(f"{stem}-{i:04d} {b:.6f} {e:.6f} {words}\n" for i, (_, _, b, e, _, _, words) in enumerate(rows, 1))


def _build_swbd1(root: Path) -> None:
    import soundfile

    (root / SWBD1_AUDIO).mkdir(parents=True)
    for file, subtype in SWBD1_SUBTYPES.items():
        audio = _conversation(file, SWBD1_LINES, SWBD1_DURATION)
        soundfile.write(root / SWBD1_AUDIO / f"{file}.sph", audio, SAMPLE_RATE, format="NIST", subtype=subtype)
        for side in "AB":
            path = root / ms98_path(file, side)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ms98_text(file, side), encoding="utf-8")


def _build_switchboard(root: Path) -> None:
    _build_hub5(root)
    _build_swbd1(root)


def write_tiny_switchboard(root: Path) -> Path:
    """Two synthesised Switchboard-1 conversations with their ms98 transcriptions, and the tiny Hub5'00 beside
    them (:func:`write_tiny_hub5`), under one root; returns root."""
    espeak_path()
    spec = {
        "fixture": "tiny-switchboard", "hub5": [list(s[:4]) for s in SEGMENTS], "subtypes": SUBTYPES,
        "swbd1": [[*r[:4], r[6]] for r in SWBD1_LINES], "swbd1_subtypes": SWBD1_SUBTYPES,
    }  # fmt: skip
    return atomic_fixture(Path(root), spec, _build_switchboard)


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
