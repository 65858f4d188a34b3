"""ELMo (arXiv 1802.05365v2) registered as a harness reproduction: the released character-CNN biLM
(``elmo-bilm``, 2x4096 LSTMs with 512 projections, 2048 CNN filters, 2 highway layers; profiled at bilm-tf's
training length of 20 tokens, plus ``<S>`` and ``</S>``) and three task models with and without ELMo: NER's
biLSTM-CRF (``bilstm-crf-elmo``, ``bilstm-crf``; profiled on a 20-word sentence), SNLI's ESIM with Table 2's and 3's
placements (``esim``, ``esim-elmo`` ...; profiled on SNLI's mean lengths, a 14-word premise and an 8-word
hypothesis, Bowman et al. 2015) and SST-5's BCN (``bcn``, ``bcn-elmo``; a 20-word sentence). The tasks are the
paper's (Table 1's six and lm1b) and the budget tier's (``debian-lm``, ``wordnet-lexname``): its small biLM
(``elmo-budget-bilm``) and its task model with ELMo, with the top layer only and without ELMo
(``elmo-budget-task-elmo``, ``-elmo-top``, ``elmo-budget-task``; README.md)."""

from harness.protocols import Protocol
from harness.registry import InputSpec, ModelSpec, Reproduction

CHARS = 50  # max_characters_per_token
BUDGET_TASK_MODELS = ("elmo-budget-task", "elmo-budget-task-elmo", "elmo-budget-task-elmo-top")

# Task models the claims name that are not built here (README.md): <model>-elmo with ELMo, -elmo-top the top layer
# only, -elmo-input / -input-output / -output Table 3's placements; ensembles; other papers' cited systems.
TASK_MODELS = ("bidaf-sa", "deep-srl")
VARIANTS = ("", "-elmo", "-elmo-top", "-elmo-input", "-elmo-input-output", "-elmo-output")
ESIM = tuple(f"esim{v}" for v in VARIANTS)  # built: reproductions/elmo/esim.py
BCN = ("bcn", "bcn-elmo")  # built: reproductions/elmo/bcn.py
CITED = ("cnn-big-lstm", "liu2017-squad", "chen2017-snli", "he2017-srl", "lee2017-coref", "peters2017-ner")
UNBUILT = (
    *(f"{m}{v}" for m in TASK_MODELS for v in VARIANTS),
    *("e2e-coref", "e2e-coref-elmo", "bidaf-sa-elmo-ensemble11", "esim-elmo-ensemble5"),
    *CITED,
    "mccann2017-sst5",
)


def char_input(tokens: int) -> tuple[InputSpec, ...]:
    """Character ids ``(1, tokens, 50)``, all in [1, 262): every position holds a token."""
    return (InputSpec("chars", (1, tokens, CHARS), "int64", low=1, high=262),)


def test_input(tokens: int = 3) -> tuple[InputSpec, ...]:
    return (InputSpec("chars", (2, tokens, CHARS), "int64", low=1, high=262),)


def sentence_input(words: int, batch: int = 1, prefix: str = "") -> tuple[InputSpec, ...]:
    """A task model's sentence: character ids ``(batch, words + 2, 50)`` (``<S>``, words, ``</S>``), word ids."""
    return (
        InputSpec(f"{prefix}chars", (batch, words + 2, CHARS), "int64", low=1, high=262),
        InputSpec(f"{prefix}words", (batch, words), "int64", low=1, high=2**15),
    )


def pair_input(premise: int, hypothesis: int, batch: int = 1) -> tuple[InputSpec, ...]:
    return (*sentence_input(premise, batch, "premise_"), *sentence_input(hypothesis, batch, "hypothesis_"))


REPRODUCTION = Reproduction(
    id="elmo",
    title="Deep contextualized word representations",
    arxiv="1802.05365v2",
    package="reproductions.elmo",
    tasks=(
        "lm1b",
        "squad-v1.1",
        "snli",
        "srl-conll2012",
        "coref-conll2012",
        "conll2003-ner",
        "sst-5",
        "debian-lm",
        "wordnet-lexname",
    ),
    unbuilt_models=UNBUILT,
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
        *(
            ModelSpec(
                id=name,
                build="reproductions.elmo.esim:esim",
                kwargs={"variant": name},
                inputs=pair_input(14, 8),
                test_inputs=pair_input(3, 2, batch=2),
                dataset="snli",
            )
            for name in ESIM
        ),
        *(
            ModelSpec(
                id=name,
                build="reproductions.elmo.bcn:bcn",
                kwargs={"variant": name},
                inputs=sentence_input(20),
                test_inputs=sentence_input(3, batch=2),
                dataset="sst-5",
            )
            for name in BCN
        ),
        ModelSpec(
            id="elmo-budget-bilm",
            build="reproductions.elmo.model:budget_bilm",
            inputs=char_input(22),
            test_inputs=test_input(),
            dataset="debian-lm",
        ),
        *(
            ModelSpec(
                id=name,
                build="reproductions.elmo.classifier:budget_classifier",
                kwargs={"model": name},
                inputs=sentence_input(20),
                test_inputs=sentence_input(3, batch=2),
                dataset="wordnet-lexname",
            )
            for name in BUDGET_TASK_MODELS
        ),
    ),
    protocols=(
        Protocol(
            "bilm-vocab10k-pieces20",
            "the budget biLM's own test: forward and backward perplexities over its 10,000-word softmax on test "
            "pieces of at most 20 tokens framed by <S> and </S> (not debian-lm's word-level perplexity)",
        ),
    ),
)
