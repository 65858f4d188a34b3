"""Compare the converted biLM with TensorFlow outputs that allenai/bilm-tf ships as test fixtures (arXiv 1802.05365v2).

bilm-tf's ``tests/fixtures/model/`` holds a small biLM (``options.json``, ``lm_weights.hdf5``), sentences
(``lm_embeddings_sentences.json``: three lists of ten) and the top layer its TensorFlow graph computed for them
(``lm_embeddings_{k}.hdf5``: dataset ``str(i)``, ``(2 directions, n_words, P)``, for sentence ``i`` of list ``k``).
Its test runs ten batches, batch ``i`` holding sentence ``i`` of each list, with LSTM states carried from one batch
to the next; this model starts every sentence from zero states, so only batch 0 (fresh states) is comparable.
Nothing is copied from bilm-tf: the files are read where they lie.

    git clone https://github.com/allenai/bilm-tf
    python -m reproductions.elmo.check_bilm_tf bilm-tf/tests/fixtures/model
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

from reproductions.elmo.convert import load_released
from reproductions.elmo.model import char_mask, strip_boundaries
from tasks.tokenizers.elmo import batch_char_ids


def max_differences(folder: Path) -> list[float]:
    """Per sentence of batch 0: the largest absolute difference of the top layer, ours vs bilm-tf's."""
    import h5py

    lists = json.loads((folder / "lm_embeddings_sentences.json").read_text())
    batch = [sentences[0].strip().split() for sentences in lists]
    model = load_released(folder / "options.json", folder / "lm_weights.hdf5")
    chars = batch_char_ids(batch)
    with torch.no_grad():
        layers, _ = strip_boundaries(model(chars), char_mask(chars))
    differences = []
    for k, words in enumerate(batch):
        with h5py.File(folder / f"lm_embeddings_{k}.hdf5", "r") as expected_file:
            expected = expected_file["0"][()]
        expected = np.concatenate([expected[0], expected[1]], axis=-1)  # [forward; backward]
        differences.append(float(np.abs(layers[k, -1, : len(words)].numpy() - expected).max()))
    return differences


def main(argv: list[str] | None = None) -> None:
    folder = Path((argv or sys.argv[1:])[0])
    for k, difference in enumerate(max_differences(folder)):
        print(f"sentence list {k}, batch 0: max |ours - bilm-tf| = {difference:.3g}")


if __name__ == "__main__":
    main()
