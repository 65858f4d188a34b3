"""The released WikiText-103 language models of ULMFiT (fastai) converted into :class:`~reproductions.ulmfit.model.
LanguageModel`'s layout, with their vocabulary.

What was released is two pickles: the weights, a torch state dict saved with ``torch.save`` (``fwd_wt103.h5`` /
``bwd_wt103.h5`` of the 2018 fastai 0.7 course code, ``lstm_wt103.pth`` / ``lstm_fwd.pth`` of fastai v1, the
latter possibly wrapped as ``{"model": state, "opt": ...}``), and the vocabulary, a pickled list of strings
(``itos_wt103.pkl``). Neither is read with a general unpickler here:

- the weights with ``torch.load(weights_only=True)``: tensors and plain containers only, no object is built from
  the file's classes, so a file naming any other global is refused;
- the vocabulary with :class:`ListOfStrings`, an unpickler that resolves no global at all (the same guarantee:
  a list of strings needs none), then checked to be a list of strings.

Key layouts (facts of the fastai sources, no code of theirs): 0.7 ``0.encoder.weight``,
``0.encoder_with_dropout.embed.weight``, ``0.rnns.<l>.module.weight_ih_l0``, ``0.rnns.<l>.module.weight_hh_l0_raw``
(DropConnect's raw matrix), ``0.rnns.<l>.module.bias_{ih,hh}_l0``, ``1.decoder.weight`` (tied); v1 the same with
``0.encoder_dp.emb.weight``, ``0.rnns.<l>.weight_hh_l0_raw`` (and a dropped copy ``0.rnns.<l>.module.weight_hh_l0``)
and a decoder bias ``1.decoder.bias``. Sizes (embedding, hidden, layers) are read from the tensors.

The converted vocabulary starts with this code's ``<pad>``, ``<eos>``, ``<unk>`` (rows taken from the file's own
padding, end and unknown tokens, ``xxpad``/``_pad_``, ``xxeos``, ``xxunk``/``_unk_``, or the mean embedding where it
has none, as fastai gives unseen words), then the file's other tokens in order.
``python -m reproductions.ulmfit.weights WEIGHTS ITOS OUT_DIR`` writes ``OUT_DIR/lm.safetensors`` and
``OUT_DIR/vocab.txt``.
"""

from __future__ import annotations

import io
import pickle
import sys
from pathlib import Path

import torch

from harness.errors import HarnessError
from reproductions.ulmfit.data import SPECIALS

ALIASES = {"<pad>": ("xxpad", "_pad_"), "<eos>": ("xxeos",), "<unk>": ("xxunk", "_unk_")}


class ListOfStrings(pickle.Unpickler):
    """Unpickles containers of strings and numbers only: every global (class, function) is refused."""

    def find_class(self, module: str, name: str) -> None:
        raise pickle.UnpicklingError(f"refused global {module}.{name}: a vocabulary is a list of strings")


