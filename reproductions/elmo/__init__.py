"""ELMo (arXiv 1802.05365v2) registered as a harness reproduction: the released character-CNN biLM
(``elmo-bilm``, 2x4096 LSTMs with 512 projections, 2048 CNN filters, 2 highway layers; profiled at bilm-tf's
training length of 20 tokens, plus ``<S>`` and ``</S>``) and the small biLM of the budget tier."""

from harness.registry import InputSpec, ModelSpec, Reproduction

CHARS = 50  # max_characters_per_token


def char_input(tokens: int) -> tuple[InputSpec, ...]:
    """Character ids ``(1, tokens, 50)``, all in [1, 262): every position holds a token."""
    return (InputSpec("chars", (1, tokens, CHARS), "int64", low=1, high=262),)


def test_input() -> tuple[InputSpec, ...]:
    return (InputSpec("chars", (2, 5, CHARS), "int64", low=1, high=262),)


REPRODUCTION = Reproduction(
    id="elmo",
    title="Deep contextualized word representations",
    arxiv="1802.05365v2",
    package="reproductions.elmo",
    tasks=("debian-lm", "wordnet-lexname"),
    models=(
        ModelSpec(
            id="elmo-bilm",
            build="reproductions.elmo.model:released_bilm",
            inputs=char_input(22),
            test_inputs=test_input(),
            dataset="lm1b",
        ),
        ModelSpec(
            id="elmo-bilm-budget",
            build="reproductions.elmo.model:budget_bilm",
            inputs=char_input(22),
            test_inputs=test_input(),
            dataset="debian-lm",
        ),
    ),
)
