"""The released GPT weights and vocabulary (openai/finetune-transformer-lm, ``model/``) in this reproduction's layout.

The release stores the pre-trained LM as ``params_shapes.json`` (a list of 146 shapes) and ``params_0.npy`` ...
``params_9.npy``: float32 arrays that, concatenated in order, hold every parameter flattened, in the order of
``params_shapes.json`` (the release's ``train.py`` joins them, splits at the cumulative sizes and reshapes). The
order is the TensorFlow variables' order: the position embeddings ``(512, 768)``, the token embeddings
``(40478, 768)``, then per block ``h0`` ... ``h11`` twelve arrays: ``attn/c_attn`` w ``(1, 768, 2304)`` and b,
``attn/c_proj`` w ``(1, 768, 768)`` and b, ``ln_1`` g and b, ``mlp/c_fc`` w ``(1, 768, 3072)`` and b,
``mlp/c_proj`` w ``(1, 3072, 768)`` and b, ``ln_2`` g and b. The ``w`` arrays are 1x1 convolutions
``(1, in, out)``; a ``torch.nn.Linear`` holds ``(out, in)``, hence the transposes. ``encoder_bpe_40000.json`` maps
the 40,478 BPE symbols to ids and ``vocab_40000.bpe`` lists the merges, one ``a b`` pair a line after a
``#version`` header; a word's last symbol carries ``</w>``.

``python -m reproductions.gpt.weights MODEL_DIR OUT.safetensors`` writes the converted LM (:class:`~model.GPT`
names, ``model.`` prefixed as a system's state) for ``--checkpoint`` / ``init_from``; :func:`hf_to_state` maps
``transformers``' ``OpenAIGPTModel`` the same way (the reference check of tests/reproductions/gpt).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from harness.errors import HarnessError

SHARDS = 10
# per block: (release array, our tensor, transpose the (1, in, out) convolution)
BLOCK_LAYOUT = (
    ("attn/c_attn/w", "attention.qkv.weight", True),
    ("attn/c_attn/b", "attention.qkv.bias", False),
    ("attn/c_proj/w", "attention.out.weight", True),
    ("attn/c_proj/b", "attention.out.bias", False),
    ("ln_1/g", "norm1.weight", False),
    ("ln_1/b", "norm1.bias", False),
    ("mlp/c_fc/w", "feed_forward.0.weight", True),
    ("mlp/c_fc/b", "feed_forward.0.bias", False),
    ("mlp/c_proj/w", "feed_forward.2.weight", True),
    ("mlp/c_proj/b", "feed_forward.2.bias", False),
    ("ln_2/g", "norm2.weight", False),
    ("ln_2/b", "norm2.bias", False),
)
HF_NAMES = {  # transformers' OpenAIGPTModel block names -> ours (Conv1D weights are (in, out): transposed)
    "attn.c_attn": "attention.qkv",
    "attn.c_proj": "attention.out",
    "ln_1": "norm1",
    "mlp.c_fc": "feed_forward.0",
    "mlp.c_proj": "feed_forward.2",
    "ln_2": "norm2",
}


def read_json(path: Path) -> object:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HarnessError(f"{path}: not readable JSON: {exc}") from None


def read_shapes(folder: Path) -> list[tuple[int, ...]]:
    path = Path(folder) / "params_shapes.json"
    shapes = read_json(path)
    if not (isinstance(shapes, list) and shapes and all(isinstance(s, list) for s in shapes)):
        raise HarnessError(f"{path}: expected a list of shapes (lists of integers)")
    if any(not all(isinstance(n, int) and n > 0 for n in s) for s in shapes):
        raise HarnessError(f"{path}: a shape holds something other than positive integers")
    return [tuple(s) for s in shapes]


def read_released(folder: str | Path) -> list[np.ndarray]:
    """The release's parameter arrays, in the order of ``params_shapes.json``."""
    folder = Path(folder)
    shapes = read_shapes(folder)
    shards = []
    for index in range(SHARDS):
        path = folder / f"params_{index}.npy"
        try:
            shards.append(np.load(path, allow_pickle=False).reshape(-1))
        except FileNotFoundError:
            raise HarnessError(f"{path}: missing (the release has params_0.npy ... params_{SHARDS - 1}.npy)") from None
        except (OSError, ValueError) as exc:
            raise HarnessError(f"{path}: not a numpy array file: {exc}") from None
    flat = np.concatenate(shards)
    sizes = [int(np.prod(s)) for s in shapes]
    if sum(sizes) != flat.size:
        raise HarnessError(
            f"{folder}: params_*.npy hold {flat.size} values but params_shapes.json describes {sum(sizes)}"
        )
    offsets = np.cumsum(sizes)[:-1]
    return [part.reshape(shape) for part, shape in zip(np.split(flat, offsets), shapes, strict=True)]


