"""A throwaway plugin for the harness's own tests: a tiny MLP on scikit-learn's digits.

It is never registered by this repository; tests make it visible through entry-point metadata
(a ``.dist-info`` folder on ``sys.path``), exactly as an installed third-party distribution would be.
"""

from harness.protocols import Protocol
from harness.registry import InputSpec, ModelSpec, Reproduction, Task

REPRODUCTION = Reproduction(
    id="toy-paper",
    title="A Toy Paper About Digits",
    arxiv="2001.00001v2",
    package="toy_paper",
    tasks=("toy-digits",),
    models=(
        ModelSpec(
            id="toy-mlp", build="toy_paper.model:ToyMLP", kwargs={"hidden": 16}, input_shape=(1, 64), dataset="digits"
        ),
        ModelSpec(
            id="toy-mlp-wide",
            build="toy_paper.model:ToyMLP",
            kwargs={"hidden": 64},
            input_shape=(1, 64),
            dataset="digits",
        ),
        ModelSpec(  # two named inputs, passed to forward() as keyword arguments
            id="toy-bow",
            build="toy_paper.text_model:ToyBagOfWords",
            kwargs={"vocab": 100},
            dataset="toy-text",
            inputs=(
                InputSpec("token_ids", (1, 32), "int64", high=100),
                InputSpec("attention_mask", (1, 32), "int64", fill=1),
            ),
            test_inputs=(
                InputSpec("token_ids", (2, 8), "int64", high=100),
                InputSpec("attention_mask", (2, 8), "int64", high=2),
            ),
        ),
    ),
    protocols=(Protocol("toy-holdout", "accuracy on the held-out part of scikit-learn's digits"),),
)

TOY_TASK = Task(
    id="toy-digits",
    title="Toy digits accuracy",
    score="toy_paper.score:score",
    keys=("accuracy", "error"),
    data="toy_paper.system:DigitsData",
    metric="tasks.metrics:accuracy_error_metrics",
    version=1,
)
