"""ImageNet (ILSVRC-2012) image classification, 1000 classes.

Russakovsky et al., "ImageNet Large Scale Visual Recognition Challenge", IJCV 2015 (arXiv 1409.0575).
Protocol: top-1 / top-5 accuracy on the 50,000 validation images (the test labels were never released),
class index = sorted WordNet id (wnid) of the ``train/`` folders, single center crop.

Modules (imported on use, none of them from here):

- ``score``: the official-format scorer, ``id,label`` references against ``id,prediction[,p2..p5]``.
- ``data``: :class:`~tasks.imagenet.data.ImageNetDataModule` over the on-disk ILSVRC layout.
- ``transforms`` / ``autoaugment``: Inception-style train crop, center-crop eval, AutoAugment policies.
- ``subsets``: deterministic k%-per-class few-label subsets with a hashable list file.
- ``fixtures``: small datasets written in the real ILSVRC layout (digits, random noise).
"""

from harness.registry import Task

IMAGENET_1K = Task(
    id="imagenet-1k",
    title="ImageNet (ILSVRC-2012)",
    score="tasks.imagenet.score:score",
    keys=("top1", "top5", "error"),
    example="tasks.imagenet.fixtures:example",
    data="tasks.imagenet.data:ImageNetDataModule",
    metric="tasks.metrics:accuracy_metrics",
    version=1,
)
