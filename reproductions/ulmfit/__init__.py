"""ULMFiT (Howard & Ruder, arXiv 1801.06146v5) registered as a harness reproduction: the AWD-LSTM language model and
the classifier on its encoder, at the paper's size and at the budget tier's (``variants.MODELS``)."""

from harness.protocols import Protocol
from harness.registry import InputSpec, ModelSpec, Reproduction
from reproductions.ulmfit.variants import MODELS, PROFILE_TOKENS


def _spec(model: str) -> ModelSpec:
    kind, _, vocab, _ = MODELS[model]
    ids = InputSpec("input_ids", (1, PROFILE_TOKENS), "int64", low=1, high=vocab)
    test_ids = InputSpec("input_ids", (2, 12), "int64", low=1, high=vocab)
    if kind == "lm":
        inputs, test_inputs = (ids,), (test_ids,)
    else:  # a classifier also takes each document's length
        inputs = (ids, InputSpec("lengths", (1,), "int64", fill=PROFILE_TOKENS))
        test_inputs = (test_ids, InputSpec("lengths", (2,), "int64", low=1, high=13))
    dataset = {"lm": "wikitext-103", "classifier": "imdb"}[kind] if vocab == 60_000 else "fortune-category"
    return ModelSpec(
        id=model,
        build="reproductions.ulmfit.variants:build",
        kwargs={"model": model},
        dataset=dataset,
        inputs=inputs,
        test_inputs=test_inputs,
    )


REPRODUCTION = Reproduction(
    id="ulmfit",
    title="Universal Language Model Fine-tuning for Text Classification",
    arxiv="1801.06146v5",
    package="reproductions.ulmfit",
    tasks=("imdb", "trec-6", "ag-news", "dbpedia", "yelp-2", "yelp-5", "wikitext-103", "debian-lm", "fortune-category"),
    models=tuple(_spec(model) for model in MODELS),
    # the baselines Tables 2 and 3 cite (CoVe, oh-LSTM, virtual adversarial training, TBCNN, LSTM-CNN, char-level
    # CNN, CNN, DPCNN): reported, not built (their claims stay not-run)
    unbuilt_models=("cove", "oh-lstm", "virtual", "tbcnn", "lstm-cnn", "char-cnn", "cnn", "dpcnn"),
    protocols=(
        Protocol(
            "forward model",
            "a classifier fine-tuned from the forward (left-to-right) language model, scored on its own",
        ),
        Protocol(
            "backward model",
            "a classifier fine-tuned from the backward (right-to-left, reversed text) language model, scored on "
            "its own",
        ),
        Protocol(
            "fwd+bwd ensemble",
            "the forward and the backward classifiers' predictions averaged (Tables 2 and 3, the bidirectional model)",
        ),
        Protocol(
            "single forward model",
            "the forward classifier alone where the paper sets it against the bidirectional model (the IMDb "
            "claim's 'single model')",
        ),
    ),
)