def released_to_state(arrays: Sequence[np.ndarray], where: str = "params_shapes.json") -> dict[str, torch.Tensor]:
    """:class:`~model.GPT` tensors from the release's arrays: positions, tokens, then 12 arrays per block."""
    if len(arrays) < 2 or (len(arrays) - 2) % len(BLOCK_LAYOUT):
        raise HarnessError(f"{where}: {len(arrays)} arrays; expected 2 embeddings + {len(BLOCK_LAYOUT)} per block")
    positions, tokens = arrays[0], arrays[1]
    state = {"positions.weight": positions, "tokens.weight": tokens}
    for index, start in enumerate(range(2, len(arrays), len(BLOCK_LAYOUT))):
        for offset, (name, ours, transpose) in enumerate(BLOCK_LAYOUT):
            value = arrays[start + offset]
            if transpose:
                if value.ndim != 3 or value.shape[0] != 1:
                    raise HarnessError(f"{where}: h{index}/{name} has shape {value.shape}; expected (1, in, out)")
                value = value[0].T
            state[f"blocks.{index}.{ours}"] = value
    return {name: torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32)) for name, value in state.items()}


def hf_to_state(hf_state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """:class:`~model.GPT` tensors from a ``transformers`` ``OpenAIGPTModel`` state dict."""
    state = {"tokens.weight": hf_state["tokens_embed.weight"], "positions.weight": hf_state["positions_embed.weight"]}
    for name, value in hf_state.items():
        if not name.startswith("h."):
            continue
        _, index, rest = name.split(".", 2)
        module, kind = rest.rsplit(".", 1)
        conv = module.startswith(("attn.", "mlp.")) and kind == "weight"
        state[f"blocks.{index}.{HF_NAMES[module]}.{kind}"] = value.T.contiguous() if conv else value
    return state


def read_vocabulary(folder: str | Path) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """``(symbol -> id, merges in rank order)`` from ``encoder_bpe_40000.json`` and ``vocab_40000.bpe``."""
    folder = Path(folder)
    encoder_path, merges_path = folder / "encoder_bpe_40000.json", folder / "vocab_40000.bpe"
    encoder = read_json(encoder_path)
    if not (isinstance(encoder, dict) and all(isinstance(v, int) for v in encoder.values())):
        raise HarnessError(f"{encoder_path}: expected an object of symbol -> integer id")
    try:
        lines = merges_path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise HarnessError(f"{merges_path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{merges_path}: not readable text: {exc}") from None
    if not lines[0].startswith("#version"):
        raise HarnessError(f"{merges_path}:1: expected the '#version' header line")
    merges = []
    for number, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise HarnessError(f"{merges_path}:{number}: expected two symbols, got {line!r}")
        merges.append((parts[0], parts[1]))
    return encoder, merges


def convert(folder: str | Path, out: str | Path, prefix: str = "model.") -> dict[str, torch.Tensor]:
    """Write the released LM as safetensors (names ``prefix`` + :class:`~model.GPT`'s); returns the tensors."""
    from safetensors.torch import save_file

    folder = Path(folder)
    state = {prefix + name: value for name, value in released_to_state(read_released(folder), str(folder)).items()}
    encoder, _ = read_vocabulary(folder)
    vocab = state[prefix + "tokens.weight"].shape[0]
    if len(encoder) != vocab:
        raise HarnessError(f"{folder / 'encoder_bpe_40000.json'}: {len(encoder)} symbols for {vocab} token rows")
    save_file(state, str(out))
    return state


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m reproductions.gpt.weights MODEL_DIR OUT.safetensors", file=sys.stderr)
        return 2
    try:
        state = convert(args[0], args[1])
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{args[1]}: {len(state)} tensors, {sum(t.numel() for t in state.values())} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
