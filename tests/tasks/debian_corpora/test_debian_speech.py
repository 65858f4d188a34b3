"""The espeak-ng speech corpus in LibriSpeech's layout, read by tasks.librispeech unchanged (tasks.debian_corpora.speech)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.debian_corpora import speech
from tasks.librispeech.data import LibriSpeechDataModule
from tasks.librispeech.score import read_split, score, write_transcripts

SIZES = {"train": 12, "dev": 4, "test": 4}


@pytest.fixture(scope="module")
def spoken(debian_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    out = tmp_path_factory.mktemp("speech") / "espeak-speech"
    speech.build_speech(out, debian_tree, workers=2, **SIZES)
    return out


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("The well-known dog's bone, said he.", "THE WELL KNOWN DOG'S BONE SAID HE"),
        ('"Hail, holy Ass!" the angels sing;', "HAIL HOLY ASS THE ANGELS SING"),
        ("Too short.", None),
        ("It cost 5 dollars in all.", None),  # digits
        ("The NASA rocket flew very high.", None),  # an acronym espeak-ng would spell
        ("A (bracketed) remark is not read.", None),
        ("Bitter herbs, e.g. rue and sage.", None),  # single letters: an abbreviation
        ("A kind of oak; cf. the beech tree.", None),  # no vowel: an abbreviation
        ("O happy day, I said to a friend.", "O HAPPY DAY I SAID TO A FRIEND"),
    ],
)
def test_transcripts_follow_librispeech_conventions(sentence: str, expected: str | None) -> None:
    assert speech.transcript(sentence) == expected


def test_voices_are_held_out_for_dev_and_test() -> None:
    speakers = speech.speakers()
    assert len(speakers) == 8 * 12 * 4 and len({s.id for s in speakers}) == len(speakers)
    voices = {split: {s.voice for s in speakers if s.split == split} for split in ("train", "dev", "test")}
    assert [len(v) for v in voices.values()] == [72, 12, 12]
    assert not voices["train"] & voices["test"] and not voices["train"] & voices["dev"]
    train = [s for s in speakers if s.split == "train"]
    assert {s.accent for s in train} == set(speech.ACCENTS) and {s.variant for s in train} == set(speech.VARIANTS)


def test_librispeech_module_reads_it_unchanged(spoken: Path) -> None:
    module = LibriSpeechDataModule(spoken, train_splits="train", val_splits="dev", test_splits="test",
                                   batch_size=4, verify_audio=-1)  # fmt: skip
    module.setup()
    assert [len(module.utterances(split)) for split in SIZES] == list(SIZES.values())
    batch = next(iter(module.train_dataloader()))
    assert batch.inputs.shape[0] == 4 and batch.inputs.shape[2] == 80
    assert all(text == text.upper() and text.replace("'", "").replace(" ", "").isalpha() for text in batch.transcripts)
    speaker_split = {line.split("|")[0].strip(): line.split("|")[2].strip()
                     for line in (spoken / "SPEAKERS.TXT").read_text().splitlines()[1:]}  # fmt: skip
    for split in SIZES:
        assert {u.id.split("-")[0] for u in module.utterances(split)} <= {
            k for k, v in speaker_split.items() if v == split
        }


def test_scored_by_the_librispeech_scorer(spoken: Path, tmp_path: Path) -> None:
    references = read_split(spoken / "test")
    predictions = write_transcripts(tmp_path / "p.txt", ((u, line.text) for u, line in references.items()))
    result = score(spoken / "test", predictions)
    assert result["wer"] == 0.0 and result["utterances"] == SIZES["test"]


def test_building_twice_gives_the_same_hash(spoken: Path, debian_tree: Path, tmp_path: Path) -> None:
    recorded = json.loads((spoken / "corpus.json").read_text())
    assert recorded["data_hash"] == speech.speech_hash(spoken)
    assert sum(recorded["utterances"].values()) == sum(SIZES.values()) and recorded["hours"]["train"] > 0
    again = speech.build_speech(tmp_path / "again", debian_tree, workers=1, **SIZES)
    assert again == recorded["data_hash"]


def test_max_words_keeps_the_ranking_of_the_short_sentences(debian_tree: Path) -> None:
    """``max_words`` takes the same ranked candidates, those short enough, in the same order; the default corpus's
    parameters (and so its identity) do not name it."""
    from tasks.debian_corpora.corpus import collect

    kept = collect(debian_tree)
    full, short = speech.plan(kept, SIZES), speech.plan(kept, SIZES, max_words=7)
    for split in SIZES:
        ranked = [w for _, w in speech.sentences(kept, speech.SPLITS[split]) if len(w.split()) <= 7]
        assert [u.transcript for u in short if u.speaker.split == split] == ranked[: SIZES[split]]
    assert max(len(u.transcript.split()) for u in full) > 7  # the tiny tree has sentences of 4-15 words
    with pytest.raises(HarnessError, match="max_words 3 is outside 4..20"):
        speech.build_speech(Path("unused"), debian_tree, max_words=3)
