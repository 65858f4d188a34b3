"""Architecture profiling: parameter count and multiply-adds of one forward pass at batch 1.

Counting convention (``macs``, the ``flopcounter-macs`` protocol of arch records): multiply-adds of the matrix
products a forward pass computes, as the papers count "FLOPs"/"MAdds". They are counted with
``torch.utils.flop_counter.FlopCounterMode``, which counts 2 FLOPs per multiply-add of convolutions and of matrix
multiplications (``mm``, ``addmm``, ``bmm``, ``baddbmm``: linear layers, ``matmul``/``einsum`` products), and nothing
for element-wise work, softmax, pooling, normalisation or embedding look-ups; we halve its total. So a Transformer
is counted as its Q/K/V and output projections, the attention scores ``QK^T`` and the value product ``AV`` (each
``T·T·d`` multiply-adds per sequence and layer, at full ``T×T`` size whatever the causal or padding mask), its
feed-forward layers and the output head; the bias adds are not counted.

The CPU kernels FlopCounterMode leaves out (checked on torch 2.13: it counts them as 0) are counted here by the
same rule, so a model is counted the same whichever kernel runs it:

- ``F.scaled_dot_product_attention`` (and ``nn.MultiheadAttention(need_weights=False)`` in training mode) runs
  ``aten._scaled_dot_product_flash_attention_for_cpu`` without dropout (with dropout it falls back to ``bmm``,
  which is counted): counted as ``QK^T`` plus ``AV``.
- The inference fast paths of ``nn.MultiheadAttention`` (``aten._native_multi_head_attention``) and of
  ``nn.TransformerEncoderLayer`` (``aten._transformer_encoder_layer_fwd``, eval mode without gradients, as
  profiling runs): counted as their projections and feed-forward matrices once per token plus ``QK^T`` and ``AV``.
- ``nn.LSTM`` without projections runs oneDNN's ``aten.mkldnn_rnn_layer``, which torch counts as 0 (``nn.GRU``
  and a projected LSTM decompose into ``addmm``/``mm`` and are counted): counted as each gate weight matrix
  applied once per time step and sequence, ``T·B·4H·(I + H)`` per layer and direction.

A model's inputs come from its :class:`~harness.registry.ModelSpec`: one tensor passed positionally, or named
inputs passed as keyword arguments. Example tensors are made deterministically from the input specs (see
:func:`example_tensor`), drawn from torch's global generator in declaration order right after the model is built
under ``torch.manual_seed(0)``. A spec that disagrees with its model is a :class:`HarnessError` naming both.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.errors import HarnessError
from harness.registry import InputSpec, ModelSpec


@dataclass(frozen=True)
class Profile:
    model: str
    params: int
    macs: int
    input_shape: tuple[int, ...]
    inputs: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """``{"model", "params", "macs", "input_shape"}``, plus ``"inputs"`` (name -> shape) for named inputs."""
        shape = list(self.input_shape)
        found = {"model": self.model, "params": self.params, "macs": self.macs, "input_shape": shape}
        if self.inputs:
            found["inputs"] = {name: list(dims) for name, dims in self.inputs.items()}
        return found


def _sdpa_cpu_flops(query: Any, key: Any, value: Any, *args: Any, out_val: Any = None, **kwargs: Any) -> int:
    """FLOPs of scaled dot-product attention: ``QK^T`` (B·H·Tq·Tk·d) plus ``AV`` (B·H·Tq·Tk·dv), 2 per MAC."""
    *batch_and_heads, t_q, d = query.shape
    t_k, d_v = key.shape[-2], value.shape[-1]
    return 2 * math.prod(batch_and_heads) * t_q * t_k * (d + d_v)


def _mkldnn_rnn_layer_flops(inp: Any, w_ih: Any, w_hh: Any, *args: Any, out_val: Any = None, **kwargs: Any) -> int:
    """FLOPs of one oneDNN RNN layer and direction: both weight matrices once per step and sequence, 2 per MAC."""
    steps_times_batch = inp.numel() // inp.shape[-1]
    return 2 * steps_times_batch * (w_ih.numel() + w_hh.numel())


def _native_attention_flops(query: Any, key: Any, value: Any, dim: int, heads: int, qkv: Any, qkv_bias: Any,
                            proj: Any, *args: Any, out_val: Any = None, **kwargs: Any) -> int:  # fmt: skip
    """FLOPs of torch's fused multi-head attention: Q, K, V and output projections plus ``QK^T`` and ``AV``."""
    t_q, t_k = query.shape[-2], key.shape[-2]
    sequences = query.numel() // (t_q * dim)
    projections = sequences * (t_q * 2 * dim * dim + t_k * 2 * dim * dim)  # Q and output; K and V
    return 2 * (projections + sequences * t_q * t_k * 2 * dim)


def _encoder_layer_flops(src: Any, dim: int, heads: int, qkv: Any, qkv_bias: Any, proj: Any, proj_bias: Any,
                         *args: Any, out_val: Any = None, **kwargs: Any) -> int:  # fmt: skip
    """FLOPs of torch's fused ``nn.TransformerEncoderLayer`` (its inference fast path): every weight matrix once per
    token (Q, K, V, output projection, both feed-forward layers) plus ``QK^T`` and ``AV``."""
    ffn_in, ffn_out = args[7], args[9]  # after use_gelu, norm_first, eps and the two LayerNorms' weights and biases
    t = src.shape[-2]
    tokens = src.numel() // dim
    matrices = qkv.numel() + proj.numel() + ffn_in.numel() + ffn_out.numel()
    return 2 * (tokens * matrices + tokens * t * 2 * dim)


