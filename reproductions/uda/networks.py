"""UDA's networks as a table (:data:`NETWORKS`), without torch: the registry reads it to list the models, and
loading the registry must not import torch (tests/harness/test_registry.py). :mod:`reproductions.uda.model` builds
them."""

from __future__ import annotations

from typing import NamedTuple


class Network(NamedTuple):
    """One row: how the network is built (``kind`` and its arguments), its input, and the dataset of its claims."""

    kind: str  # "wrn", "resnet", "bert", "bow"
    args: dict
    dataset: str
    input_shape: tuple[int, ...]


NETWORKS: dict[str, Network] = {
    "wrn-28-2": Network("wrn", {"depth": 28, "widen": 2}, "cifar-10", (1, 3, 32, 32)),
    "resnet50": Network("resnet", {"depth": 50}, "imagenet-1k", (1, 3, 224, 224)),
    "bert-base": Network("bert", {"size": "base"}, "imdb", (1, 512)),
    "bert-large": Network("bert", {"size": "large"}, "imdb", (1, 512)),
    # BERT_FINETUNE (Table 4): BERT large further pre-trained on the task's unlabelled text; the same network, its
    # weights another checkpoint (google-research/uda released IMDb's)
    "bert-finetune": Network("bert", {"size": "large"}, "imdb", (1, 512)),
    "transformer-6l": Network("bert", {"size": "random-6l"}, "imdb", (1, 512)),
    # budget tier: a Wide-ResNet-10-1 on grey Fashion-MNIST; on WordNet glosses a 2-layer BERT-style encoder and a
    # bag of word embeddings (the encoder learns nothing from 450 labelled glosses in a budget run: README)
    "budget-wrn-10-1": Network("wrn", {"depth": 10, "widen": 1, "in_channels": 1}, "fashion-mnist", (1, 1, 28, 28)),
    "budget-text": Network("bert", {"size": "budget"}, "wordnet-lexname", (1, 32)),
    "budget-bow": Network("bow", {"vocab": 8192, "dim": 64}, "wordnet-lexname", (1, 32)),
}
