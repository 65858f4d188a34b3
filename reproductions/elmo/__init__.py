"""ELMo (arXiv 1802.05365v2) registered as a harness reproduction: the released character-CNN biLM
(``elmo-bilm``, 2x4096 LSTMs with 512 projections, 2048 CNN filters, 2 highway layers; profiled at bilm-tf's
training length of 20 tokens, plus ``<S>`` and ``</S>``) and the NER task model with and without ELMo
(``bilstm-crf-elmo``, ``bilstm-crf``). The tasks are the paper's (Table 1's six and lm1b); the other task models and
the budget tier are not built yet (README.md)."""

from harness.registry import InputSpec, ModelSpec, Reproduction

CHARS = 50  # max_characters_per_token


def char_input(tokens: int) -> tuple[InputSpec, ...]:
    """Character ids ``(1, tokens, 50)``, all in [1, 262): every position holds a token."""
    return (InputSpec("chars", (1, tokens, CHARS), "int64", low=1, high=262),)


def test_input(tokens: int = 3) -> tuple[InputSpec, ...]:
    return (InputSpec("chars", (2, tokens, CHARS), "int64", low=1, high=262),)


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
        *(
            ModelSpec(
                id=name,
                build="reproductions.elmo.tagger:tagger",
                kwargs={"elmo": name.endswith("-elmo")},
                inputs=(*char_input(22), InputSpec("words", (1, 20), "int64", low=1, high=2**15)),
                test_inputs=(*test_input(5), InputSpec("words", (2, 3), "int64", low=1, high=2**15)),
                dataset="conll2003-ner",
            )
            for name in ("bilstm-crf", "bilstm-crf-elmo")
        ),
    ),
)