for _formula in (_sdpa_cpu_flops, _mkldnn_rnn_layer_flops, _native_attention_flops, _encoder_layer_flops):
    _formula._get_raw = True  # FlopCounterMode passes these the tensors themselves, not their shapes


def _uncounted_kernels() -> dict[Any, Any]:
    import torch

    aten = torch.ops.aten
    return {
        aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_cpu_flops,
        aten.mkldnn_rnn_layer: _mkldnn_rnn_layer_flops,
        aten._native_multi_head_attention: _native_attention_flops,
        aten._transformer_encoder_layer_fwd: _encoder_layer_flops,
    }


def count_macs(module: Any, *args: Any, **kwargs: Any) -> int:
    """Multiply-adds of ``module(*args, **kwargs)``: FlopCounterMode's FLOPs (with the kernels above) halved."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False, custom_mapping=_uncounted_kernels())
    with torch.no_grad(), counter:
        module(*args, **kwargs)
    return counter.get_total_flops() // 2


def example_tensor(spec: InputSpec) -> Any:
    """A tensor for ``spec``: all ``fill``; else uniform integers in ``[low, high)`` (integer and bool dtypes); else
    standard normal. Random values come from torch's global generator, so they follow ``torch.manual_seed``."""
    import torch

    dtype = getattr(torch, spec.dtype)
    if spec.fill is not None:
        return torch.full(spec.shape, spec.fill, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(spec.shape, dtype=dtype)
    return torch.randint(spec.low, spec.high, spec.shape).to(dtype)


def example_inputs(spec: ModelSpec, test: bool = False) -> tuple[list[Any], dict[str, Any]]:
    """``(args, kwargs)`` for ``forward``: one positional tensor, or one keyword tensor per named input, in the
    order declared (``test``: at the contract tests' sizes)."""
    tensors = {each.name: example_tensor(each) for each in spec.input_specs(test)}
    if spec.named_inputs:
        return [], tensors
    return list(tensors.values()), {}


def check_signature(spec: ModelSpec, module: Any) -> None:
    """Raise a :class:`HarnessError` naming the model and the input when ``module.forward`` cannot take the
    spec's inputs: a name it has no argument for, or an argument without a default that no input fills."""
    signature = inspect.signature(module.forward)
    params = signature.parameters.values()
    where = f"model {spec.id!r}: {type(module).__name__}.forward({', '.join(map(str, signature.parameters))})"
    names = [each.name for each in spec.input_specs()]
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    keyword = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    required = [p.name for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if not spec.named_inputs:
        if len(required) > 1 or not (required or keyword or any(p.kind is p.VAR_POSITIONAL for p in params)):
            raise HarnessError(f"{where} does not take exactly one input tensor; describe its inputs with 'inputs'")
        return
    unknown = [name for name in names if name not in keyword and not takes_any]
    if unknown:
        raise HarnessError(f"{where} has no argument for input {unknown[0]!r}")
    missing = [name for name in required if name not in names]
    if missing:
        raise HarnessError(f"{where}: argument {missing[0]!r} has no default and no input spec")


def run_forward(spec: ModelSpec, module: Any, test: bool = False, count: bool = False) -> Any:
    """``module`` applied to :func:`example_inputs` after :func:`check_signature`, or (``count``) its multiply-adds;
    a forward that fails at the declared inputs is a :class:`HarnessError` naming the model and its inputs."""
    check_signature(spec, module)
    args, kwargs = example_inputs(spec, test)
    try:
        return count_macs(module, *args, **kwargs) if count else module(*args, **kwargs)
    except HarnessError:
        raise
    except Exception as exc:
        shapes = ", ".join(each.describe() for each in spec.input_specs(test))
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise HarnessError(f"model {spec.id!r}: forward fails at its declared inputs ({shapes}): "
                           f"{type(exc).__name__}: {reason}") from exc  # fmt: skip


def profile_model(spec: ModelSpec, device: str | None = None) -> Profile:
    """Build the model, count its parameters and its multiply-adds at ``spec``'s inputs in eval mode.

    Counting needs only shapes, so a model with floating-point inputs and no recurrent layers is made and run on
    PyTorch's ``meta`` device (no memory, no arithmetic: 3-14x faster for the ImageNet and COCO networks); integer
    inputs (token ids, whose range only a real look-up checks) and recurrent layers (one oneDNN kernel per sequence
    on the CPU, unrolled step by step on meta) are profiled on the CPU, and so is a model whose construction or
    forward needs real values (it raises on meta). Both devices give the same counts: every registered model is
    checked both ways by the slow test in tests/harness/test_profile_meta.py. ``device`` forces one."""
    import torch

    if device is None:
        device = "meta" if all(getattr(torch, each.dtype).is_floating_point for each in spec.input_specs()) else "cpu"
    if device == "meta":
        try:
            with torch.device("meta"):
                return _profile(spec, check_recurrent=True)
        except Exception:  # noqa: BLE001 - any failure on meta: profile with real tensors, whose errors are reported
            pass
    return _profile(spec)


class _Recurrent(Exception):
    """A recurrent layer: profiled on the CPU instead (see :func:`profile_model`)."""


def _profile(spec: ModelSpec, check_recurrent: bool = False) -> Profile:
    import torch

    torch.manual_seed(0)
    module = spec.instantiate().eval()
    if check_recurrent and any(isinstance(each, torch.nn.RNNBase) for each in module.modules()):
        raise _Recurrent(spec.id)
    params = sum(p.numel() for p in module.parameters())
    macs = run_forward(spec, module, count=True)
    inputs = {each.name: tuple(each.shape) for each in spec.inputs}
    return Profile(model=spec.id, params=params, macs=macs, input_shape=tuple(spec.input_shape), inputs=inputs)
