"""A throwaway plugin for the harness's own tests: a tiny MLP on scikit-learn's digits.

It is never registered by this repository; tests make it visible through entry-point metadata
(a ``.dist-info`` folder on ``sys.path``), exactly as an installed third-party distribution would be.
"""

from harness.registry import ModelSpec, Reproduction, Task

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
    ),
)

TOY_TASK = Task(id="toy-digits", title="Toy digits accuracy", score="toy_paper.score:score", keys=("accuracy", "error"))
