"""Data for UDA (arXiv 1904.12848v6): a few labelled examples, many unlabelled ones with their augmented copies, in
one training batch; the test split for evaluation.

Every training step draws ``batch_size`` labelled examples and ``unlabelled_ratio * batch_size`` unlabelled ones
(the paper: 64 labelled and 448 unlabelled for Wide-ResNet-28-2, 32 and 224 for BERT, 512 and 15,360 for ImageNet
10%; ratio 7, 7 and 30), each list a fresh random permutation walked in order and begun again when used up. A batch
is a dict: ``labelled`` and ``labels``; with unlabelled data also ``original`` (the unlabelled examples with the
labelled data's simple augmentation, the paper's target side) and ``augmented`` (their strongly augmented copies:
RandAugment for images, TF-IDF word replacement, SwitchOut or back-translation for text). The supervised baseline
(``unlabelled_ratio = 0``) gets ``labelled`` and ``labels`` only.

Labelled subsets: ``per_class`` examples of every class, ranked within the class by ``sha256("<label_seed>:<id>")``
(:func:`tasks.debian_corpora.data.per_class_subset`), so the UDA run and its supervised baseline with the same
``label_seed`` see the same labelled set. Unlabelled set: the first ``unlabelled_size`` of a fixed permutation of
the training split (seed 0; labels never read), or the ids a domain-relevance filter kept (``unlabelled_ids``).

Domain-relevance filtering (Section 2.4) is a data step: :func:`class_probabilities` runs a baseline model over
candidate examples, :func:`domain_relevance_filter` keeps, for each class, the examples with the highest
probability of that class, and :func:`write_ids` stores the kept ids for ``unlabelled_ids``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, DistributedSampler, IterableDataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.debian_corpora.data import per_class_subset
from tasks.debian_corpora.data import prepare_corpus as prepare_debian_corpus  # noqa: F401 (the budget configs name it)

UNLABELLED_SEED = 0
IMAGE_AUGMENTS = ("randaugment", "cutout", "crop-flip")
TEXT_AUGMENTS = ("tfidf", "switchout", "backtranslation", "none")


# --- domain-relevance filtering ----------------------------------------------------------------------------------


@torch.no_grad()
def class_probabilities(model: torch.nn.Module, inputs: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Softmax probabilities ``(N, K)`` of ``model`` (in eval mode) on ``inputs`` ``(N, ...)``."""
    model.eval()
    return torch.cat([model(inputs[i : i + batch_size]).float().softmax(-1) for i in range(0, len(inputs), batch_size)])


def domain_relevance_filter(probabilities: torch.Tensor, per_class: int) -> list[int]:
    """Indices kept: for each class, the ``per_class`` examples most probably of that class (sorted, no repeats)."""
    if probabilities.ndim != 2 or per_class < 1:
        raise HarnessError(f"domain-relevance filter: need (N, K) probabilities and per_class >= 1; got "
                           f"{tuple(probabilities.shape)}, {per_class}")  # fmt: skip
    top = probabilities.topk(min(per_class, len(probabilities)), dim=0).indices  # (per_class, K)
    return sorted(set(top.flatten().tolist()))


@torch.no_grad()
def streaming_domain_relevance(model: torch.nn.Module, batches: Iterable[torch.Tensor], per_class: int) -> list[int]:
    """:func:`domain_relevance_filter` over a stream of input batches, the candidates numbered in stream order: each
    class keeps a running top ``per_class`` of (probability, number), so an out-of-domain set of any size (the
    paper's JFT) is never held; ``(per_class, K)`` numbers at most."""
    model.eval()
    device = next(model.parameters()).device
    best_p = best_i = None
    seen = 0
    for inputs in batches:
        p = model(inputs.to(device)).float().softmax(-1).cpu()  # (B, K)
        numbers = torch.arange(seen, seen + len(p))[:, None].expand_as(p)
        seen += len(p)
        if best_p is not None:
            p, numbers = torch.cat([best_p, p]), torch.cat([best_i, numbers])
        top = p.topk(min(per_class, len(p)), dim=0)  # (per_class, K)
        best_p, best_i = top.values, numbers.gather(0, top.indices)
    if best_i is None:
        raise HarnessError("domain-relevance filter: no candidates")
    return sorted(set(best_i.flatten().tolist()))


def filter_image_folder(
    model: torch.nn.Module,
    root: Path,
    per_class: int,
    out: Path,
    image_size: int = 224,
    batch_size: int = 256,
    num_workers: int = 0,
) -> list[str]:
    """Domain-relevance filtering of every image under ``root`` (:func:`list_images`) with a baseline ``model``
    (resized and centre-cropped as ImageNet's evaluation images); writes the kept relative paths to ``out``, the
    ``unlabelled_ids`` file of :class:`ImageNetUDADataModule` with ``unlabelled_root: root``."""
    from tasks.imagenet.transforms import EvalTransform

    paths = list_images(Path(root))
    images = ImagePaths(Path(root), paths, EvalTransform(image_size))
    loader = DataLoader(images, batch_size=batch_size, num_workers=num_workers)
    kept = [paths[i] for i in streaming_domain_relevance(model, loader, per_class)]
    write_ids(kept, out)
    return kept


class ImagePaths(Dataset):
    """``transform(image)`` of each path (relative to ``root``), in order."""

    def __init__(self, root: Path, paths: Sequence[str], transform: Callable[[Image.Image], torch.Tensor]) -> None:
        self.root, self.paths, self.transform = root, np.array([p.encode() for p in paths]), transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> torch.Tensor:
        from tasks.imagenet.data import load_rgb

        return self.transform(load_rgb(self.root / self.paths[index].decode()))


