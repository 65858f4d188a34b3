"""The Hub5'00 scorer (tasks.switchboard.score): STM parsing, the Hub-5 normalisation, the GLM, and agreement with
NIST's sclite (Debian package ``sctk``) on cases written for the test."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.switchboard.fixtures import EXAMPLE_GLM, example, stm_text
from tasks.switchboard.metric import Hub5WER
from tasks.switchboard.score import (
    SEGMENT_ID,
    Glm,
    hypothesis_words,
    read_stm,
    reference_words,
    score,
    segment_id,
    write_hypotheses,
)
from tests.conftest import harness_cli

SCTK = Path("/usr/lib/sctk/bin")
needs_sclite = pytest.mark.skipif(not (SCTK / "sclite").is_file(), reason="sctk (NIST sclite) is not installed")
KALDI_HESITATIONS = set("uh um eh mm hm ah huh ha er oof hee ach eee ew".split())


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text, encoding="utf-8")
    return path


def test_the_example_scores_as_its_comment_says(tmp_path: Path) -> None:
    files = example(tmp_path, "switchboard")
    got = score(files["references"], files["predictions"], glm=files["glm"])
    assert got == {"wer": 15.0, "wer_swb": 20.0, "wer_ch": 10.0, "substitutions": 1, "deletions": 1,
                   "insertions": 1, "hits": 18, "words": 20, "segments": 4}  # fmt: skip
    # without the GLM, "that's" stays one word on both sides: one reference word fewer
    assert score(files["references"], files["predictions"])["words"] == 19


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("(%HESITATION) THE CAT", "%hesitation? the cat"),
        ("WE (TO-) TO THE STORE", "we to-? to the store"),
        ("( SHE IS ) OK", "she? is? ok"),  # parentheses around several words: each optional (csrfilt's propagation)
        ("((UH)) YES", "%hesitation? yes"),
        ("UH-HUH RIGHT", "%hesitation? %hesitation? right"),  # split like csrfilt -dh, then both are hesitations
        ("A WELL-KNOWN MAN", "a well known man"),
        ("[noise] HELLO <B_ASIDE> THERE [laughter] <unk>", "hello there"),
        ("UM YOU KNOW BA-", "%hesitation? you know ba-?"),  # unparenthesised hesitation and fragment: optional too
        ("(UNCLOSED WORDS", "unclosed? words?"),
    ],
)
def test_reference_normalisation(text: str, words: str) -> None:
    """``?`` marks an optionally deletable word."""
    assert " ".join(w + "?" * opt for w, opt in reference_words(text)) == words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Uh the CAT um sat", ["the", "cat", "sat"]),
        ("%hesitation i- i think -ing so", ["i", "think", "so"]),
        ("[noise] yeah <unk> [vocalized-noise]", ["yeah"]),
        ("a well-known (man)", ["a", "well", "known", "man"]),
    ],
)
def test_hypothesis_normalisation(text: str, words: list[str]) -> None:
    assert hypothesis_words(text) == words


def test_glm_whole_word_rules_per_side(tmp_path: Path) -> None:
    text = EXAMPLE_GLM.replace("THAT'S", "MULTI WORD => MULTIWORD\nFUNDRAIS => FUND RAIS\nTHAT'S")
    glm = Glm.read(write(tmp_path / "x.glm", text))
    assert glm.reference == {"that's": ("that", "is"), "fundrais": ("fund", "rais")}
    assert glm.hypothesis == {**glm.reference, "gonna": ("going", "to")}  # the "ctm" section is hypotheses' only
    assert glm.skipped == 2  # the alternation and the two-word left side
    assert hypothesis_words("he's gonna go", glm) == ["he's", "going", "to", "go"]
    assert reference_words("GONNA GO", glm) == [("gonna", False), ("go", False)]


def test_a_malformed_glm_rule_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.glm", ";; header\nGOOD => FINE\nthis line has no arrow\n")
    with pytest.raises(HarnessError, match=r"bad.glm:3: not a GLM rule"):
        Glm.read(path)


def test_segment_ids_and_subsets(tmp_path: Path) -> None:
    segments = read_stm(write(tmp_path / "r.stm", stm_text()))
    assert [s.id for s in segments][:2] == ["sw_9001-A_000050-000300", "sw_9001-B_000350-000600"]
    assert [s.ignored for s in segments] == [False, False, True, False, False]
    assert segment_id("en_4156", "A", 357.64, 359.64) == "en_4156-A_035764-035964"  # rounded, not truncated
    assert SEGMENT_ID.fullmatch("sw_4390-B_000098-001156")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("sw_1 A sw_1_A 1.0\n", r"r.stm:2: expected 'FILE CHANNEL SPEAKER BEGIN END"),
        ("sw_1 C sw_1_C 1.0 2.0 <O> HI\n", r"r.stm:2: channel 'C' is not A or B"),
        ("sw_1 A sw_1_A one 2.0 <O> HI\n", r"r.stm:2: begin/end times 'one' '2.0' are not numbers"),
        ("sw_1 A sw_1_A 3.0 2.0 <O> HI\n", r"r.stm:2: segment 3.0-2.0 s is not a positive time span"),
        ("sw_1 A sw_1_A 0.0 1.0 <O> AGAIN\n", r"r.stm:2: segment sw_1-A_000000-000100 repeats line 1"),
    ],
)
def test_bad_stm_lines_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path / "r.stm", "sw_1 A sw_1_A 0.0 1.0 <O> HI\n" + line)
    with pytest.raises(HarnessError, match=message):
        read_stm(path)


def test_bad_predictions(tmp_path: Path) -> None:
    files = example(tmp_path, "switchboard")
    refs = files["references"]
    with pytest.raises(HarnessError, match=r"p.txt:2: segment 'sw_9001-A_000100-000200' is not a segment of"):
        score(refs, write(tmp_path / "p.txt", "sw_9001-A_000050-000300 the cat\nsw_9001-A_000100-000200 x\n"))
    with pytest.raises(HarnessError, match=r"p.txt:1: expected '<file>-<channel>_<begin>-<end> WORDS'"):
        score(refs, write(tmp_path / "p.txt", "utt1 the cat\n"))
    with pytest.raises(HarnessError, match=r"p.txt:2: duplicate segment id"):
        score(refs, write(tmp_path / "p.txt", "sw_9001-A_000050-000300 a\nsw_9001-A_000050-000300 b\n"))
    with pytest.raises(HarnessError, match=r"p.txt:1: not UTF-8 text"):
        score(refs, write(tmp_path / "p.txt", b"sw_9001-A_000050-000300 caf\xe9\n"))
    with pytest.raises(HarnessError, match=r"p.txt: no prediction lines"):
        score(refs, write(tmp_path / "p.txt", "\n"))


def test_a_missing_segment_is_all_deletions_and_an_ignored_one_is_not_scored(tmp_path: Path) -> None:
    files = example(tmp_path, "switchboard")
    lines = "sw_9001-A_000050-000300 the cat sat down\nsw_9001-A_000620-000780 anything at all\n"
    with pytest.warns(UserWarning, match="3 of 4 segments .* have no prediction line"):
        got = score(files["references"], write(tmp_path / "p.txt", lines))
    assert (got["deletions"], got["insertions"], got["words"]) == (5 + 5 + 3, 0, 19)  # the fragment is optional: a hit
    assert got["wer_swb"] == pytest.approx(100 * 5 / 10)


def test_a_subset_absent_from_the_references_is_nan_and_null_in_json(tmp_path: Path) -> None:
    refs = write(tmp_path / "r.stm", "sw_1 A sw_1_A 0.0 1.0 <O> HELLO THERE\n")
    preds = write_hypotheses(tmp_path / "p.txt", [("sw_1-A_000000-000100", "hello")])
    got = score(refs, preds)
    assert got["wer"] == got["wer_swb"] == 50.0 and math.isnan(got["wer_ch"])
    done = harness_cli("score", "switchboard", "--references", str(refs), "--predictions", str(preds), "--json",
                       cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["wer_ch"] is None


def test_the_cli_takes_the_glm_option(tmp_path: Path) -> None:
    files = example(tmp_path, "switchboard")
    args = [
        "score",
        "switchboard",
        "--references",
        str(files["references"]),
        "--predictions",
        str(files["predictions"]),
    ]
    done = harness_cli(*args, "--glm", str(files["glm"]), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["wer"] == 15.0


def test_the_metric_counts_what_the_scorer_counts_per_subset(tmp_path: Path) -> None:
    files = example(tmp_path, "switchboard")
    metric = Hub5WER(glm=files["glm"])
    metric.update(["um the cat sat mat", "yeah that's right"], ["(%HESITATION) THE CAT SAT DOWN", "YEAH THAT'S RIGHT"],
                  ids=["sw_9001-A_000050-000300", "en_9001-B_000400-000700"])  # fmt: skip
    got = metric.counts()
    assert (got["wer_swb"], got["wer_ch"], got["words"]) == (20.0, 0.0, 9)
    assert float(metric.compute()) == pytest.approx(100 / 9)


# --- against sclite ------------------------------------------------------------------------------------------------


def _ctm(predictions: dict[str, str]) -> str:
    """A CTM with each segment's words spread evenly over it, after Kaldi's filter (score_sclite.sh stage 1)."""
    lines = []
    for segment, text in predictions.items():
        match = SEGMENT_ID.fullmatch(segment)
        begin, end, words = int(match["begin"]) / 100, int(match["end"]) / 100, text.upper().split()
        step = (end - begin) / max(1, len(words))
        for i, word in enumerate(words):
            filtered = (
                word.lower() in KALDI_HESITATIONS or word.endswith("-") or word.startswith("[") or word == "<UNK>"
            )
            if not filtered:
                lines.append(f"{match['file']} {match['channel']} {begin + i * step:.2f} {step:.2f} {word}\n")
    return "".join(sorted(lines, key=lambda line: (line.split()[0], line.split()[1], float(line.split()[2]))))


def sclite_counts(tmp: Path, stm: Path, predictions: dict[str, str], glm: Path) -> dict[str, int]:
    """csrfilt.sh (-dh, the GLM) on both sides, then ``sclite -F -D``: hubscr.pl's Hub-5 English pipeline."""
    env = {"PATH": f"{SCTK}:/usr/bin:/bin"}
    ctm = write(tmp / "hyp.ctm", _ctm(predictions))
    lines = stm.read_text().splitlines(keepends=True)  # sorted by file, channel, begin, as hubscr.pl sorts it
    segments = sorted(
        (line for line in lines if not line.startswith(";;")), key=lambda x: (x.split()[:2], float(x.split()[3]))
    )
    stm = write(tmp / "sorted.stm", "".join([line for line in lines if line.startswith(";;")] + segments))
    for src, kind, purpose in ((stm, "stm", "ref"), (ctm, "ctm", "hyp")):
        with open(src) as fin, open(tmp / f"{kind}.filt", "w") as fout:
            subprocess.run([str(SCTK / "csrfilt.sh"), "-i", kind, "-t", purpose, "-dh", str(glm)], stdin=fin,
                           stdout=fout, check=True, env=env)  # fmt: skip
    args = ["-r", str(tmp / "stm.filt"), "stm", "-h", str(tmp / "ctm.filt"), "ctm", "-F", "-D", "-o", "rsum", "stdout"]
    out = subprocess.run([str(SCTK / "sclite"), *args], capture_output=True, text=True, check=True, env=env).stdout
    fields = next(line for line in out.splitlines() if "| Sum " in line).replace("|", " ").split()
    words, corr, sub, dele, ins = (int(x) for x in fields[2:7])
    return {"words": words, "hits": corr, "substitutions": sub, "deletions": dele, "insertions": ins}


