"""SpecAugment (Park et al., Interspeech 2019, arXiv 1904.08779v3) registered as a harness reproduction.

LAS-4-1024, LAS-6-1024 and LAS-6-1280 with the 16k word-piece vocabulary of the LibriSpeech experiments, profiled
at a 10 s utterance (1,000 frames of 80 mel x 3: static, delta, delta-delta) and 32 decoder steps: the length is our
choice, the paper prints no profile. The budget tier's models are ours: LAS-2-128 over characters and the LSTM LM
of its shallow fusion (``lstm-lm-2-256``, trained on text by its own stage, ``reproductions.specaugment.lm``).
"""

from harness.protocols import Protocol
from harness.registry import InputSpec, ModelSpec, Reproduction

FRAMES, STEPS, VOCAB = 1000, 32, 16384
VARIANT_IDS = ("las-4-1024", "las-6-1024", "las-6-1280")
CHAR_VOCAB = 31  # reproductions.specaugment.vocab.Characters: <unk>, <s>, </s>, space, A-Z, apostrophe


def _inputs(batch: int, frames: int, steps: int, vocab: int = VOCAB) -> tuple[InputSpec, ...]:
    return (
        InputSpec("features", (batch, frames, 80, 3)),
        InputSpec("lengths", (batch,), "int64", fill=frames),
        InputSpec("targets", (batch, steps), "int64", high=vocab),
    )


# The budget tier's LAS-2-128 (ours): characters, profiled at a 3 s espeak-ng utterance and 60 characters.
BUDGET_MODEL = ModelSpec(
    id="las-2-128",
    build="reproductions.specaugment.model:las",
    kwargs={"variant": "las-2-128", "vocab_size": CHAR_VOCAB},
    dataset="espeak-speech",
    inputs=_inputs(1, 300, 60, CHAR_VOCAB),
    test_inputs=_inputs(2, 16, 3, CHAR_VOCAB),
)

# The budget tier's fusion LM (ours; the paper's LM size was not read): 2 x 256 LSTM over characters, trained on the
# Debian text's sentences (reproductions.specaugment.data:prepare_lm_text), profiled at a 60-character sentence.
BUDGET_LM = ModelSpec(
    id="lstm-lm-2-256",
    build="reproductions.specaugment.model:lstm_lm",
    kwargs={"variant": "lstm-lm-2-256", "vocab_size": CHAR_VOCAB},
    dataset="debian-lm",
    inputs=(InputSpec("tokens", (1, 60), "int64", high=CHAR_VOCAB),),
    test_inputs=(InputSpec("tokens", (2, 5), "int64", high=CHAR_VOCAB),),
)


REPRODUCTION = Reproduction(
    id="specaugment",
    title="SpecAugment: A Simple Data Augmentation Method for Automatic Speech Recognition",
    arxiv="1904.08779v3",
    package="reproductions.specaugment",
    tasks=("librispeech", "switchboard", "espeak-speech", "debian-lm"),
    models=tuple(
        ModelSpec(
            id=variant,
            build="reproductions.specaugment.model:las",
            kwargs={"variant": variant, "vocab_size": VOCAB},
            dataset="librispeech",
            inputs=_inputs(1, FRAMES, STEPS),
            test_inputs=_inputs(2, 16, 3),
        )
        for variant in VARIANT_IDS
    )
    + (BUDGET_MODEL, BUDGET_LM),
    protocols=(
        Protocol(
            "specaugment-lm-word-perplexity",
            "the fusion language model's word-level perplexity on held-out transcripts",
        ),
    ),
)
