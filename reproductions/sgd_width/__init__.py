"""The SGD width / noise-scale study (arXiv 1905.03776v1) registered as a harness reproduction that runs its tiers
itself: each tier is a sweep of width x learning rate x batch size (x seeds), see sweep.py."""

from harness.protocols import Protocol
from harness.registry import ModelSpec, Reproduction
from reproductions.sgd_width.variants import FAMILIES, PARAMETERIZATIONS, WIDTHS, model_id

REPRODUCTION = Reproduction(
    id="sgd-width",
    title="The Effect of Network Width on Stochastic Gradient Descent and Generalization: an Empirical Study",
    arxiv="1905.03776v1",
    package="reproductions.sgd_width",
    tasks=("fashion-mnist", "cifar-10"),
    models=tuple(
        ModelSpec(
            id=model_id(family, width, parameterization),
            build="reproductions.sgd_width.model:build",
            kwargs={"family": family, "width": width, "parameterization": parameterization},
            input_shape=(1, 1, 28, 28),
            test_input_shape=(2, 1, 28, 28) if spec.kind == "mlp" else (2, 1, 12, 12),
            dataset="fashion-mnist",
        )
        for family, spec in FAMILIES.items()
        for parameterization in PARAMETERIZATIONS
        for width in WIDTHS
    ),
    runner="reproductions.sgd_width.sweep:run_sweep",
    figures="reproductions.sgd_width.figures:figures",
    metrics=("optimal_noise_scale", "best_accuracy", "max_batch_size"),  # the sweep's summary records
    protocols=(
        Protocol(
            "late-time-test-accuracy",
            "the paper's performance measure (section 1 of v1): test accuracy averaged over the late epochs of "
            "constant-SGD training, then over runs",
        ),
    ),
)
