"""NAS-FPN: the cell graph, merging ops, RetinaNet anchors / matching / focal loss / NMS, shapes and counts."""

from __future__ import annotations

import math

import pytest
import torch

from nets.retinanet import (
    FPN,
    MAX_LEVEL,
    MIN_LEVEL,
    batched_nms,
    decode_boxes,
    encode_boxes,
    focal_loss,
    generate_anchors,
    match_anchors,
    postprocess,
    retinanet_loss,
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


def test_anchors_follow_the_official_layout():
    anchors = generate_anchors((128, 128))
    per_level = [(128 // 2**level) ** 2 * 9 for level in range(3, 8)]
    assert anchors.shape == (sum(per_level), 4)
    first = anchors[:9]  # P3, location (4, 4): sizes 32 * 2^(s/3), aspect ratios 1, 2, 0.5
    assert torch.allclose(first[0], torch.tensor([-12.0, -12.0, 20.0, 20.0]))
    w, h = first[1, 2] - first[1, 0], first[1, 3] - first[1, 1]
    assert w / h == pytest.approx(2.0) and (w * h).sqrt() == pytest.approx(32.0)
    assert (anchors[3, 2] - anchors[3, 0]).item() == pytest.approx(32 * 2 ** (1 / 3))
    last = anchors[-1]  # P7: one location centred at 64, largest scale, ratio 0.5
    assert ((last[0] + last[2]) / 2).item() == pytest.approx(64.0)


def test_box_coder_roundtrip_and_matching():
    anchors = torch.tensor([[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 40.0, 40.0], [50.0, 50.0, 60.0, 60.0]])
    boxes = torch.tensor([[1.0, 1.0, 11.0, 11.0], [18.0, 22.0, 41.0, 39.0]])
    assert torch.allclose(decode_boxes(encode_boxes(boxes, anchors[:2]), anchors[:2]), boxes, atol=1e-5)
    classes, targets = match_anchors(anchors, boxes, torch.tensor([3, 7]))
    assert classes.tolist() == [3, 7, -1]
    assert torch.allclose(targets[0], encode_boxes(boxes[:1], anchors[:1])[0]) and targets[2].abs().sum() == 0
    crowd_classes, _ = match_anchors(anchors, boxes, torch.tensor([3, 7]), iscrowd=torch.tensor([0, 1]))
    assert crowd_classes.tolist() == [3, -1, -1]


def test_focal_loss_hand_computed():
    # logit 0: p = 0.5; positive: 0.25 * 0.5^1.5 * ln 2; negative: 0.75 * 0.5^1.5 * ln 2.
    assert focal_loss(torch.zeros(1), torch.ones(1)).item() == pytest.approx(0.25 * 0.5**1.5 * math.log(2))
    assert focal_loss(torch.zeros(1), torch.zeros(1)).item() == pytest.approx(0.75 * 0.5**1.5 * math.log(2))
    # logit ln 3: p = 0.75; positive: 0.25 * 0.25^1.5 * -ln 0.75.
    value = focal_loss(torch.tensor([math.log(3.0)]), torch.ones(1)).item()
    assert value == pytest.approx(0.25 * 0.25**1.5 * -math.log(0.75))
    # gamma 0, alpha 0.5 is half the binary cross-entropy
    assert focal_loss(torch.tensor([2.0]), torch.ones(1), alpha=0.5, gamma=0.0).item() == pytest.approx(
        0.5 * math.log(1 + math.exp(-2.0))
    )


def test_retinanet_loss_normalises_by_positives():
    logits = torch.zeros(1, 3, 4)
    boxes = torch.zeros(1, 3, 4)
    targets = torch.tensor([[2, -1, -1]])
    box_targets = torch.tensor([[[0.05, 0.0, 0.0, 0.2], [0, 0, 0, 0], [0, 0, 0, 0]]])
    total, cls, box = retinanet_loss(logits, boxes, targets, box_targets, num_classes=4)
    per = 0.5**1.5 * math.log(2)
    assert cls.item() == pytest.approx((0.25 * per + 11 * 0.75 * per) / 2)  # 1 positive element, 11 negatives
    huber = 0.5 * 0.05**2 + 0.1 * (0.2 - 0.05)
    assert box.item() == pytest.approx(huber / (4 * 2))
    assert total.item() == pytest.approx(cls.item() + 50 * box.item())


def test_nms_and_postprocess():
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [0.0, 0.0, 10.0, 10.0], [50, 50, 60, 60.0]])
    scores = torch.tensor([0.9, 0.8, 0.7, 0.6])
    keep = batched_nms(boxes, scores, torch.tensor([1, 1, 2, 1]), 0.5)
    assert keep.tolist() == [0, 2, 3]  # box 1 overlaps box 0 of its class; box 2 is another class
    anchors = torch.tensor([[0.0, 0.0, 10.0, 10.0], [50.0, 50.0, 60.0, 60.0]])
    logits = torch.full((1, 2, 3), -10.0)
    logits[0, 1, 2] = 5.0
    (det,) = postprocess(logits, torch.zeros(1, 2, 4), anchors)
    assert det["labels"].tolist() == [2] and torch.allclose(det["boxes"], anchors[1:])


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
