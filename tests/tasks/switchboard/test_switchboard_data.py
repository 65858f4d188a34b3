"""The Hub5'00 data module and its espeak-ng SPHERE fixture (tasks.switchboard.data, .fixtures)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch

from harness.errors import HarnessError
from tasks.switchboard.data import Hub5DataModule, read_segment, read_sphere_info
from tasks.switchboard.fixtures import SEGMENTS, write_tiny_hub5
from tasks.switchboard.metric import Hub5WER
from tasks.switchboard.score import score

STM = Path("2000_hub5_eng_eval_tr/reference/hub5e00.english.000405.stm")
ENGLISH = Path("hub5e_00/english")


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    return write_tiny_hub5(tmp_path_factory.mktemp("hub5") / "hub5")


@pytest.fixture
def copy(tiny_root: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(tiny_root, tmp_path / "copy"))


def test_the_fixture_is_two_channel_8khz_sphere_pcm_and_ulaw(tiny_root: Path) -> None:
    pcm, ulaw = (read_sphere_info(tiny_root / ENGLISH / f"{name}.sph") for name in ("sw_9001", "en_9001"))
    assert (pcm.channels, pcm.sample_rate, pcm.coding, ulaw.coding) == (2, 8000, "pcm", "ulaw")
    assert soundfile.info(str(tiny_root / ENGLISH / "en_9001.sph")).subtype == "ULAW"
    # speech where the STM puts it, on its own side only
    speech = read_segment(tiny_root / ENGLISH / "sw_9001.sph", 0, 4000, 24000)  # side A, 0.5-3.0 s
    other = read_segment(tiny_root / ENGLISH / "sw_9001.sph", 1, 4000, 24000)
    assert np.abs(speech).max() > 0.05 and np.abs(other).max() == 0.0
    assert write_tiny_hub5(tiny_root) == tiny_root  # idempotent


def test_one_batch_per_subset_with_segment_ids(tiny_root: Path) -> None:
    dm = Hub5DataModule(tiny_root, batch_size=4)
    dm.setup("test")
    swb, ch = (next(iter(loader)) for loader in dm.test_dataloader())
    assert swb.ids == ["sw_9001-A_000050-000300", "sw_9001-B_000350-000600"]  # the ignored segment is left out
    assert ch.transcripts == ["WE WENT (TO-) TO THE STORE", "YEAH THAT'S RIGHT"]
    assert swb.inputs.shape[0] == 2 and swb.inputs.shape[2] == 80 and torch.isfinite(swb.inputs).all()
    assert swb.lengths.tolist() == [1 + 20000 // 80, 1 + 20000 // 80]  # 2.5 s at 8 kHz, 10 ms frames
    assert dm.data_hash is not None and len(dm.data_hash) == 64
    waveform = Hub5DataModule(tiny_root, subsets="ch", features="waveform", batch_size=4)
    waveform.setup("test")
    assert next(iter(waveform.test_dataloader()[0])).inputs.shape == (2, 24000)  # 3.0 s, zero-padded to the longest


def test_a_test_loader_keeps_predictions_that_score_to_the_metric(tiny_root: Path, tmp_path: Path) -> None:
    dm = Hub5DataModule(tiny_root, subsets=["swb"], batch_size=1)
    dm.setup("test")
    metric = Hub5WER()
    for batch in dm.test_dataloader()[0]:
        metric.update(["the cat sat"] * len(batch.ids), batch.transcripts, ids=batch.ids)
    scoring = dm.scoring(0, tmp_path)
    assert scoring.references.name == "hub5e00.swb.stm" and "IGNORE_TIME" in scoring.references.read_text()
    written = metric.write_predictions(tmp_path, scoring)
    assert score(scoring.references, written["predictions"]) == metric.counts()


def test_hub5_has_no_training_split(tiny_root: Path) -> None:
    dm = Hub5DataModule(tiny_root)
    with pytest.raises(HarnessError, match="evaluation set"):
        dm.train_dataloader()
    with pytest.raises(HarnessError, match="unknown Hub5'00 subsets"):
        Hub5DataModule(tiny_root, subsets=["rt03"])


def _edit_stm(root: Path, old: str, new: str) -> None:
    path = root / STM
    path.write_text(path.read_text().replace(old, new))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("4.00 7.00", "4.00 9.50"),
            r"hub5e00.english.000405.stm:7: segment en_9001-B_000400-000950 ends at 9.50 s, "
            r"after the end of en_9001.sph \(8.00 s\)",
        ),
        (
            ("en_9001 B en_9001_B", "en_9999 B en_9999_B"),
            r"hub5e00.english.000405.stm:7: segment en_9999-B_000400-000700 "
            r"names en_9999.sph, which is not in",
        ),
    ],
)
def test_stm_lines_that_do_not_match_their_audio(copy: Path, edit: tuple[str, str], message: str) -> None:
    _edit_stm(copy, *edit)
    with pytest.raises(HarnessError, match=message):
        Hub5DataModule(copy).setup("test")


def test_corrupt_truncated_and_shorten_sphere_files(copy: Path) -> None:
    path = copy / ENGLISH / "en_9001.sph"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(HarnessError, match=r"en_9001.sph: truncated: its header declares 64000 samples per channel"):
        Hub5DataModule(copy).setup("test")
    path.write_bytes(b"RIFF" + data[4:])
    with pytest.raises(HarnessError, match=r"en_9001.sph: not a NIST SPHERE file"):
        Hub5DataModule(copy).setup("test")
    path.write_bytes(data.replace(b"end_head", b"end_hxad"))
    with pytest.raises(HarnessError, match=r"en_9001.sph: corrupt SPHERE header \(no end_head"):
        Hub5DataModule(copy).setup("test")
    shortened = data.replace(b"sample_coding -s4 ulaw\n", b"sample_coding -s26 ulaw,embedded-shorten-v2.00\n")
    path.write_bytes(shortened[:1024].rstrip(b"\x00").ljust(1024, b"\x00") + data[1024:])
    with pytest.raises(HarnessError, match=r"en_9001.sph: shorten-compressed SPHERE .* sph2pipe -f sph -p en_9001.sph"):
        Hub5DataModule(copy).setup("test")


def test_a_one_channel_file_cannot_hold_side_b(copy: Path) -> None:
    path = copy / ENGLISH / "en_9001.sph"
    mono, rate = soundfile.read(path, always_2d=True)
    soundfile.write(path, mono[:, 0], rate, format="NIST", subtype="PCM_16")
    with pytest.raises(
        HarnessError, match=r"stm:7: segment en_9001-B_000400-000700 is on side B but en_9001.sph has one"
    ):
        Hub5DataModule(copy).setup("test")


def test_the_segments_table_names_both_subsets() -> None:
    assert {f[:3] for f, *_ in SEGMENTS} == {"sw_", "en_"}