CASES_STM = """;; cases written for the comparison with sclite
sw_1 A sw_1_A 0.00 4.00 <O> (%HESITATION) I THINK SO (YOU-) YOU KNOW (MOL-) MOLD
sw_1 A sw_1_A 4.00 8.00 <O> THE (UH-HUH) WELL-KNOWN ( SHE IS ) RIGHT HERE
sw_1 B sw_1_B 0.00 4.00 <O> IGNORE_TIME_SEGMENT_IN_SCORING
sw_1 B sw_1_B 4.00 8.00 <O> THAT'S WHAT GONNA HAPPEN
en_2 A en_2_A 0.00 4.00 <O> WE HAD A (%HESITATION) GOOD TIME
en_2 B en_2_B 0.00 4.00 <O> NO
"""
CASES_PREDICTIONS = {
    "sw_1-A_000000-000400": "um i think so you you know mold mold",
    "sw_1-A_000400-000800": "the well known she right here there",
    "sw_1-B_000400-000800": "that's what going to happen",
    "en_2-A_000000-000400": "we had a good times",
    "en_2-B_000000-000400": "",
}


@needs_sclite
@pytest.mark.parametrize("case", ["example", "cases"])
def test_counts_agree_with_sclite(tmp_path: Path, case: str) -> None:
    if case == "example":
        files = example(tmp_path, "switchboard")
        stm, glm = files["references"], files["glm"]
        predictions = {
            line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in files["predictions"].read_text().splitlines()
        }
    else:
        stm, glm = write(tmp_path / "cases.stm", CASES_STM), write(tmp_path / "cases.glm", EXAMPLE_GLM)
        predictions = CASES_PREDICTIONS
    preds = write_hypotheses(tmp_path / "p.txt", predictions.items())
    ours = score(stm, preds, glm=glm)
    theirs = sclite_counts(tmp_path, stm, predictions, glm)
    assert {key: ours[key] for key in theirs} == theirs
