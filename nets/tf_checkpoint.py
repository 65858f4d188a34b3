"""A TensorFlow checkpoint's variables, read from a NumPy dump: the one reader of the released TF checkpoints that
the converters map onto this repository's models (XLNet's, BERT's).

TensorFlow is not a dependency, and no small, maintained package reads a TF checkpoint (``*.index`` +
``*.data-00000-of-00001``) without it, so a checkpoint is dumped once, on any machine with TensorFlow, to an ``.npz``
keyed by the TF variable names::

    import numpy as np, tensorflow as tf
    reader = tf.train.load_checkpoint("uncased_L-12_H-768_A-12/bert_model.ckpt")  # the prefix, without .index
    np.savez("bert-base-uncased.npz", **{n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()})

The arrays keep TF's shapes (dense kernels ``(in, out)``); each converter transposes what its model needs, and
ignores what it does not map by name (optimiser slots ``*/adam_m``, ``*/adam_v``, ``global_step``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.errors import HarnessError

OPTIMIZER_SLOTS = ("/adam_m", "/adam_v")  # Adam's moments, saved beside each variable by the released training code


def read_dump(path: str | Path) -> dict[str, np.ndarray]:
    """The variables of the ``.npz`` dump at ``path``, TF name -> array; an unreadable file is an error naming it."""
    try:
        with np.load(path) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path}: cannot read the NumPy dump: {exc}") from exc


def is_bookkeeping(name: str) -> bool:
    """Whether a variable is the optimiser's or the step counter, not a weight of the model."""
    return name == "global_step" or name.endswith(OPTIMIZER_SLOTS)
