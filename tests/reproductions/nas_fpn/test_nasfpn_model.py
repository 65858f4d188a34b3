"""NAS-FPN: the cell graph, merging ops, RetinaNet anchors / matching / focal loss / NMS, shapes and counts."""

from __future__ import annotations

import pytest
import torch

from nets.retinanet import (
    FPN,
    MAX_LEVEL,
    MIN_LEVEL,
    generate_anchors,
)
from reproductions.nas_fpn.model import NASFPN, NASFPNCell, Resample, build, check_block_specs, global_attention
from reproductions.nas_fpn.variants import DETECTORS, NASFPN_BLOCK_SPECS

# Our counts of the registered detectors (params; multiply-adds at the detector's input size, batch 1).
GOLDEN_PARAMS = {
    "retinanet-r50-fpn-640": 34_091_159,
    "nasfpn-r50-7x256-640": 60_078_743,
    "nasfpnlite-mobilenetv2-3x48-320": 2_421_239,
    "nasfpnlite-mobilenetv2-7x64-320": 2_652_631,
}
GOLDEN_MACS = {"retinanet-r50-fpn-640": 96_880_198_400, "nasfpn-r50-7x256-640": 140_261_753_600}


def test_official_block_specs():
    assert NASFPN_BLOCK_SPECS == (
        (4, "attention", (1, 3), False),
        (4, "sum", (1, 5), False),
        (3, "sum", (0, 6), True),
        (4, "sum", (6, 7), True),
        (5, "attention", (7, 8), True),
        (7, "attention", (6, 9), True),
        (6, "attention", (9, 10), True),
    )


def test_cell_graph_is_valid():
    check_block_specs()
    levels = list(range(MIN_LEVEL, MAX_LEVEL + 1))
    for level, _, (a, b), _ in NASFPN_BLOCK_SPECS:
        assert a < len(levels) and b < len(levels)  # every input exists before it is used
        levels.append(level)
    assert sorted(levels[-5:]) == [3, 4, 5, 6, 7]  # the five outputs are P3..P7
    assert levels[-5:] == [level for level, *_, out in NASFPN_BLOCK_SPECS if out]


@pytest.mark.parametrize(
    "specs,match",
    [
        (((4, "sum", (1, 9), True),), "inputs"),
        (((4, "max", (1, 2), True),), "op"),
        (((8, "sum", (1, 2), True),), "level"),
        (((3, "sum", (0, 1), True), (4, "sum", (0, 1), False)), "outputs"),
    ],
)
def test_invalid_cells_are_refused(specs, match):
    with pytest.raises(ValueError, match=match):
        check_block_specs(specs)


def test_global_attention_uses_the_coarse_map_max():
    coarse = torch.tensor([[[[1.0, -2.0], [0.5, 3.0]]]])
    fine = torch.ones(1, 1, 2, 2)
    expected = coarse + torch.sigmoid(torch.tensor(3.0))
    assert torch.allclose(global_attention(coarse, fine), expected)


def test_resample_down_and_up():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    assert torch.equal(Resample(1, 1, 3, 4)(x), torch.tensor([[[[5.0, 7.0], [13.0, 15.0]]]]))  # 2x2 max pool
    up = Resample(1, 1, 4, 3)(torch.tensor([[[[1.0, 2.0]]]]), size=(2, 4))
    assert torch.equal(up, torch.tensor([[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0]]]]))  # nearest neighbour
    assert Resample(8, 4, 3, 3).project is not None and Resample(4, 4, 3, 3).project is None


def test_cell_and_stack_shapes():
    pyramid = [torch.randn(2, 8, 32 // 2**i, 32 // 2**i) for i in range(5)]  # P3..P7 of a 256 px input
    outputs = NASFPNCell(8)(pyramid)
    assert [o.shape for o in outputs] == [p.shape for p in pyramid]
    features = [torch.randn(2, c, 32 // 2**i, 32 // 2**i) for i, c in enumerate((16, 24, 40))]  # C3..C5
    stacked = NASFPN((16, 24, 40), dims=8, repeats=2)(features)
    assert [o.shape[-1] for o in stacked] == [32, 16, 8, 4, 2] and all(o.shape[1] == 8 for o in stacked)
    assert [o.shape[-1] for o in FPN((16, 24, 40), dims=8)(features)] == [32, 16, 8, 4, 2]


def test_sizes_that_are_not_powers_of_two():
    """320 px: P7 is ceil(320 / 128) = 3 wide; upsampling follows the input pyramid's sizes."""
    model = build("nasfpnlite-mobilenetv2-3x48-320").eval()
    with torch.no_grad():
        out = model(torch.randn(1, 3, 320, 320))
    assert out.shape == (1, generate_anchors((320, 320)).shape[0], 91 + 4)


def test_forward_backward_reaches_every_parameter():
    torch.manual_seed(0)
    model = build("nasfpnlite-mobilenetv2-3x48-320").train()
    out = model(torch.randn(2, 3, 128, 128))
    out.pow(2).mean().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


def test_registered_detectors():
    assert DETECTORS["nasfpn-r50-7x256-640"].repeats == 7 and DETECTORS["nasfpn-r50-7x256-640"].dims == 256
    assert {d.image_size for d in DETECTORS.values()} >= {640, 1024, 1280}
    with pytest.raises(ValueError, match="unknown NAS-FPN model"):
        build("nasfpn-r50-9x9")


@pytest.mark.parametrize("name", ["nasfpnlite-mobilenetv2-3x48-320", "nasfpnlite-mobilenetv2-7x64-320"])
def test_params_golden_lite(name):
    assert sum(p.numel() for p in build(name).parameters()) == GOLDEN_PARAMS[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["retinanet-r50-fpn-640", "nasfpn-r50-7x256-640"])
def test_params_and_macs_golden(name):
    from harness.profile import count_macs

    model = build(name).eval()
    assert sum(p.numel() for p in model.parameters()) == GOLDEN_PARAMS[name]
    assert count_macs(model, torch.randn(1, 3, 640, 640)) == GOLDEN_MACS[name]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="60.08M counted; the official model zoo prints 60.3M (see README.md)")
def test_params_match_the_official_zoo():
    assert sum(p.numel() for p in build("nasfpn-r50-7x256-640").parameters()) / 1e6 == pytest.approx(60.3, abs=0.05)