def write_ids(ids: Sequence[Any], path: Path) -> Path:
    """One id per line (the ``unlabelled_ids`` file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return path


def read_ids(path: Path) -> list[str]:
    try:
        ids = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the unlabelled ids: {exc}") from None
    if not ids:
        raise HarnessError(f"{path}: no ids")
    return ids


# --- the batches of one training epoch ------------------------------------------------------------------------------


class Cycle:
    """Endless walk over ``0..n-1`` in fresh random permutations; ``take(k)`` the next ``k`` positions."""

    def __init__(self, n: int, rng: random.Random) -> None:
        self.n, self.rng, self.order = n, rng, []

    def take(self, k: int) -> list[int]:
        out: list[int] = []
        while len(out) < k:
            if not self.order:
                self.order = self.rng.sample(range(self.n), self.n)
            out.append(self.order.pop())
        return out


class UDABatches(IterableDataset):
    """``steps`` batches per epoch from ``labelled(positions)`` and ``unlabelled(positions) -> (original,
    augmented)``; the order is drawn from ``seed`` (a new stream every epoch)."""

    def __init__(self, owner: Any, steps: int, seed: int) -> None:
        self.owner, self.steps, self.seed, self.epoch = owner, steps, seed, 0

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        owner = self.owner
        rng = random.Random(f"{self.seed}:{self.epoch}")
        self.epoch += 1
        labelled, unlabelled = Cycle(owner.num_labelled, rng), Cycle(owner.num_unlabelled, rng)
        size, extra = owner.hparams.batch_size, round(owner.hparams.batch_size * owner.hparams.unlabelled_ratio)
        for _ in range(self.steps):
            inputs, labels = owner.labelled_batch(labelled.take(size), rng)
            batch = {"labelled": inputs, "labels": labels}
            if extra:
                batch["original"], batch["augmented"] = owner.unlabelled_batch(unlabelled.take(extra), rng)
            yield batch


class UDADataModule(pl.LightningDataModule):
    """What the image and text data modules share: the training batches, the test loader and the scoring."""

    task: str
    test_inputs: torch.Tensor
    test_labels: torch.Tensor
    test_ids: list[str]

    num_labelled: int
    num_unlabelled: int

    def labelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def unlabelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def train_dataloader(self) -> DataLoader:
        seed = self.hparams.seed if self.hparams.seed is not None else torch.initial_seed()
        if self.hparams.unlabelled_ratio and not self.num_unlabelled:
            raise HarnessError("unlabelled_ratio > 0 but the unlabelled set is empty")
        return DataLoader(UDABatches(self, self.hparams.steps_per_epoch, seed), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        data = torch.utils.data.TensorDataset(self.test_inputs, self.test_labels)
        return DataLoader(data, batch_size=self.hparams.eval_batch_size, shuffle=False)

    def val_dataloader(self) -> DataLoader:
        return self.test_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """References ``folder/references.csv`` (the test labels, ``id,label``), ids as the task's scorer reads them."""
        references = Path(folder) / "references.csv"
        rows = "".join(f"{i},{int(y)}\n" for i, y in zip(self.test_ids, self.test_labels.tolist(), strict=True))
        references.write_text("id,label\n" + rows, encoding="utf-8")
        return Scoring(self.task, references, list(self.test_ids))


def labelled_positions(labels: Sequence[int], ids: Sequence[str], per_class: int | None, seed: int) -> list[int]:
    """Positions of the labelled subset (``per_class`` per class by the sha256 ranking; ``None``: all)."""
    if per_class is None:
        return list(range(len(labels)))
    kept = {
        item for item, _ in per_class_subset([(i, str(y)) for i, y in zip(ids, labels, strict=True)], per_class, seed)
    }
    return [p for p, i in enumerate(ids) if i in kept]


def unlabelled_positions(ids: Sequence[str], size: int | None, kept_file: str | None) -> list[int]:
    """Positions of the unlabelled set: the ids of ``kept_file``, else a fixed permutation's first ``size``."""
    if kept_file is not None:
        wanted = set(read_ids(Path(kept_file)))
        unknown = wanted - set(ids)
        if unknown:
            raise HarnessError(f"{kept_file}: ids not in the training split, e.g. {sorted(unknown)[:3]}")
        return [p for p, i in enumerate(ids) if i in wanted]
    order = np.random.default_rng(UNLABELLED_SEED).permutation(len(ids))
    return sorted(order[: size if size is not None else len(ids)].tolist())


# --- images ----------------------------------------------------------------------------------------------------------


def load_images(dataset: str, root: str | None, split: str) -> tuple[np.ndarray, np.ndarray]:
    """uint8 ``(N, C, H, W)`` and int64 labels: Fashion-MNIST / MNIST / digits (IDX) or CIFAR-10 / SVHN."""
    if dataset in ("svhn", "cifar-100"):
        from tasks.classification.data import load_split

        arrays = load_split(dataset, Path(root or f"data/{dataset}"), split)
        return arrays.images, arrays.labels.astype(np.int64)
    from tasks.fashion_mnist.data import load_split

    return load_split(dataset, split, root)


