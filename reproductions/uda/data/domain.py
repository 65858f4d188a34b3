"""Domain-relevance filtering (UDA, arXiv 1904.12848v6, Section 2.4) as a data step: :func:`class_probabilities`
runs a baseline model over candidate examples, :func:`domain_relevance_filter` keeps, for each class, the examples
with the highest probability of that class (:func:`streaming_domain_relevance` over a stream of any size,
:func:`filter_image_folder` over a folder of images), and :func:`~reproductions.uda.data.batches.write_ids` stores
the kept ids for a data module's ``unlabelled_ids``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from reproductions.uda.data.batches import write_ids
from reproductions.uda.data.imagenet import list_images


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
    """Domain-relevance filtering of every image under ``root`` (:func:`~reproductions.uda.data.imagenet.list_images`)
    with a baseline ``model`` (resized and centre-cropped as ImageNet's evaluation images); writes the kept relative
    paths to ``out``, the ``unlabelled_ids`` file of :class:`~reproductions.uda.data.imagenet.ImageNetUDADataModule`
    with ``unlabelled_root: root``."""
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
