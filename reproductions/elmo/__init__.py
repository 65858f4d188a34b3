"""ELMo (arXiv 1802.05365v2) registered as a harness reproduction: the released character-CNN biLM
(``elmo-bilm``, 2x4096 LSTMs with 512 projections, 2048 CNN filters, 2 highway layers; profiled at bilm-tf's
training length of 20 tokens, plus ``<S>`` and ``</S>``). The tasks are the paper's (Table 1's six and lm1b); no
task model and no budget tier are built yet (README.md)."""

from harness.registry import InputSpec, ModelSpec, Reproduction

CHARS = 50  # max_characters_per_token


def char_input(tokens: int) -> tuple[InputSpec, ...]:
    """Character ids ``(1, tokens, 50)``, all in [1, 262): every position holds a token."""
    return (InputSpec("chars", (1, tokens, CHARS), "int64", low=1, high=262),)


def test_input() -> tuple[InputSpec, ...]:
    return (InputSpec("chars", (2, 3, CHARS), "int64", low=1, high=262),)


REPRODUCTION = Reproduction(
    id="elmo",
    title="Deep contextualized word representations",
    arxiv="1802.05365v2",
    package="reproductions.elmo",
    tasks=("lm1b", "squad-v1.1", "snli", "srl-conll2012", "coref-conll2012", "conll2003-ner", "sst-5"),
    models=(
        ModelSpec(
            id="elmo-bilm",
            build="reproductions.elmo.model:released_bilm",
            inputs=char_input(22),
            test_inputs=test_input(),
            dataset="lm1b",
        ),
    ),
)
