"""SpecAugment (Park et al., Interspeech 2019, arXiv 1904.08779v3) registered as a harness reproduction.

LAS-4-1024, LAS-6-1024 and LAS-6-1280 with the 16k word-piece vocabulary of the LibriSpeech experiments, profiled
at a 10 s utterance (1,000 frames of 80 mel x 3: static, delta, delta-delta) and 32 decoder steps: the length is our
choice, the paper prints no profile.
"""

from harness.registry import InputSpec, ModelSpec, Reproduction

FRAMES, STEPS, VOCAB = 1000, 32, 16384
VARIANT_IDS = ("las-4-1024", "las-6-1024", "las-6-1280")
CHAR_VOCAB = 31  # reproductions.specaugment.system.VOCAB_SIZE: <unk>, <s>, </s>, space, A-Z, apostrophe


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


REPRODUCTION = Reproduction(
    id="specaugment",
    title="SpecAugment: A Simple Data Augmentation Method for Automatic Speech Recognition",
    arxiv="1904.08779v3",
    package="reproductions.specaugment",
    tasks=("librispeech", "espeak-speech"),
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
    + (BUDGET_MODEL,),
)
