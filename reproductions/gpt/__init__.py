"""OpenAI GPT (Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training"; no arXiv id)
registered as a harness reproduction: GPT as released (profiled at its 512 positions), its Table 5 ablation ids
(the LSTM baseline among them), Figure 2's ids (``gpt-transfer-K``: K blocks transferred; ``gpt-updates-N``: the LM
after N pre-training updates, judged zero-shot), and the budget tier's small GPT (pre-trained on ``debian-lm``,
fine-tuned on few-label ``wordnet-lexname``)."""

from harness.protocols import Protocol
from harness.registry import InputSpec, ModelSpec, Reproduction
from reproductions.gpt.variants import VARIANTS

URL = "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf"
# (vocabulary, positions) of model.SIZES
SIZES = {"gpt": (40478, 512), "gpt-budget": (4000, 64), "gpt-lstm": (40478, 512)}
N_SPECIAL = 3


def _inputs(vocab: int, length: int) -> tuple[InputSpec, ...]:
    return (
        InputSpec("input_ids", (1, length), "int64", high=vocab),
        InputSpec("attention_mask", (1, length), "int64", fill=1),
    )


def _spec(name: str) -> ModelSpec:
    row = VARIANTS[name]
    vocab, positions = SIZES[row.size]
    vocab += N_SPECIAL if row.task else 0
    build = "reproductions.gpt.model:task_model" if row.task else "reproductions.gpt.model:language_model"
    kwargs = {"size": row.size, "classes": row.classes} if row.task else {"size": row.size}
    return ModelSpec(
        id=name,
        build=build,
        kwargs=kwargs,
        dataset=row.dataset,
        inputs=_inputs(vocab, positions),
        test_inputs=(
            InputSpec("input_ids", (2, 8), "int64", high=vocab),
            InputSpec("attention_mask", (2, 8), "int64", fill=1),
        ),
    )


REPRODUCTION = Reproduction(
    id="gpt",
    title="Improving Language Understanding by Generative Pre-Training",
    url=URL,
    package="reproductions.gpt",
    tasks=(
        "debian-lm",
        "wordnet-lexname",
        "glue-cola",
        "glue-sst2",
        "glue-mrpc",
        "glue-stsb",
        "glue-qqp",
        "glue-mnli-m",
        "glue-mnli-mm",
        "glue-qnli",
        "glue-rte",
        "snli",
        "scitail",
        "race",
        "race-m",
        "race-h",
        "story-cloze",
        "dprd",
    ),  # fmt: skip
    models=tuple(_spec(name) for name in VARIANTS),
    # Table 4/5's GLUE score and Table 5's MNLI column (matched/mismatched mean).
    unbuilt_datasets=("glue", "glue-mnli"),
    metrics=("score", "avg_score", "relative_performance"),  # GLUE's score, Table 5's average, Figure 2 (right)
    protocols=(
        Protocol(
            "zero-shot",
            "Section 5's zero-shot heuristics (reproductions/gpt/zero_shot.py): the language model scores each "
            "task's answers without any fine-tuning",
        ),
    ),
)