def weak_augment(images: torch.Tensor, pad: int, hflip: bool, generator: torch.Generator) -> torch.Tensor:
    """The simple augmentation of labelled and original unlabelled images: a random ``pad``-pixel translation
    (reflection padding, then a random crop back to size) and a horizontal flip with probability 1/2."""
    n, _, h, w = images.shape
    if pad:
        padded = torch.nn.functional.pad(images, (pad, pad, pad, pad), mode="reflect")
        dx, dy = torch.randint(0, 2 * pad + 1, (2, n), generator=generator).tolist()
        images = torch.stack([padded[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(n)])
    if hflip:
        flip = torch.rand(n, generator=generator) < 0.5
        images = torch.where(flip[:, None, None, None], images.flip(-1), images)
    return images


class ImageUDADataModule(UDADataModule):
    """Few-label image classification with RandAugment on the unlabelled copies (Section 2.3, Appendix A.2).

    Args:
        dataset: ``fashion-mnist``, ``mnist``, ``digits``, ``cifar-10``, ``svhn``.
        data_root: the dataset's folder (``None``: its default, e.g. Debian's Fashion-MNIST).
        per_class: labelled training examples per class (``None``: all).
        label_seed: seed of the labelled subset (the same for a UDA run and its baseline).
        unlabelled_size: unlabelled training examples (``None``: the whole training split).
        unlabelled_ids: a file of kept training positions (a domain-relevance filter's output) instead.
        batch_size: labelled examples per step; ``unlabelled_ratio``: unlabelled per labelled example (0: none).
        steps_per_epoch: training steps per epoch.
        augment: the unlabelled copies' augmentation (Table 1): ``randaugment``, ``cutout`` (one 16/32-side gray
            square, always) or ``crop-flip`` (the simple augmentation alone).
        augment_labelled: apply it to the labelled images too (the supervised rows "with RandAugment").
        randaugment_ops, randaugment_magnitude, randaugment_probability: the arguments of
            :class:`tasks.imagenet.randaugment.RandAugment` (UDA's: 2 operations, magnitude drawn from [1, 10),
            probability 0.5).
        pad, hflip: the simple augmentation (``pad``-pixel translation, horizontal flip).
        pool: average ``pool x pool`` pixel blocks after augmenting (2: 28x28 -> 14x14, the budget tier's cheaper
            input), as :func:`tasks.fashion_mnist.data.prepare_tensors` does.
        test_size: test examples kept (``None``: all); seed: order of the batches (``None``: the run's seed).
    """

    def __init__(
        self,
        dataset: str = "fashion-mnist",
        data_root: str | None = None,
        per_class: int | None = 4,
        label_seed: int = 0,
        unlabelled_size: int | None = None,
        unlabelled_ids: str | None = None,
        batch_size: int = 64,
        unlabelled_ratio: float = 7.0,
        steps_per_epoch: int = 100,
        augment: str = "randaugment",
        augment_labelled: bool = False,
        randaugment_ops: int = 2,
        randaugment_magnitude: float | None = None,
        randaugment_probability: float = 0.5,
        pad: int = 2,
        hflip: bool = True,
        pool: int = 1,
        test_size: int | None = None,
        eval_batch_size: int = 500,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if augment not in IMAGE_AUGMENTS:
            raise HarnessError(f"augment must be one of {', '.join(IMAGE_AUGMENTS)}; got {augment!r}")
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in ("train", "test"):
            load_images(self.hparams.dataset, self.hparams.data_root, split)

    @property
    def num_classes(self) -> int:
        return int(self.train_labels.max()) + 1

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.fashion_mnist.data import arrays_hash

        hp = self.hparams
        images, labels = load_images(hp.dataset, hp.data_root, "train")
        ids = [str(i) for i in range(len(labels))]
        self.labelled_at = labelled_positions(labels.tolist(), ids, hp.per_class, hp.label_seed)
        self.unlabelled_at = (
            unlabelled_positions(ids, hp.unlabelled_size, hp.unlabelled_ids) if hp.unlabelled_ratio else []
        )
        self.train_images, self.train_labels = images, labels
        scaled = images[self.unlabelled_at or self.labelled_at].astype(np.float32) / 255
        self.mean = torch.tensor(scaled.mean((0, 2, 3)))[:, None, None]
        self.std = torch.tensor(scaled.std((0, 2, 3)) + 1e-6)[:, None, None]
        test_images, test_labels = load_images(hp.dataset, hp.data_root, "test")
        keep = np.arange(len(test_labels))[: hp.test_size]
        self.test_inputs, self.test_labels = self.normalise(test_images[keep]), torch.from_numpy(test_labels[keep])
        self.test_ids = [str(i) for i in keep]
        self.task = (
            hp.dataset if hp.dataset in ("cifar-10", "svhn", "fashion-mnist") else "fashion-mnist"
        )  # mnist, digits: its format
        self.strong = self._strong_augmentation()
        self.num_labelled, self.num_unlabelled = len(self.labelled_at), len(self.unlabelled_at)
        labelled = np.asarray(self.labelled_at)
        self.data_hash = arrays_hash(
            images[labelled], labels[labelled], np.asarray(self.unlabelled_at), test_labels[keep]
        )

    def _strong_augmentation(self) -> Callable[[Image.Image], Image.Image] | None:
        from tasks.imagenet.randaugment import RandAugment

        hp = self.hparams
        if hp.augment == "randaugment":
            return RandAugment(hp.randaugment_ops, hp.randaugment_magnitude, hp.randaugment_probability)
        if hp.augment == "cutout":
            return RandAugment(1, 10, 1.0, ops=("Cutout",))
        return None

    def _strongly(self, images: np.ndarray, rng: random.Random) -> np.ndarray:
        """uint8 ``(N, C, H, W)`` through the strong augmentation (unchanged for ``crop-flip``)."""
        if self.strong is None:
            return images
        self.strong.rng = rng
        return np.stack([pil_to_array(self.strong(array_to_pil(image))) for image in images])

    def normalise(self, images: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 ``(N, C, H, W)`` -> standardised floats, pooled to ``(N, C, H / pool, W / pool)``."""
        scaled = (torch.as_tensor(images).float() / 255 - self.mean) / self.std
        pool = self.hparams.pool
        return torch.nn.functional.avg_pool2d(scaled, pool) if pool > 1 else scaled

    def _weak(self, images: torch.Tensor, rng: random.Random) -> torch.Tensor:
        generator = torch.Generator().manual_seed(rng.getrandbits(62))
        return weak_augment(images.float(), self.hparams.pad, self.hparams.hflip, generator)

    def labelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = [self.labelled_at[p] for p in positions]
        raw = self.train_images[chosen]
        raw = self._strongly(raw, rng) if self.hparams.augment_labelled else raw
        images = self.normalise(self._weak(torch.from_numpy(raw), rng))
        return images, torch.from_numpy(self.train_labels[chosen])

    def unlabelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        images = self.train_images[[self.unlabelled_at[p] for p in positions]]  # uint8 (N, C, H, W)
        strong = self._strongly(images, rng)
        original, augmented = self._weak(torch.from_numpy(images), rng), self._weak(torch.from_numpy(strong), rng)
        return self.normalise(original), self.normalise(augmented)


def array_to_pil(image: np.ndarray) -> Image.Image:
    """uint8 ``(C, H, W)`` (C = 1 or 3) -> a PIL ``L`` or ``RGB`` image."""
    return Image.fromarray(image[0]) if image.shape[0] == 1 else Image.fromarray(image.transpose(1, 2, 0))


def pil_to_array(img: Image.Image) -> np.ndarray:
    array = np.asarray(img)
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)


# --- text ---------------------------------------------------------------------------------------------------------

PAD, CLS = 0, 1


def hashed_ids(words: Sequence[str], vocab_size: int, max_tokens: int) -> list[int]:
    """``[CLS]`` then each word's id ``3 + crc32(word) mod (vocab_size - 3)`` (ids 0-2: pad, [CLS], [SEP]); a longer
    text keeps its last ``max_tokens - 1`` words, as the paper keeps the last 512 subwords (Appendix E.1)."""
    kept = list(words)[-(max_tokens - 1) :] if max_tokens > 1 else []
    return [CLS] + [3 + zlib.crc32(w.encode()) % (vocab_size - 3) for w in kept]


def pad_ids(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


def read_text_examples(task: str, root: str, split: str) -> list:
    """Examples (``id``, ``text``, ``label``) of a Debian corpus folder (it has ``corpus.json``) or of a text
    classification task (``imdb``, ``dbpedia``, ``yelp-2``, ...) under ``root``."""
    if (Path(root) / "corpus.json").is_file():
        from tasks.debian_corpora.data import read_classification

        return read_classification(Path(root), split)
    from tasks.text_classification.data import read_split

    return read_split(task, Path(root), split)


class TextUDADataModule(UDADataModule):
    """Few-label text classification with TF-IDF word replacement, SwitchOut or back-translation on the unlabelled
    copies.

    Words (:func:`tasks.text_augment.words`) are numbered by hashing (:func:`hashed_ids`, ``vocab_size`` ids), so
    no vocabulary file is needed; or, with ``vocab`` (a released BERT ``vocab.txt``), each raw text is cut into
    WordPieces (:func:`tasks.tokenizers.hf.bert_wordpiece`, ``lowercase`` for the uncased checkpoints) and laid out
    ``[CLS] pieces [SEP]``, a longer text keeping its last ``max_tokens - 2`` pieces (the paper keeps the last 512
    subwords, Appendix E.1); the run's records cite the tokenizer. ``augment``: ``tfidf``
    (:class:`tasks.text_augment.TfidfWordReplacement`, fitted on the unlabelled texts' words, replacement probability
    ``tfidf_p``; with WordPiece the replaced words are joined by spaces, lower-cased), ``switchout``
    (:class:`tasks.text_augment.SwitchOut`: ``n ~ exp(-n / switchout_tau)`` words replaced by words drawn uniformly
    from the vocabulary of the same texts TF-IDF is fitted on; Table 2), ``backtranslation`` (paraphrases read from
    ``paraphrases``, :class:`tasks.text_augment.Paraphrases`) or ``none``; ``augment_labelled`` applies it to the
    labelled texts too (Table 2's supervised rows). The word-level ones act on words, before numbering, so ``[CLS]``,
    ``[SEP]`` and padding are added afterwards: never replaced, never drawn. Other arguments as
    :class:`ImageUDADataModule`'s; ``task`` is the dataset id the test split is scored as.

    Extra unlabelled text (Appendix E.1: "the concatenation of the training set and the unlabeled set for IMDb and
    external data for Yelp-2, Yelp-5, Amazon-2 and Amazon-5", the external data being McAuley et al.'s Amazon
    reviews): ``unlabelled_extra`` names IMDb's ``aclImdb/train/unsup`` folder, a file of Amazon review JSON lines,
    or a file of one text per line (:func:`tasks.text_classification.data.read_unlabelled`; its first
    ``unlabelled_extra_size`` texts), added to the training texts chosen by ``unlabelled_size``
    (``unlabelled_size: 0`` for the external data alone). Their ids, ``unsup/<file stem or line number>``, are
    what a paraphrase file names them by.
    """

    def __init__(
        self,
        task: str = "wordnet-lexname",
        data_root: str = "data/budget/uda-corpora/wordnet-lexname",
        per_class: int | None = 10,
        label_seed: int = 0,
        unlabelled_size: int | None = None,
        unlabelled_ids: str | None = None,
        unlabelled_extra: str | None = None,
        unlabelled_extra_size: int | None = None,
        batch_size: int = 32,
        unlabelled_ratio: float = 7.0,
        steps_per_epoch: int = 100,
        augment: str = "tfidf",
        augment_labelled: bool = False,
        tfidf_p: float = 0.7,
        switchout_tau: float = 1.25,
        paraphrases: str | None = None,
        vocab_size: int = 8192,
        max_tokens: int = 64,
        vocab: str | None = None,
        lowercase: bool = True,
        test_size: int | None = None,
        eval_batch_size: int = 500,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.tokenizer: Any = None
        if augment not in TEXT_AUGMENTS:
            raise HarnessError(f"augment must be one of {', '.join(TEXT_AUGMENTS)}; got {augment!r}")
        if augment == "backtranslation" and not paraphrases:
            raise HarnessError("augment 'backtranslation' reads its paraphrases from a file: set 'paraphrases'")
        if augment == "switchout" and not switchout_tau > 0:
            raise HarnessError(f"switchout_tau (SwitchOut's temperature) must be positive; got {switchout_tau}")
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in ("train", "test"):
            read_text_examples(self.hparams.task, self.hparams.data_root, split)
        if self.hparams.unlabelled_extra is not None:
            from tasks.text_classification.data import read_unlabelled

            read_unlabelled(Path(self.hparams.unlabelled_extra), 1)
        if self.hparams.vocab is not None:
            from tasks.tokenizers.hf import read_vocab

            read_vocab(self.hparams.vocab)

    def _wordpiece(self) -> Any:
        """The tokenizer of ``vocab``, cited in the run's records; [PAD] must be id 0 (the network's padding)."""
        from tasks.tokenizers import register
        from tasks.tokenizers.hf import bert_wordpiece

        hp = self.hparams
        tokenizer = bert_wordpiece(hp.vocab, hp.lowercase)
        if tokenizer.pad_token_id != PAD or tokenizer.vocab_size > hp.vocab_size:
            raise HarnessError(
                f"{hp.vocab}: [PAD] is id {tokenizer.pad_token_id} (must be {PAD}) and {tokenizer.vocab_size} pieces "
                f"(at most vocab_size {hp.vocab_size})"
            )
        register(self, tokenizer)
        return tokenizer

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.text_augment import words

        hp = self.hparams
        self.tokenizer = self._wordpiece() if hp.vocab is not None else None
        train = read_text_examples(hp.task, hp.data_root, "train")
        ids = [e.id for e in train]
        self.labelled_at = labelled_positions([e.label for e in train], ids, hp.per_class, hp.label_seed)
        self.unlabelled_at = (
            unlabelled_positions(ids, hp.unlabelled_size, hp.unlabelled_ids) if hp.unlabelled_ratio else []
        )
        extra = self._extra() if hp.unlabelled_ratio else []
        self.unlabelled_at += range(len(train), len(train) + len(extra))
        self.num_classes = max(e.label for e in train) + 1
        train = train + extra  # positions past the training split: the extra unlabelled texts
        self.train, self.words = train, {p: words(train[p].text) for p in {*self.labelled_at, *self.unlabelled_at}}
        self.augmenter = self._augmenter()
        test = read_text_examples(hp.task, hp.data_root, "test")[: hp.test_size]
        self.test_inputs = self.encode([e.text for e in test])
        self.test_labels, self.test_ids = torch.tensor([e.label for e in test]), [e.id for e in test]
        self.task = hp.task
        self.num_labelled, self.num_unlabelled = len(self.labelled_at), len(self.unlabelled_at)
        listing = "".join(f"{ids[p]} {train[p].label}\n" for p in self.labelled_at) + f"unlabelled {self.unlabelled_at}"
        listing += f" tokenizer {self.tokenizer.digest}" if self.tokenizer is not None else ""
        listing += "".join(f"\n{e.id}\t{e.text}" for e in extra)  # the extra texts themselves
        self.data_hash = hashlib.sha256(listing.encode()).hexdigest()

    def _extra(self) -> list:
        """The extra unlabelled texts of ``unlabelled_extra`` (none without it)."""
        from tasks.text_classification.data import read_unlabelled

        hp = self.hparams
        if hp.unlabelled_extra is None:
            return []
        return read_unlabelled(Path(hp.unlabelled_extra), hp.unlabelled_extra_size)

    def _augmenter(self) -> Callable[[int, random.Random], str | list[str]] | None:
        from tasks.text_augment import Paraphrases, SwitchOut, TfidfWordReplacement

        hp = self.hparams
        if hp.augment in ("tfidf", "switchout"):
            corpus = (self.words[p] for p in self.unlabelled_at or self.labelled_at)
            replace: TfidfWordReplacement | SwitchOut
            if hp.augment == "tfidf":
                replace = TfidfWordReplacement(corpus, hp.tfidf_p)
            else:
                replace = SwitchOut(corpus, hp.switchout_tau)

            def replaced(position: int, rng: random.Random) -> list[str]:
                replace.rng = rng
                return replace(self.words[position])

            return replaced
        if hp.augment == "backtranslation":
            table = Paraphrases(hp.paraphrases)

            def paraphrase(position: int, rng: random.Random) -> str:
                table.rng = rng
                return table(self.train[position].id, self.train[position].text)

            return paraphrase
        return None

    def row(self, position: int) -> str | list[str]:
        """A training text as :meth:`encode` takes it: its words (hashed ids) or its raw text (WordPiece)."""
        return self.train[position].text if self.tokenizer is not None else self.words[position]

    def encode(self, rows: Sequence[str | Sequence[str]]) -> torch.Tensor:
        """Token ids ``(N, T)``, padded with 0, of texts (``str``) or word lists (TF-IDF's output)."""
        from tasks.text_augment import words

        hp = self.hparams
        if self.tokenizer is None:
            return pad_ids(
                [hashed_ids(words(r) if isinstance(r, str) else r, hp.vocab_size, hp.max_tokens) for r in rows]
            )
        return pad_ids([self.wordpiece_ids(r if isinstance(r, str) else " ".join(r)) for r in rows])

    def wordpiece_ids(self, text: str) -> list[int]:
        """``[CLS]`` + the text's last ``max_tokens - 2`` WordPieces + ``[SEP]``."""
        pieces = self.tokenizer.encode(text, special_tokens=False).ids
        kept = pieces[-(self.hparams.max_tokens - 2) :] if self.hparams.max_tokens > 2 else []
        return [self.tokenizer.cls_token_id, *kept, self.tokenizer.sep_token_id]

    def labelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = [self.labelled_at[p] for p in positions]
        augment = self.augmenter if self.hparams.augment_labelled and self.augmenter else None
        rows = [augment(p, rng) if augment else self.row(p) for p in chosen]
        return self.encode(rows), torch.tensor([self.train[p].label for p in chosen])

    def unlabelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = [self.unlabelled_at[p] for p in positions]
        original = [self.row(p) for p in chosen]
        augmented = [self.augmenter(p, rng) for p in chosen] if self.augmenter else original
        return self.encode(original), self.encode(augmented)


# --- ImageNet: images streamed from disk --------------------------------------------------------------------------

UNLABELLED_SOURCES = ("rest", "train", "none")


def list_images(root: Path) -> list[str]:
    """Every image file under ``root`` (any depth; hidden files and folders skipped), as sorted ``/``-separated
    paths relative to ``root``: a folder of extra unlabelled images needs no layout and no labels."""
    from tasks.imagenet.data import image_extensions

    root, extensions, found = Path(root), image_extensions(), []
    if not root.is_dir():
        raise HarnessError(f"{root}: unlabelled image folder missing")
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        relative = Path(folder).relative_to(root)
        found += [(relative / f).as_posix() for f in files
                  if not f.startswith(".") and os.path.splitext(f)[1].lower() in extensions]  # fmt: skip
    if not found:
        raise HarnessError(f"{root}: no image files")
    return sorted(found)


def stream_positions(seed: int, stream: int, n: int, start: int, count: int) -> np.ndarray:
    """Positions ``start .. start + count - 1`` of an endless walk over ``0..n-1`` in fresh permutations: block
    ``j`` (positions ``j n .. (j + 1) n - 1``) is the permutation drawn from ``(seed, stream, j)``. Any step's
    positions follow from its number alone, so data-loader workers and devices need no shared state."""
    out, position = [], start
    while position < start + count:
        block, offset = divmod(position, n)
        take = min(n - offset, start + count - position)
        out.append(_permutation(seed, stream, n, block)[offset : offset + take])
        position += take
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@functools.lru_cache(maxsize=4)
def _permutation(seed: int, stream: int, n: int, block: int) -> np.ndarray:
    return np.random.default_rng([seed, stream, block]).permutation(n)


class StepSampler(DistributedSampler):
    """The global step numbers this device trains on in one epoch: ``(epoch * steps + i) * replicas + rank`` for
    ``i < steps``. A ``DistributedSampler``, so Lightning neither wraps it nor forgets its ``set_epoch``: every
    device and every epoch gets steps (hence images and augmentations) of its own."""

    def __init__(self, steps: int, num_replicas: int | None = None, rank: int | None = None) -> None:
        if num_replicas is None or rank is None:
            distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
            num_replicas = torch.distributed.get_world_size() if distributed else 1
            rank = torch.distributed.get_rank() if distributed else 0
        self.steps, self.num_replicas, self.rank, self.epoch = steps, num_replicas, rank, 0

    def __iter__(self) -> Iterator[int]:
        first = self.epoch * self.steps
        return iter((first + i) * self.num_replicas + self.rank for i in range(self.steps))

    def __len__(self) -> int:
        return self.steps


class ImageNetStepBatches(Dataset):
    """Item ``g``: the whole batch of global step ``g``, read from disk: ``batch_size`` labelled images and
    ``extra`` unlabelled ones (positions from :func:`stream_positions`), augmentations drawn from ``(seed, g)``.
    Holds file lists only (byte strings), never images; its items are step numbers, drawn by :class:`StepSampler`."""

    def __init__(self, owner: ImageNetUDADataModule, seed: int) -> None:
        hp = owner.hparams
        self.seed, self.size = seed, hp.batch_size
        self.extra = round(hp.batch_size * hp.unlabelled_ratio)
        self.labelled = np.array([str(owner.train_root / p).encode() for p, _ in owner.labelled_items])
        self.labels = np.array([owner.class_to_idx[w] for _, w in owner.labelled_items], dtype=np.int64)
        self.unlabelled = np.array([p.encode() for p in owner.unlabelled_paths])
        self.weak, self.strong, self.labelled_transform = owner.transforms()

    def __getitem__(self, step: int) -> dict[str, torch.Tensor]:
        from tasks.imagenet.data import load_rgb

        rng = random.Random(f"{self.seed}:{step}")
        for transform in (self.weak, self.strong, self.labelled_transform):
            transform.rng = rng
            if transform.autoaugment is not None:
                transform.autoaugment.rng = rng
        at = stream_positions(self.seed, 0, len(self.labelled), step * self.size, self.size)
        batch = {
            "labelled": torch.stack([self.labelled_transform(load_rgb(Path(self.labelled[p].decode()))) for p in at]),
            "labels": torch.from_numpy(self.labels[at]),
        }
        if self.extra:
            drawn = stream_positions(self.seed, 1, len(self.unlabelled), step * self.extra, self.extra)
            images = [load_rgb(Path(self.unlabelled[p].decode())) for p in drawn]
            batch["original"] = torch.stack([self.weak(img) for img in images])
            batch["augmented"] = torch.stack([self.strong(img) for img in images])
        return batch


class ImageNetUDADataModule(UDADataModule):
    """UDA on ImageNet (Section 4.4, Appendix E.3) from the ILSVRC-2012 folders (:mod:`tasks.imagenet.data`),
    images decoded from disk as each step needs them.

    Labelled set: ``subset_percent`` of every class (:func:`tasks.imagenet.subsets.sample_subset`, ranked by
    ``subset_seed``; 100 = every training image). Unlabelled set (``unlabelled``): ``rest``, the training images
    outside the labelled subset (the paper's 10% setting: "all other data as unlabeled data"); ``train``, every
    training image; ``none``; plus, with ``unlabelled_root``, every image under that folder (any layout, labels never
    read: the full setting's 1.3M images, which the paper filtered out of JFT by domain relevance; bring your own),
    or only the relative paths listed in ``unlabelled_ids`` (one per line, a filter's output).

    Each step (:class:`ImageNetStepBatches`) gives ``batch_size`` labelled images with the simple augmentation
    (Inception crop to ``image_size``, horizontal flip: :class:`tasks.imagenet.transforms.TrainTransform`), and
    ``unlabelled_ratio * batch_size`` unlabelled images twice: ``original`` with the simple augmentation (the
    paper's target side) and ``augmented`` with another crop and flip, then RandAugment (``augment: randaugment``;
    ``none``: no strong augmentation). ``augment_labelled`` applies it to the labelled images too (Table 5's
    "w. RandAugment" row). ``batch_size`` is per device: the paper's 512 labelled and 15,360 unlabelled images are
    a global batch (its v3-64 TPU pod). Workers (``num_workers``) each assemble whole steps.

    Test (and validation): the ILSVRC-2012 validation images, resized and centre-cropped (``crop_fraction``),
    scored as :class:`tasks.imagenet.data.ImageNetDataModule` scores them (ids = file stems, labels = wnids).
    """

    def __init__(
        self,
        data_root: str = "data/imagenet",
        subset_percent: float = 10.0,
        subset_seed: int = 0,
        unlabelled: str = "rest",
        unlabelled_root: str | None = None,
        unlabelled_ids: str | None = None,
        batch_size: int = 512,
        unlabelled_ratio: float = 30.0,
        steps_per_epoch: int = 1000,
        augment: str = "randaugment",
        augment_labelled: bool = False,
        randaugment_ops: int = 2,
        randaugment_magnitude: float | None = None,
        randaugment_probability: float = 0.5,
        image_size: int = 224,
        crop_fraction: float = 0.875,
        train_min_area: float = 0.08,
        num_workers: int = 0,
        eval_batch_size: int = 256,
        val_layout: str = "auto",
        verify_images: int = 1000,
        seed: int | None = None,
    ) -> None:
        from tasks.imagenet.data import ImageNetDataModule

        super().__init__()
        self.save_hyperparameters()
        if augment not in ("randaugment", "none") or unlabelled not in UNLABELLED_SOURCES:
            raise HarnessError(f"augment must be randaugment or none, unlabelled one of {', '.join(UNLABELLED_SOURCES)}"
                               f"; got {augment!r}, {unlabelled!r}")  # fmt: skip
        if unlabelled_ids is not None and unlabelled_root is None:
            raise HarnessError("unlabelled_ids lists images under unlabelled_root: set unlabelled_root too")
        self.imagenet = ImageNetDataModule(
            data_root, batch_size=eval_batch_size, image_size=image_size, crop_fraction=crop_fraction,
            num_workers=num_workers, subset_percent=subset_percent, subset_seed=subset_seed, val_layout=val_layout,
            verify_images=verify_images,
        )  # fmt: skip
        self.task, self.data_hash = "imagenet-1k", None
        self.train_root = Path(data_root) / "train"

    @property
    def num_classes(self) -> int:
        return self.imagenet.num_classes

    def verify(self) -> None:
        self.imagenet.verify()
        if self.hparams.unlabelled_root is not None:
            list_images(Path(self.hparams.unlabelled_root))

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.imagenet.subsets import format_subset, sample_subset

        hp = self.hparams
        self.imagenet.setup()
        index = self.imagenet.index
        self.class_to_idx = {wnid: i for i, wnid in enumerate(index.classes)}
        self.labelled_items = (
            sample_subset(index.train, hp.subset_percent, hp.subset_seed) if hp.subset_percent < 100 else index.train
        )
        self.unlabelled_paths = self._unlabelled(index.train) if hp.unlabelled_ratio else []
        self.num_labelled, self.num_unlabelled = len(self.labelled_items), len(self.unlabelled_paths)
        listing = format_subset(self.labelled_items) + "".join(f"{p}\n" for p in self.unlabelled_paths).encode()
        self.data_hash = hashlib.sha256(listing).hexdigest()

    def _unlabelled(self, train: Sequence[tuple[str, str]]) -> list[str]:
        """Paths of the unlabelled images: the training ones as ``data_root/train/...``, the extra ones under
        ``unlabelled_root``."""
        hp = self.hparams
        kept = {path for path, _ in self.labelled_items} if hp.unlabelled == "rest" else set()
        paths = [str(self.train_root / p) for p, _ in train if p not in kept] if hp.unlabelled != "none" else []
        if hp.unlabelled_root is not None:
            extra = list_images(Path(hp.unlabelled_root))
            if hp.unlabelled_ids is not None:
                wanted = set(read_ids(Path(hp.unlabelled_ids)))
                unknown = wanted - set(extra)
                if unknown:
                    raise HarnessError(f"{hp.unlabelled_ids}: not images under {hp.unlabelled_root}, e.g. "
                                       f"{sorted(unknown)[:3]}")  # fmt: skip
                extra = [p for p in extra if p in wanted]
            paths += [str(Path(hp.unlabelled_root) / p) for p in extra]
        return paths

    def transforms(self) -> tuple[Any, Any, Any]:
        """The simple augmentation, the strong one (crop, flip, RandAugment) and the labelled images' one."""
        from tasks.imagenet.randaugment import RandAugment
        from tasks.imagenet.transforms import TrainTransform

        hp = self.hparams

        def transform(strong: bool) -> TrainTransform:
            augment = RandAugment(hp.randaugment_ops, hp.randaugment_magnitude, hp.randaugment_probability)
            return TrainTransform(hp.image_size, hp.crop_fraction, min_area=hp.train_min_area,
                                  augment=augment if strong and hp.augment == "randaugment" else None)  # fmt: skip

        return transform(False), transform(True), transform(hp.augment_labelled)

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        if self.data_hash is None:
            raise HarnessError(f"{type(self).__name__}: call setup() before asking for a dataloader")
        if hp.unlabelled_ratio and not self.num_unlabelled:
            raise HarnessError("unlabelled_ratio > 0 but the unlabelled set is empty")
        seed = hp.seed if hp.seed is not None else torch.initial_seed()
        return DataLoader(ImageNetStepBatches(self, seed), batch_size=None, sampler=StepSampler(hp.steps_per_epoch),
                          num_workers=hp.num_workers, pin_memory=torch.cuda.is_available(),
                          persistent_workers=hp.num_workers > 0)  # fmt: skip

    def test_dataloader(self) -> DataLoader:
        return self.imagenet.test_dataloader()

    def val_dataloader(self) -> DataLoader:
        return self.imagenet.val_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        return self.imagenet.scoring(dataloader_idx, folder)


# --- BERT_FINETUNE's first stage: masked-LM pre-training on the unlabelled text -----------------------------------

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # a sentence ends at . ! or ? followed by white space
HELD_OUT_SEED = 0  # the held-out texts and their examples: the same for every run, so their losses compare


class MaskedLMDataModule(pl.LightningDataModule):
    """In-domain unlabelled text as BERT pre-training examples of ``max_tokens`` WordPieces (Appendix E.1's
    "Fine-tuning BERT on in-domain unsupervised data", done "using the code released by BERT").

    Texts: the task's training texts (``train_texts``; labels never read) and/or the extra unlabelled texts of
    ``unlabelled_extra`` (IMDb's ``unsup`` folder, McAuley et al.'s Amazon review JSON lines, or one text a line:
    :func:`tasks.text_classification.data.read_unlabelled`, its first ``unlabelled_extra_size``). ``held_out`` of them,
    drawn by a fixed permutation (seed 0, whatever the run's seed), are the test set: the paper picks the further
    pre-trained model "by the BERT loss on a held-out set"; the rest train. Each text is cut into sentences (at
    ``.``, ``!`` or ``?`` followed by white space) and each sentence into WordPieces with the released ``vocab``
    (:func:`tasks.tokenizers.hf.bert_wordpiece`, cited in the records).

    An example per text, as BERT's ``create_pretraining_data.py`` makes them (:func:`nets.masked_lm.sentence_pair`):
    ``[CLS] A [SEP] B [SEP]`` with token types 0 then 1, B the text's next sentences or (half the time) a random
    text's, ``short_seq_prob`` of them shorter; without ``next_sentence``, ``[CLS]`` + the text's first
    ``max_tokens - 2`` pieces + ``[SEP]``. Padded to ``max_tokens``. A text's example is drawn from ``(seed, index)``
    (the held-out ones from :data:`HELD_OUT_SEED`), so it is the same in every epoch, as BERT's are made once before
    training; the masks are drawn per step by the system (:class:`reproductions.uda.system.BertPretrainSystem`).
    Texts are held in memory, as :class:`TextUDADataModule` holds them.
    """

    def __init__(
        self,
        task: str = "yelp-2",
        data_root: str = "data/yelp-2",
        train_texts: bool = True,
        unlabelled_extra: str | None = None,
        unlabelled_extra_size: int | None = None,
        vocab: str = "data/bert/uncased_L-24_H-1024_A-16/vocab.txt",
        lowercase: bool = True,
        max_tokens: int = 512,
        next_sentence: bool = True,
        short_seq_prob: float = 0.1,
        held_out: int = 10000,
        batch_size: int = 32,
        eval_batch_size: int = 32,
        num_workers: int = 0,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if not train_texts and unlabelled_extra is None:
            raise HarnessError("no text to pre-train on: set train_texts: true or unlabelled_extra")
        if max_tokens < 8 or held_out < 1:
            raise HarnessError(f"need max_tokens >= 8 and held_out >= 1; got {max_tokens}, {held_out}")
        self.data_hash: str | None = None
        self.tokenizer: Any = None

    def verify(self) -> None:
        from tasks.tokenizers.hf import read_vocab

        hp = self.hparams
        if hp.train_texts:
            read_text_examples(hp.task, hp.data_root, "train")
        if hp.unlabelled_extra is not None:
            from tasks.text_classification.data import read_unlabelled

            read_unlabelled(Path(hp.unlabelled_extra), 1)
        read_vocab(hp.vocab)

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.tokenizers import register
        from tasks.tokenizers.hf import bert_wordpiece

        hp = self.hparams
        self.tokenizer = bert_wordpiece(hp.vocab, hp.lowercase)
        register(self, self.tokenizer)
        self.mask_id = self.tokenizer.mask_token_id
        self.specials = (self.tokenizer.pad_token_id, self.tokenizer.cls_token_id, self.tokenizer.sep_token_id)
        if self.tokenizer.pad_token_id != PAD:
            raise HarnessError(f"{hp.vocab}: [PAD] is id {self.tokenizer.pad_token_id} (must be {PAD})")
        texts = self._texts()
        if len(texts) < hp.held_out + 2:
            raise HarnessError(f"{len(texts)} texts: held_out ({hp.held_out}) must leave two or more to train on")
        order = np.random.default_rng(HELD_OUT_SEED).permutation(len(texts))
        self.train_texts = [texts[i] for i in sorted(order[hp.held_out :])]
        self.test_texts = [texts[i] for i in sorted(order[: hp.held_out])]
        self.seed = hp.seed if hp.seed is not None else torch.initial_seed()
        digest = hashlib.sha256(f"tokenizer {self.tokenizer.digest} held_out {hp.held_out}\n".encode())
        for text in texts:  # the texts themselves, one a line (millions of reviews: no joined copy)
            digest.update(f"{text}\n".encode())
        self.data_hash = digest.hexdigest()

    def _texts(self) -> list[str]:
        from tasks.text_classification.data import read_unlabelled

        hp = self.hparams
        examples = read_text_examples(hp.task, hp.data_root, "train") if hp.train_texts else []
        if hp.unlabelled_extra is not None:
            examples = examples + read_unlabelled(Path(hp.unlabelled_extra), hp.unlabelled_extra_size)
        return [" ".join(e.text.split()) for e in examples if e.text.strip()]  # one line, no empty text

    def sentences(self, text: str) -> list[list[int]]:
        """The text's sentences as WordPiece ids (those that give no piece left out)."""
        pieces = (self.tokenizer.encode(s, special_tokens=False).ids for s in SENTENCE_END.split(text))
        return [p for p in pieces if p]

    def example(self, texts: Sequence[str], index: int, seed: int) -> dict[str, torch.Tensor]:
        """Text ``index``'s pre-training example, drawn from ``(seed, index)``: fixed-length tensors."""
        from nets.masked_lm import sentence_pair

        hp, tok = self.hparams, self.tokenizer
        rng = random.Random(f"{seed}:{index}")
        if not hp.next_sentence:
            pieces = [t for s in self.sentences(texts[index]) for t in s][: hp.max_tokens - 2]
            ids, types, label = [tok.cls_token_id, *pieces, tok.sep_token_id], [0] * (len(pieces) + 2), 0
        else:

            def random_text() -> list[list[int]]:  # another text (BERT draws one other than the current)
                other = rng.randrange(len(texts) - 1)
                return self.sentences(texts[other + (other >= index)])

            pair = sentence_pair(self.sentences(texts[index]) or [[tok.unk_token_id]], random_text, hp.max_tokens, rng,
                                 hp.short_seq_prob)  # fmt: skip
            a, b = pair.tokens_a, pair.tokens_b
            ids = [tok.cls_token_id, *a, tok.sep_token_id, *b, tok.sep_token_id]
            types, label = [0] * (len(a) + 2) + [1] * (len(b) + 1), int(pair.is_random_next)
        pad = hp.max_tokens - len(ids)
        input_ids = torch.tensor(ids + [PAD] * pad)
        return {
            "input_ids": input_ids,
            "token_type_ids": torch.tensor(types + [0] * pad),
            "attention_mask": torch.tensor([1] * len(ids) + [0] * pad),
            "candidates": ~torch.isin(input_ids, torch.tensor(self.specials)),
            "next_sentence_label": torch.tensor(label),
        }

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        data = PretrainingExamples(self, self.train_texts, self.seed)
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(data, hp.batch_size, shuffle=True, generator=generator, num_workers=hp.num_workers,
                          drop_last=True, persistent_workers=hp.num_workers > 0)  # fmt: skip

    def test_dataloader(self) -> DataLoader:
        data = PretrainingExamples(self, self.test_texts, HELD_OUT_SEED)
        return DataLoader(data, self.hparams.eval_batch_size, shuffle=False, num_workers=self.hparams.num_workers)


class PretrainingExamples(Dataset):
    """Item ``i``: text ``i``'s pre-training example (:meth:`MaskedLMDataModule.example`), drawn from ``seed``."""

    def __init__(self, owner: MaskedLMDataModule, texts: Sequence[str], seed: int) -> None:
        self.owner, self.texts, self.seed = owner, texts, seed

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.owner.example(self.texts, index, self.seed)
