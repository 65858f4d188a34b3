"""CondConv (arXiv 1904.04971v4) registered as a harness reproduction: EfficientNet-CondConv-B0 (the authors' release),
MobileNetV1, MobileNetV2, MnasNet-A1 and ResNet-50 with CondConv, each beside its static baseline, at 224 px; and the
budget tier's small Fashion-MNIST pair (CondConv against a static net of matched multiply-adds) at 28 px."""

from harness.protocols import Protocol
from harness.registry import ModelSpec, Reproduction
from reproductions.condconv.variants import ALL_VARIANTS, BUDGET_VARIANTS


def _spec(name: str, resolution: int) -> ModelSpec:
    budget = name in BUDGET_VARIANTS
    return ModelSpec(
        id=name,
        build="reproductions.condconv.model:build",
        kwargs={"variant": name, "num_classes": 10} if budget else {"variant": name},
        input_shape=(1, 1 if budget else 3, resolution, resolution),
        test_input_shape=(2, 1, 28, 28) if budget else (2, 3, 32, 32),
        dataset="fashion-mnist" if budget else "imagenet-1k",
    )


REPRODUCTION = Reproduction(
    id="condconv",
    title="CondConv: Conditionally Parameterized Convolutions for Efficient Inference",
    arxiv="1904.04971v4",
    package="reproductions.condconv",
    tasks=("imagenet-1k", "fashion-mnist"),
    models=tuple(_spec(name, row.resolution) for name, row in ALL_VARIANTS.items()),
    # the paper reports these; this reproduction does not build them (their claims stay not-run)
    unbuilt_models=(
        "condconv-mobilenetv1-0.5-v1",
        "condconv-baseline-ssd300-mobilenetv1-1.0",
        "condconv-ssd300-mobilenetv1-1.0",
    ),
    protocols=(
        Protocol(
            "fashion-mnist-test",
            "the budget tier's Fashion-MNIST study: trained on a training subset, scored on the official "
            "10,000-image test set at 28x28 grey",
        ),
    ),
)
