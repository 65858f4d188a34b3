"""Selfie (arXiv 1906.02940) registered as a harness reproduction: ResNet-50 fine-tuned after Selfie pre-training
(``selfie-*``) or trained on the labels alone (``supervised-*``), at 224 px (ImageNet) and 32 px (CIFAR-10,
ImageNet 32x32), plus a narrow ResNet pair for the budget tier. The registered network is the one fine-tuned
(the system adds Selfie's pre-training parts around it)."""

from harness.registry import ModelSpec, Reproduction
from reproductions.selfie.variants import NETWORKS

DATASETS = {224: "imagenet-1k", 32: "cifar-10"}

REPRODUCTION = Reproduction(
    id="selfie",
    title="Selfie: Self-supervised Pretraining for Image Embedding",
    arxiv="1906.02940v3",
    package="reproductions.selfie",
    tasks=("imagenet-1k", "cifar-10", "imagenet-32"),
    models=tuple(
        ModelSpec(
            id=name,
            build="reproductions.selfie.model:finetune_network",
            kwargs={"name": name},
            input_shape=(1, 3, row.image_size, row.image_size),
            test_input_shape=(2, 3, 32, 32),
            dataset=DATASETS[row.image_size],
        )
        for name, row in NETWORKS.items()
    ),
)
