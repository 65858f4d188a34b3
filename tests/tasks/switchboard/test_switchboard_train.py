"""Switchboard-1 as s5c prepares it (tasks.switchboard.train) on its espeak-ng fixture (tasks.switchboard.fixtures)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import soundfile

from harness.errors import HarnessError
from tasks.loaders import spread
from tasks.switchboard.fixtures import SWBD1_AUDIO, ms98_path, write_tiny_switchboard
from tasks.switchboard.train import (
    SwitchboardDataModule,
    Utterance,
    map_word,
    normalise,
    remove_duplicates,
    utterance_id,
)

SW1 = SWBD1_AUDIO / "sw09001.sph"
SW1_A = ms98_path("sw09001", "A")
TINY = {"dev_utterances": 2, "max_duplicates": 2, "batch_size": 8, "verify_audio": -1}


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    return write_tiny_switchboard(tmp_path_factory.mktemp("switchboard") / "switchboard")


@pytest.fixture
def copy(tiny_root: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tiny_root, tmp_path / "copy"))


def _module(root: Path, **changes) -> SwitchboardDataModule:
    dm = SwitchboardDataModule(root, **{**TINY, **changes})
    dm.setup("fit")
    return dm


# --- normalisation (swbd1_data_prep.sh, swbd1_map_words.pl) --------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "mapped"),
    [
        ("[laughter-story]", "story"),
        ("[laughter-sto]-", "sto-"),
        ("[LAUGHTER-Story]", "Story"),
        ("[it'n/isn't]", "it'n"),
        ("[ex[specially]-/especially]", "ex-"),
        ("-[an]y", "-y"),
        ("[an]y", "-y"),
        ("ab[solute]-", "ab-"),
        ("ab[solute]", "ab-"),
        ("-[a]b[out]-", "-b-"),
        ("{yuppiedom}", "yuppiedom"),
        ("ammu[n]it-", "ammn-t-"),  # s5c's code, not its comment's ammu-it-
        ("them_1", "them"),
        ("them_1's", "them's"),
        ("a[b]c[d]e", "b-[d]e"),
        ("[noise]", "[noise]"),
        ("[vocalized-noise]", "[vocalized-noise]"),
        ("[laughter]", "[laughter]"),
        ("uh-huh", "uh-huh"),
    ],
)
def test_words_are_mapped_as_s5c_maps_them(word: str, mapped: str) -> None:
    """Each case checked against the output of s5c's swbd1_map_words.pl run on it."""
    assert map_word(word) == mapped


def test_silence_and_asides_are_removed_and_the_rest_lower_cased() -> None:
    words = "[silence] Uh <B_ASIDE> the [laughter-cat] <e_aside> [SILENCE] [silence] sat [noise]".split()
    assert normalise(words) == "uh the cat sat [noise]"
    assert normalise(["[silence]"]) == normalise(["<b_aside>", "[silence]", "<e_aside>"]) == normalise([]) == ""


def test_utterance_ids_are_s5c_s_in_hundredths_rounded_half_up() -> None:
    assert utterance_id("sw02001", "A", 0.975, 11.555) == "sw02001-A_000098-001156"
    assert utterance_id("sw04940", "B", 0.0, 0.004999) == "sw04940-B_000000-000000"


# --- s5c's subsets -------------------------------------------------------------------------------------------------


def _utterances(texts: list[str]) -> list[Utterance]:
    return [Utterance(f"u{i:02d}", text, Path("x.sph"), 0, 0, 800, f"t:{i}") for i, text in enumerate(texts)]


def test_duplicates_are_thinned_by_remove_dup_utts_generator() -> None:
    """k = 32202, 64404, 25459, 57661, 18716 (of 71147) against 3/5: the 1st, 3rd and 5th copies stay; a transcript
    seen fewer than max_count times keeps every copy and draws no number."""
    texts = ["uh-huh", "yeah", "uh-huh", "uh-huh", "yeah", "uh-huh", "uh-huh", "right"]
    kept = remove_duplicates(_utterances(texts), max_count=3)
    assert [u.id for u in kept] == ["u00", "u01", "u03", "u04", "u06", "u07"]
    assert remove_duplicates(_utterances(texts), max_count=6) == _utterances(texts)
    with pytest.raises(HarnessError, match="max_duplicates 1: must be at least 2"):
        remove_duplicates(_utterances(texts), max_count=1)