def read_itos(path: str | Path) -> list[str]:
    """The released vocabulary (id -> token), read without resolving any global."""
    path = Path(path)
    try:
        itos = ListOfStrings(io.BytesIO(path.read_bytes())).load()
    except (OSError, pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise HarnessError(f"{path}: cannot read the vocabulary: {exc}") from None
    if not isinstance(itos, list) or not all(isinstance(token, str) for token in itos):
        raise HarnessError(f"{path}: a vocabulary is a pickled list of strings; found {type(itos).__name__}")
    return itos


def read_fastai_state(path: str | Path) -> dict[str, torch.Tensor]:
    """The released weights, ``torch.load(weights_only=True)``; a ``{"model": state, ...}`` wrapper is unwrapped."""
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a corrupt or unsafe file is named, not hidden behind a traceback
        raise HarnessError(f"{path}: cannot read weights (torch.load with weights_only=True): {exc}") from None
    state = state.get("model", state) if isinstance(state, dict) else state
    if not isinstance(state, dict) or "0.encoder.weight" not in state:
        raise HarnessError(f"{path}: not a fastai AWD-LSTM language model (no '0.encoder.weight')")
    return state


def _layer(state: dict[str, torch.Tensor], path: Path, layer: int, name: str) -> torch.Tensor:
    for key in (f"0.rnns.{layer}.module.{name}", f"0.rnns.{layer}.{name}_raw", f"0.rnns.{layer}.module.{name}_raw"):
        if key in state and not (name.startswith("weight_hh") and key.endswith(f"module.{name}")):
            return state[key]
    raise HarnessError(f"{path}: layer {layer} has no {name} (looked for 0.rnns.{layer}.[module.]{name}[_raw])")


def _vocab_rows(embedding: torch.Tensor, itos: list[str]) -> tuple[list[str], torch.Tensor]:
    """This code's vocabulary (specials first) and the matching rows of ``embedding``."""
    stoi = {token: index for index, token in enumerate(itos)}
    aliased = {alias for names in ALIASES.values() for alias in names} | set(SPECIALS)
    special_rows = []
    for special in SPECIALS:
        index = next((stoi[name] for name in (special, *ALIASES[special]) if name in stoi), None)
        special_rows.append(embedding[index] if index is not None else embedding.mean(0))
    rest = [index for index, token in enumerate(itos) if token not in aliased]
    rows = torch.cat([torch.stack(special_rows), embedding[rest]])
    return [*SPECIALS, *(itos[index] for index in rest)], rows


def convert(state: dict[str, torch.Tensor], itos: list[str], path: Path = Path("weights")) -> tuple[dict, list[str]]:
    """fastai's AWD-LSTM LM state -> ``LanguageModel``'s state dict and its vocabulary (see the docstring)."""
    embedding = state["0.encoder.weight"]
    if embedding.shape[0] != len(itos):
        raise HarnessError(f"{path}: {embedding.shape[0]} embedding rows but the vocabulary has {len(itos)} tokens")
    vocab, rows = _vocab_rows(embedding, itos)
    bias = state.get("1.decoder.bias", torch.zeros(len(itos)))
    _, bias_rows = _vocab_rows(bias[:, None], itos)
    converted = {"encoder.embedding.weight": rows, "decoder.weight": rows, "decoder.bias": bias_rows[:, 0]}
    layers = 1 + max(int(key.split(".")[2]) for key in state if key.startswith("0.rnns."))
    for layer in range(layers):
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            converted[f"encoder.rnns.{layer}.lstm.{name}"] = _layer(state, path, layer, name)
    return converted, vocab


def sizes(converted: dict[str, torch.Tensor]) -> tuple[int, int, int]:
    """(embedding size, hidden size, layers) of a converted state."""
    layers = 1 + max(int(key.split(".")[2]) for key in converted if key.startswith("encoder.rnns."))
    hidden = converted["encoder.rnns.0.lstm.weight_hh_l0"].shape[1]
    return converted["encoder.embedding.weight"].shape[1], hidden, layers


def write_converted(weights: str | Path, itos: str | Path, out: str | Path) -> tuple[Path, Path]:
    """Convert the released files into ``out/lm.safetensors`` and ``out/vocab.txt``."""
    from safetensors.torch import save_file

    converted, vocab = convert(read_fastai_state(weights), read_itos(itos), Path(weights))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {key: value.contiguous().clone() for key, value in converted.items() if key != "decoder.weight"}
    save_file(tensors, str(out / "lm.safetensors"))
    (out / "vocab.txt").write_text("".join(f"{token}\n" for token in vocab), encoding="utf-8")
    return out / "lm.safetensors", out / "vocab.txt"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m reproductions.ulmfit.weights WEIGHTS ITOS OUT_DIR", file=sys.stderr)
        return 2
    try:
        for path in write_converted(*args):
            print(path)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
