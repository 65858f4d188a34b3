"""Golden values, normalisation and bad inputs of the LibriSpeech WER scorer, and the metric's agreement with it."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.librispeech import KEYS, LIBRISPEECH
from tasks.librispeech.fixtures import example
from tasks.librispeech.score import score, word_counts

REFS = "1-2-0000 THE CAT SAT ON THE MAT\n1-2-0001 IT IS A FINE DAY\n3-4-0000 HELLO WORLD\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def split_folder(tmp_path: Path) -> Path:
    """The transcripts of REFS in the corpus layout (no audio: the scorer reads only trans.txt files)."""
    write(tmp_path, "dev/1/2/1-2.trans.txt", "1-2-0000 THE CAT SAT ON THE MAT\n1-2-0001 IT IS A FINE DAY\n")
    write(tmp_path, "dev/3/4/3-4.trans.txt", "3-4-0000 HELLO WORLD\n")
    return tmp_path / "dev"


def test_example_golden_one_substitution_one_deletion_one_insertion(tmp_path: Path) -> None:
    result = score(**example(tmp_path, "librispeech"))
    # THE->A substituted, A deleted, BIG inserted: 3 errors over 6 + 5 + 2 = 13 reference words.
    assert result == {
        "wer": pytest.approx(300 / 13), "substitutions": 1, "deletions": 1, "insertions": 1,
        "hits": 11, "words": 13, "utterances": 3,
    }  # fmt: skip
    assert tuple(result) == KEYS == LIBRISPEECH.keys


def test_wer_is_corpus_level_not_a_mean_of_utterances(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", "1-1-0000 YES\n1-1-0001 ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE\n")
    preds = write(tmp_path, "preds.txt", "1-1-0000 NO\n1-1-0001 ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE\n")
    result = score(refs, preds)
    assert result["wer"] == pytest.approx(10.0)  # 1 error / 10 words; the per-utterance mean would be 50
    assert (result["substitutions"], result["hits"], result["words"]) == (1, 9, 10)


def test_folder_and_file_references_agree(tmp_path: Path) -> None:
    preds = write(tmp_path, "preds.txt", "3-4-0000 HELLO\n1-2-0000 THE CAT SAT ON THE MAT\n1-2-0001 IT IS A FINE DAY\n")
    from_folder = score(split_folder(tmp_path), preds)
    assert from_folder == score(write(tmp_path, "refs.txt", REFS), preds)
    assert from_folder["deletions"] == 1 and from_folder["wer"] == pytest.approx(100 / 13)


def test_case_and_white_space_are_normalised(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", REFS)
    preds = write(
        tmp_path,
        "preds.txt",
        "1-2-0000\tthe Cat  sat on THE mat \r\n  1-2-0001 it is a fine day\n\n3-4-0000 hello world",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = score(refs, preds)
    assert result["wer"] == 0.0 and result["hits"] == 13


def test_missing_predictions_are_all_deletions_with_a_warning(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", REFS)
    preds = write(tmp_path, "preds.txt", "1-2-0001 IT IS A FINE DAY\n")
    with pytest.warns(UserWarning, match=r"2 of 3 utterances .* no prediction line \(first: 1-2-0000\)"):
        result = score(refs, preds)
    assert (result["deletions"], result["words"], result["utterances"]) == (8, 13, 3)
    assert result["wer"] == pytest.approx(800 / 13)


def test_an_id_without_words_is_an_empty_hypothesis(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", "1-2-0000 A B C\n")
    result = score(refs, write(tmp_path, "preds.txt", "1-2-0000\n"))
    assert (result["deletions"], result["wer"]) == (3, 100.0)


def test_insertions_can_push_wer_past_100(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", "1-2-0000 A\n")
    result = score(refs, write(tmp_path, "preds.txt", "1-2-0000 A B C\n"))
    assert (result["insertions"], result["wer"]) == (2, 200.0)


def test_words_outside_the_alphabet_are_scored_as_written_with_a_warning(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", "1-2-0000 HELLO WORLD\n")
    with pytest.warns(UserWarning, match=r"1 predicted words .* outside .* 'WORLD\.' on line 1"):
        result = score(refs, write(tmp_path, "preds.txt", "1-2-0000 hello world.\n"))
    assert result["substitutions"] == 1


@pytest.mark.parametrize(
    ("refs_text", "preds_text", "message"),
    [
        (
            "1-2-0000 A\nTHE CAT\n",
            "1-2-0000 A\n",
            r"refs\.txt:2: expected '<speaker>-<chapter>-<utterance> WORDS', found 'THE CAT'",
        ),
        ("1-2-0000 A\n", "1-2-0000 A\n1-2 B\n", r"preds\.txt:2: expected '<speaker>-<chapter>-<utterance> WORDS'"),
        (
            "1-2-0000 A\n\n1-2-0000 B\n",
            "1-2-0000 A\n",
            r"refs\.txt:3: duplicate utterance id '1-2-0000' \(first on line 1\)",
        ),
        (
            "1-2-0000 A\n",
            "1-2-0000 A\n1-2-0000 B\n",
            r"preds\.txt:2: duplicate utterance id '1-2-0000' \(first on line 1\)",
        ),
        ("1-2-0000\n", "1-2-0000 A\n", r"refs\.txt:1: utterance '1-2-0000' has no transcript"),
        ("1-2-0000 A\n", "1-2-0000 A\n9-9-0009 B\n", r"preds\.txt:2: utterance '9-9-0009' is not in .*refs\.txt"),
        ("1-2-0000 A\n", "\n\n", r"preds\.txt: no prediction lines"),
        ("\n", "1-2-0000 A\n", r"refs\.txt: no transcript lines"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, refs_text: str, preds_text: str, message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        score(write(tmp_path, "refs.txt", refs_text), write(tmp_path, "preds.txt", preds_text))


def test_split_folder_errors_name_the_transcript_file(tmp_path: Path) -> None:
    folder = split_folder(tmp_path)
    preds = write(tmp_path, "preds.txt", "1-2-0000 A\n")
    write(tmp_path, "dev/5/6/5-6.trans.txt", "5-6-0000 FINE\n1-2-0001 STRAY\n")
    with pytest.raises(
        HarnessError, match=r"5-6\.trans\.txt:2: utterance '1-2-0001' does not belong to 5-6\.trans\.txt"
    ):
        score(folder, preds)
    write(tmp_path, "dev/5/6/5-6.trans.txt", "")
    write(tmp_path, "dev/1/7/1-2.trans.txt", "1-2-0000 AGAIN\n")  # a second transcript claiming chapter 1-2
    with pytest.raises(HarnessError, match=r"duplicate utterance id '1-2-0000' \(first in .*1/2/1-2\.trans\.txt:1\)"):
        score(folder, preds)
    with pytest.raises(HarnessError, match=r"empty: no transcript files"):
        score(write(tmp_path, "empty/README", "nothing").parent, preds)


def test_unreadable_files_are_named(tmp_path: Path) -> None:
    refs = write(tmp_path, "refs.txt", REFS)
    with pytest.raises(HarnessError, match=r"nope\.txt: cannot open"):
        score(refs, tmp_path / "nope.txt")
    bad = tmp_path / "preds.txt"
    bad.write_bytes(b"1-2-0000 A\n1-2-0001 \xff\xfe\n")
    with pytest.raises(HarnessError, match=r"preds\.txt:2: not UTF-8 text"):
        score(refs, bad)


def test_word_counts_match_hand_alignment() -> None:
    counts = word_counts(["A B C D", "X Y"], ["a q c e d", "x"])
    # A B C D -> A Q C E D: B->Q substituted, E inserted; X Y -> X: Y deleted.
    assert counts == {"substitutions": 1, "deletions": 1, "insertions": 1, "hits": 4, "words": 6, "utterances": 2}


def test_metric_agrees_with_torchmetrics_and_the_scorer(tmp_path: Path) -> None:
    from torchmetrics.text import WordErrorRate

    from tasks.librispeech.fixtures import EXAMPLE_PREDICTIONS, UTTERANCES
    from tasks.librispeech.metric import LibriSpeechWER

    targets = [text for _, _, text in UTTERANCES] + ["ONE TWO THREE FOUR", "SHE SAID NO"]
    preds = [text for _, text in EXAMPLE_PREDICTIONS] + ["ONE TOO THREE FOUR FIVE", "HE SAID"]
    ours, reference = LibriSpeechWER(), WordErrorRate()
    for start in (0, 2, 4):  # three batches
        ours.update(preds[start : start + 2], targets[start : start + 2])
        reference.update([p.upper() for p in preds[start : start + 2]], targets[start : start + 2])
    assert float(ours.compute()) == pytest.approx(100 * float(reference.compute()))
    ids = [f"7-7-{i:04d}" for i in range(len(targets))]
    refs = write(tmp_path, "refs.txt", "".join(f"{i} {t}\n" for i, t in zip(ids, targets, strict=True)))
    hyps = write(tmp_path, "hyps.txt", "".join(f"{i} {p}\n" for i, p in zip(ids, preds, strict=True)))
    assert ours.counts() == pytest.approx(score(refs, hyps))


def test_harness_score_states_the_normalisation_protocol(tmp_path: Path) -> None:
    import json

    from tasks.librispeech import PROTOCOL
    from tasks.librispeech.fixtures import example
    from tests.conftest import harness_cli

    files = example(tmp_path, "librispeech")
    done = harness_cli(
        "score", "librispeech", "--references", str(files["references"]), "--predictions", str(files["predictions"]),
        "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"scores with protocol '{PROTOCOL}'" in done.stderr
    assert set(json.loads(done.stdout)) == {
        "wer",
        "substitutions",
        "deletions",
        "insertions",
        "hits",
        "words",
        "utterances",
    }