def test_verify_decodes_segments_spread_over_the_training_split() -> None:
    items = _utterances([str(i) for i in range(10)])
    assert [u.id for u in spread(items, 3)] == ["u01", "u05", "u08"]
    assert spread(items, -1) == spread(items, 20) == items and spread(items, 0) == []


def test_the_fixture_s_splits_follow_s5c(tiny_root: Path) -> None:
    """[silence]-only and 0.05 s segments dropped, the first 2 ids held out, the 2nd of 3 uh-huh's thinned out."""
    dm = _module(tiny_root)
    assert [(u.id, u.transcript) for u in dm.utterances("train_dev")] == [
        ("sw09001-A_000050-000300", "uh the cat sat down [noise]"),
        ("sw09001-A_000600-000850", "hello th- world [laughter]"),
    ]
    nodev = dm.utterances("train_nodev")
    assert [u.transcript for u in nodev] == [
        "it is a fine day", "uh-huh", "we went to the store", "yuppiedom is fine", "uh-huh", "uh-huh",
    ]  # fmt: skip
    assert dm.utterances("train_nodup") == [u for i, u in enumerate(nodev) if i != 4]
    assert dm.utterances("train") == dm.utterances("train_dev") + nodev
    last = nodev[-1]  # 8.20-10.30 s of a 10 s conversation: cut at its end
    assert (last.id, last.begin, last.end, last.channel) == ("sw09002-B_000820-001030", 65600, 80000, 1)
    assert dm.train_splits == ("train_nodup",)
    with pytest.raises(HarnessError, match="unknown Switchboard-1 split 'train_100k'"):
        dm.utterances("train_100k")


def test_batches_train_on_swbd1_validate_on_train_dev_and_test_on_hub5(tiny_root: Path) -> None:
    dm = _module(tiny_root)
    batch = next(iter(dm.train_dataloader()))
    by_id = {u.id: u for u in dm.utterances("train_nodup")}
    assert sorted(batch.ids) == sorted(by_id) and batch.inputs.shape[0] == 5 and batch.inputs.shape[2] == 80
    assert batch.lengths.tolist() == [1 + (by_id[i].end - by_id[i].begin) // 80 for i in batch.ids]
    assert batch.inputs.shape[1] == max(batch.lengths) and batch.transcripts == [by_id[i].transcript for i in batch.ids]
    (val,) = [next(iter(loader)) for loader in dm.val_dataloader()]
    assert val.ids == [u.id for u in dm.utterances("train_dev")]
    swb, ch = (next(iter(loader)) for loader in dm.test_dataloader())
    assert swb.ids == ["sw_9001-A_000050-000300", "sw_9001-B_000350-000600"]
    assert ch.transcripts == ["WE WENT (TO-) TO THE STORE", "YEAH THAT'S RIGHT"]  # the STM's text, for the metric
    assert dm.scoring(1, tiny_root.parent / "kept").references.name == "hub5e00.ch.stm"
    assert dm.task == "switchboard" and dm.glm is None  # the fixture ships no GLM
    waveform = _module(tiny_root, features="waveform")
    assert next(iter(waveform.val_dataloader()[0])).inputs.shape == (2, 20000)  # 2.5 s at 8 kHz


def test_data_hash_names_the_training_transcripts_and_hub5(copy: Path) -> None:
    first = _module(copy).data_hash
    assert first is not None and len(first) == 64 and _module(copy).data_hash == first
    path = copy / ms98_path("sw09002", "A")
    path.write_text(path.read_text().replace("yuppiedom", "yuppie"))
    assert _module(copy).data_hash != first


# --- bad input -----------------------------------------------------------------------------------------------------


def _edit(root: Path, relative: Path, old: str, new: str) -> None:
    path = root / relative
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "0.500000 3.000000 [silence] uh the cat sat down [noise]",
            "0.500000",
            r"sw9001A-ms98-a-trans.text:2: expected '<utt-id> <begin> <end> <words>'",
        ),
        ("sw9001A-ms98-a-0002", "sw9001B-ms98-a-0002", r"trans.text:2: utterance id 'sw9001B-ms98-a-0002' is not one"),
        ("0.500000 3.000000", "0.5OO 3.0", r"trans.text:2: begin/end times '0.5OO' '3.0' are not numbers"),
        ("0.500000 3.000000", "3.000000 0.500000", r"trans.text:2: segment 3.000000-0.500000 s is not a time span"),
        (
            "6.000000 8.500000",
            "6.000000 10.600000",
            r"sw9001A-ms98-a-trans.text:3: segment sw09001-A_000600-001060 ends at 10.60 s, more than 0.5 s after "
            r"the end of sw09001.sph \(10.00 s\)",
        ),
        (
            "6.000000 8.500000",
            "10.200000 10.300000",
            r"trans.text:3: segment sw09001-A_001020-001030 starts at 10.20 s after the end of sw09001.sph "
            r"\(10.00 s\): the transcript",
        ),
        ("6.000000 8.500000", "0.500000 3.000000", r"trans.text:3: utterance sw09001-A_000050-000300 repeats .*:2"),
    ],
)
def test_transcription_lines_that_are_malformed_or_do_not_fit_their_audio(
    copy: Path, old: str, new: str, message: str
) -> None:
    _edit(copy, SW1_A, old, new)
    with pytest.raises(HarnessError, match=message):
        _module(copy)


