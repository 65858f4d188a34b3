"""Selfie: Self-supervised Pretraining for Image Embedding (Trinh, Luong & Le, 2019), arXiv 1906.02940.

Pre-training (the paper's Section 2, as its abstract summarises it): an image is cut into a grid of
non-overlapping patches and some are masked out. Every patch goes through the patch processing network ``P`` (the
first convolution blocks of ResNet-50, then global average pooling), giving one vector ``h_j`` per patch. An
attention pooling network (Transformer layers over the unmasked patches' vectors plus a learned query vector
``u_0``) summarises the unmasked patches into ``u``. For each masked location ``i`` the query ``v_i = u + pos_i``
(a position embedding of the location) scores every masked patch by ``v_i . h_j``; the loss is the cross-entropy of
picking the patch that was at ``i`` among the masked patches of the same image (the others are the "distractors"),
the Contrastive Predictive Coding loss of the v3 abstract.

Fine-tuning: a ResNet-50 whose stem and first stages *are* the pre-trained patch network (shared modules, so the
convolution weights are reused as they are) and whose last stage and classifier start fresh, trained on the
labelled subset.

Choices of this reproduction (the paper's text beyond its abstract was not read while writing it): ``P`` is the
stem and the first three of ResNet-50's four stages (conv2_x..conv4_x, 1024-d output); the unmasked patches'
vectors get the same position embeddings as the queries before pooling; the pooling network is
``nn.TransformerEncoder`` with ``pooling_layers`` pre-norm layers of width ``d`` and ``pooling_heads`` heads, its
output at ``u_0`` being ``u``; masked locations are drawn uniformly without replacement per image.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from nets.resnet import ResNet
from nets.specs import RESNETS
from reproductions.selfie.variants import NETWORKS, PRETEXT, Network, Pretext

PATCH_STAGES = 3  # conv2_x, conv3_x, conv4_x


def patchify(images: torch.Tensor, grid: int) -> torch.Tensor:
    """``(N, C, H, W)`` -> ``(N, grid*grid, C, H/grid, W/grid)``, patches in row-major order."""
    n, c, height, width = images.shape
    if height % grid or width % grid:
        raise ValueError(f"a {height}x{width} image does not split into a {grid}x{grid} grid of equal patches")
    ph, pw = height // grid, width // grid
    patches = images.reshape(n, c, grid, ph, grid, pw).permute(0, 2, 4, 1, 3, 5)  # (N, g, g, C, ph, pw)
    return patches.reshape(n, grid * grid, c, ph, pw)


def selfie_logits(u: torch.Tensor, positions: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """Scores ``(N, M, M)`` of every masked patch ``j`` for every masked location ``i``: ``(u + pos_i) . h_j``.

    ``u`` is ``(N, d)``, ``positions`` the embeddings of the masked locations ``(N, M, d)``, ``candidates`` the
    masked patches' vectors ``(N, M, d)`` in the same order (the answer for location ``i`` is candidate ``i``).
    """
    queries = u[:, None, :] + positions  # (N, M, d)
    return queries @ candidates.transpose(1, 2)  # (N, M, M)


def selfie_loss(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of choosing candidate ``i`` for location ``i``, and the accuracy of that choice."""
    n, m, _ = logits.shape
    target = torch.arange(m, device=logits.device).repeat(n)
    flat = logits.reshape(n * m, m)
    return F.cross_entropy(flat, target), (flat.argmax(dim=1) == target).float().mean()


class SelfieNet(nn.Module):
    """The fine-tuning ResNet plus the pre-training parts: attention pooling, ``u_0`` and position embeddings."""

    def __init__(self, network: Network, pretext: Pretext, num_classes: int = 1000) -> None:
        super().__init__()
        self.resnet = ResNet(RESNETS[network.depth], num_classes=num_classes, stem=network.stem, width=network.width)
        self.pretext = pretext
        dim = self.resnet.out_channels[PATCH_STAGES - 1]  # 1024 for ResNet-50
        self.query = nn.Parameter(torch.randn(1, 1, dim) * dim**-0.5)  # u_0
        self.positions = nn.Parameter(torch.randn(pretext.grid**2, dim) * dim**-0.5)
        layer = nn.TransformerEncoderLayer(dim, pretext.pooling_heads, 4 * dim, dropout=0.0, batch_first=True,
                                           norm_first=True)  # fmt: skip
        self.pooling = nn.TransformerEncoder(layer, pretext.pooling_layers, enable_nested_tensor=False)
        self.pooling_norm = nn.LayerNorm(dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Fine-tuning / evaluation: class logits of the whole image, ``(N, num_classes)``."""
        return self.resnet(images)

    def patch_vectors(self, images: torch.Tensor) -> torch.Tensor:
        """``h``: the patch network's vector of every patch, ``(N, grid*grid, d)``."""
        patches = patchify(images, self.pretext.grid)  # (N, P, C, p, p)
        n, count = patches.shape[:2]
        features = self.resnet.features(patches.flatten(0, 1), stages=PATCH_STAGES)[-1]  # (N*P, d, h, w)
        return features.mean(dim=(2, 3)).reshape(n, count, -1)

    def pretrain_logits(self, images: torch.Tensor, masked: torch.Tensor | None = None) -> torch.Tensor:
        """Selfie scores ``(N, M, M)``; ``masked`` ``(N, M)`` are the masked locations (random when not given)."""
        h = self.patch_vectors(images)  # (N, P, d)
        n, count, _ = h.shape
        if masked is None:
            order = torch.rand(n, count, device=images.device).argsort(dim=1)
            masked = order[:, : self.pretext.masked]
        keep = torch.ones(n, count, dtype=torch.bool, device=images.device)
        keep[torch.arange(n, device=images.device)[:, None], masked] = False
        unmasked = keep.nonzero()[:, 1].reshape(n, -1)  # (N, P - M) locations in order
        gather = lambda index: h.gather(1, index[..., None].expand(-1, -1, h.shape[-1]))  # noqa: E731
        context = gather(unmasked) + self.positions[unmasked]  # (N, P - M, d)
        tokens = torch.cat([self.query.expand(n, -1, -1), context], dim=1)
        u = self.pooling_norm(self.pooling(tokens)[:, 0])  # (N, d): output at u_0
        return selfie_logits(u, self.positions[masked], gather(masked))


def finetune_network(name: str, num_classes: int = 1000) -> ResNet:
    """The ResNet a model id fine-tunes (what the paper reports accuracies of); the harness builder."""
    if name not in NETWORKS:
        raise ValueError(f"unknown Selfie model {name!r}; known: {', '.join(NETWORKS)}")
    network = NETWORKS[name]
    return ResNet(RESNETS[network.depth], num_classes=num_classes, stem=network.stem, width=network.width)


def build(name: str = "selfie-resnet50", num_classes: int = 1000) -> nn.Module:
    """:class:`SelfieNet` for ``selfie-*`` ids (pre-training + fine-tuning), the plain ResNet for ``supervised-*``."""
    finetune_network(name, num_classes)  # validates the id
    network = NETWORKS[name]
    if network.selfie:
        return SelfieNet(network, PRETEXT[network.image_size], num_classes)
    return finetune_network(name, num_classes)
