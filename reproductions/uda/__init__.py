"""UDA (arXiv 1904.12848v6) registered as a harness reproduction: the networks it trains (``uda-<network>``), each
with UDA or on the labels alone (the system's ``objective``): Wide-ResNet-28-2 (CIFAR-10, SVHN), ResNet-50
(ImageNet), BERT base, BERT large and BERT large further pre-trained in-domain (``uda-bert-finetune``), all three
fine-tuned from released weights, and the randomly initialised 6-layer Transformer (text classification), and the
budget tier's two small networks (Fashion-MNIST, WordNet glosses)."""

from harness.registry import InputSpec, ModelSpec, Reproduction
from reproductions.uda.networks import NETWORKS


def _spec(name: str) -> ModelSpec:
    row = NETWORKS[name]
    common = {"id": f"uda-{name}", "build": "reproductions.uda.model:build", "dataset": row.dataset}
    if row.kind not in ("bert", "bow"):
        test_shape = (2, row.input_shape[1], 32, 32) if row.input_shape[-1] > 32 else (2, *row.input_shape[1:])
        return ModelSpec(
            **common, kwargs={"model": common["id"]}, input_shape=row.input_shape, test_input_shape=test_shape
        )
    ids = InputSpec("input_ids", row.input_shape, "int64", low=1, high=1000)
    return ModelSpec(**common, kwargs={"model": common["id"]}, inputs=(ids,),
                     test_inputs=(InputSpec("input_ids", (2, 12), "int64", low=1, high=1000),))  # fmt: skip


REPRODUCTION = Reproduction(
    id="uda",
    title="Unsupervised Data Augmentation for Consistency Training",
    arxiv="1904.12848v6",
    package="reproductions.uda",
    tasks=(
        "cifar-10",
        "svhn",
        "imagenet-1k",
        "imdb",
        "yelp-2",
        "yelp-5",
        "amazon-2",
        "amazon-5",
        "dbpedia",
        "fashion-mnist",
        "wordnet-lexname",
    ),
    models=tuple(_spec(name) for name in NETWORKS),
    # the semi-supervised baselines of Tables 3, 9 and 10 and the pre-BERT results of other papers: reported, not
    # built; their claims stay not-run
    unbuilt_models=(
        "pi-model",
        "mean-teacher",
        "vat",
        "vat-entmin",
        "sntg",
        "ict",
        "pseudo-label",
        "lga-vat",
        "mixmatch",
        "fast-swa",
        "uda-shake-shake",
        "uda-pyramidnet",
        "mean-teacher-shake-shake",
        "mixmatch-wrn-28-135",
        "pre-bert-sota",
    ),  # fmt: skip
)
