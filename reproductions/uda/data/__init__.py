"""Data for UDA (arXiv 1904.12848v6): a few labelled examples, many unlabelled ones with their augmented copies, in
one training batch; the test split for evaluation. One module per data module, beside what they share:

- :mod:`~reproductions.uda.data.batches`: the training batches and the labelled / unlabelled subsets every UDA data
  module shares (:class:`~reproductions.uda.data.batches.UDADataModule`);
- :mod:`~reproductions.uda.data.images`: :class:`ImageUDADataModule` (Fashion-MNIST, CIFAR-10, SVHN, ... with
  RandAugment);
- :mod:`~reproductions.uda.data.text`: :class:`TextUDADataModule` (TF-IDF word replacement, SwitchOut,
  back-translation);
- :mod:`~reproductions.uda.data.imagenet`: :class:`ImageNetUDADataModule` (ILSVRC-2012 streamed from disk);
- :mod:`~reproductions.uda.data.pretrain`: :class:`MaskedLMDataModule` (BERT_FINETUNE's masked-LM stage);
- :mod:`~reproductions.uda.data.domain`: domain-relevance filtering (Section 2.4), a data step.

The configs name the data modules and the budget tier's ``prepare`` here (``reproductions.uda.data:...``).
"""

from reproductions.uda.data.batches import read_ids, write_ids
from reproductions.uda.data.domain import (
    class_probabilities,
    domain_relevance_filter,
    filter_image_folder,
    streaming_domain_relevance,
)
from reproductions.uda.data.imagenet import ImageNetUDADataModule
from reproductions.uda.data.images import ImageUDADataModule
from reproductions.uda.data.pretrain import MaskedLMDataModule
from reproductions.uda.data.text import TextUDADataModule
from tasks.debian_corpora.data import prepare_corpus as prepare_debian_corpus

__all__ = [
    "ImageNetUDADataModule",
    "ImageUDADataModule",
    "MaskedLMDataModule",
    "TextUDADataModule",
    "class_probabilities",
    "domain_relevance_filter",
    "filter_image_folder",
    "prepare_debian_corpus",
    "read_ids",
    "streaming_domain_relevance",
    "write_ids",
]