def test_a_missing_conversation_is_named_or_skipped_when_asked(copy: Path) -> None:
    (copy / SWBD1_AUDIO / "sw09002.sph").unlink()
    with pytest.raises(
        HarnessError, match=r"sw9002A-ms98-a-trans.text:1: sw09002.sph is not under .*skip_conversations"
    ):
        _module(copy)
    dm = _module(copy, skip_conversations=["sw09002"], dev_utterances=1)
    assert {u.id[:7] for u in dm.utterances("train")} == {"sw09001"}


def test_corrupt_truncated_shorten_and_wrong_format_conversations(copy: Path) -> None:
    path = copy / SW1
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(HarnessError, match=r"sw09001.sph: truncated: its header declares 80000 samples per channel"):
        _module(copy)
    path.write_bytes(b"RIFF" + data[4:])
    with pytest.raises(HarnessError, match=r"sw09001.sph: not a NIST SPHERE file"):
        _module(copy)
    shortened = data.replace(b"sample_coding -s3 pcm\n", b"sample_coding -s26 pcm,embedded-shorten-v2.00\n")
    assert shortened != data
    path.write_bytes(shortened[:1024].rstrip(b"\x00").ljust(1024, b"\x00") + data[1024:])
    with pytest.raises(HarnessError, match=r"sw09001.sph: shorten-compressed SPHERE .* sph2pipe -f sph -p sw09001"):
        _module(copy)
    path.write_bytes(data)
    stereo, rate = soundfile.read(path, always_2d=True)
    soundfile.write(path, stereo[:, 0], rate, format="NIST", subtype="PCM_16")
    with pytest.raises(HarnessError, match=r"sw09001.sph: 1 channel\(s\); Switchboard-1 conversations have two"):
        _module(copy)
    soundfile.write(path, stereo, 16000, format="NIST", subtype="PCM_16")
    with pytest.raises(HarnessError, match=r"sw09001.sph: sample rate 16000 Hz; Switchboard-1 is 8000 Hz"):
        _module(copy)


def test_a_conversation_found_twice_or_no_transcriptions(copy: Path) -> None:
    (copy / "extra").mkdir()
    shutil.copy(copy / SW1, copy / "extra" / "SW09001.SPH")
    with pytest.raises(HarnessError, match=r"SW09001.SPH: conversation sw09001 is also .*data/sw09001.sph; keep one"):
        _module(copy)
    shutil.rmtree(copy / "extra")
    shutil.rmtree(copy / "swb_ms98_transcriptions")
    with pytest.raises(HarnessError, match=r"no swb_ms98_transcriptions/ folder"):
        _module(copy)
