"""Properties of the few-label subset sampler (tasks.imagenet.subsets)."""

from __future__ import annotations

import hashlib
import math
import random
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.imagenet.subsets import (
    STANDARD_PERCENTS,
    read_subset,
    sample_subset,
    subset_hash,
    subset_size,
    write_subset,
)

# Uneven classes, as in ImageNet (732..1300 images per class).
SIZES = {"n01440764": 1300, "n01443537": 732, "n01484850": 7, "n01491361": 1}
ITEMS = [(f"{wnid}/{wnid}_{i}.JPEG", wnid) for wnid, n in SIZES.items() for i in range(n)]


def per_class(items: list[tuple[str, str]]) -> dict[str, int]:
    counts = dict.fromkeys(SIZES, 0)
    for _, wnid in items:
        counts[wnid] += 1
    return counts


@pytest.mark.parametrize(
    ("n", "percent", "expected"),
    [
        (1300, 10, 130),
        (1300, 7, 91),  # exact, where floating point gives 0.07 * 1300 = 91.00000000000001 and ceil 92
        (1000, 1.1, 11),  # 0.011 * 1000 = 11.000000000000002 in floating point
        (1300, 10.0, 130),
        (732, 10, 74),  # 73.2 rounds up
        (732, 5, 37),  # 36.6
        (7, 10, 1),  # 0.7: at least one
        (1, 5, 1),
        (7, 50, 4),  # 3.5
        (7, 100, 7),
        (3, 0.1, 1),
        (1000, 33.3, 333),
        (0, 10, 0),
    ],
)
def test_subset_size_rounds_up_exactly(n: int, percent: float, expected: int) -> None:
    assert subset_size(n, percent) == expected


@pytest.mark.parametrize("percent", [0, -5, 100.5, float("nan"), float("inf")])
def test_bad_percent_raises(percent: float) -> None:
    with pytest.raises(HarnessError, match="subset percent must be in"):
        sample_subset(ITEMS, percent)


@pytest.mark.parametrize("percent", STANDARD_PERCENTS + (12.5,))
def test_per_class_balance(percent: float) -> None:
    kept = sample_subset(ITEMS, percent, seed=0)
    assert per_class(kept) == {wnid: subset_size(n, percent) for wnid, n in SIZES.items()}
    assert kept == sorted(kept)
    assert set(kept) <= set(ITEMS)


def test_full_percent_keeps_everything() -> None:
    assert sample_subset(ITEMS, 100) == sorted(ITEMS)


def test_deterministic_and_independent_of_input_order() -> None:
    shuffled = list(ITEMS)
    random.Random(1).shuffle(shuffled)
    assert sample_subset(shuffled, 10, seed=3) == sample_subset(ITEMS, 10, seed=3)
    assert subset_hash(sample_subset(shuffled, 10, seed=3)) == subset_hash(sample_subset(ITEMS, 10, seed=3))


def test_seed_changes_the_subset() -> None:
    assert sample_subset(ITEMS, 10, seed=0) != sample_subset(ITEMS, 10, seed=1)


def test_golden_first_items() -> None:
    """Pins the ranking rule, sha256(f"{seed}:{path}"), so it cannot change by accident."""
    paths = [path for path, wnid in ITEMS if wnid == "n01484850"]
    expected = min(paths, key=lambda p: hashlib.sha256(f"0:{p}".encode()).digest())
    assert [p for p, w in sample_subset(ITEMS, 5, seed=0) if w == "n01484850"] == [expected]


@pytest.mark.parametrize("seed", [0, 7])
def test_subsets_are_nested(seed: int) -> None:
    subsets = [set(sample_subset(ITEMS, percent, seed)) for percent in (1, 5, 10, 20, 50, 100)]
    for smaller, larger in zip(subsets, subsets[1:], strict=False):
        assert smaller <= larger


def test_duplicate_paths_raise() -> None:
    with pytest.raises(HarnessError, match="twice"):
        sample_subset([("a/x.JPEG", "a"), ("a/x.JPEG", "a")], 50)


def test_write_read_and_hash(tmp_path: Path) -> None:
    path = tmp_path / "lists" / "imagenet_10pct_seed0.txt"
    digest = write_subset(ITEMS, 10, 0, path)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == subset_hash(sample_subset(ITEMS, 10, 0))
    lines = path.read_text().splitlines()
    assert lines == sorted(lines)
    assert lines[0].rpartition(" ")[2] == lines[0].split("/")[0]  # "<wnid>/<file> <wnid>"
    assert read_subset(path) == sample_subset(ITEMS, 10, 0)
    assert len(lines) == sum(math.ceil(n / 10) for n in SIZES.values())
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_paths_with_spaces_round_trip(tmp_path: Path) -> None:
    items = [("a/my image.jpg", "a"), ("b/x.png", "b")]
    write_subset(items, 100, 0, tmp_path / "list.txt")
    assert read_subset(tmp_path / "list.txt") == items


def test_bad_list_file_names_line(tmp_path: Path) -> None:
    path = tmp_path / "list.txt"
    path.write_text("a/x.JPEG a\nnolabel\n")
    with pytest.raises(HarnessError, match=r"list\.txt:2: expected"):
        read_subset(path)
