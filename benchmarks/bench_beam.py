"""Benchmark: SpecAugment's beam-search decoding, one utterance at a time against a whole batch at once.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_beam.py [--model las-2-128] [--utterances 16] [--beam 4]

Decodes the same ``utterances`` (random features of 200-400 frames, the length of the espeak-ng budget corpus's
test utterances; a randomly initialised LAS whose ``eos`` logit is pushed down, so that every search runs to
``--max-len`` as an under-trained model's does, the worst case) with
``reproductions.specaugment.model.recognize`` per utterance (the reference, as the test step did before) and with
``recognize_batch`` over the zero-padded batch. Prints both times, utterances per second, the ratio, and whether
the two gave the same best hypotheses.
"""

from __future__ import annotations

import argparse
import time

import torch

from nets.beam_search import BeamConfig
from reproductions.specaugment.model import las, recognize, recognize_batch
from reproductions.specaugment.system import BOS, EOS, VOCAB_SIZE


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="las-2-128")
    parser.add_argument("--utterances", type=int, default=16)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--max-len", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = las(args.model, vocab_size=VOCAB_SIZE).eval()
    with torch.no_grad():
        model.speller.output.bias[EOS] = -1e4
    lengths = torch.randint(200, 401, (args.utterances,))
    utterances = [torch.randn(int(n), 80, 3) for n in lengths]
    batch = torch.nn.utils.rnn.pad_sequence(utterances, batch_first=True)
    search = BeamConfig(bos=BOS, eos=EOS, beam_size=args.beam, max_len=args.max_len)
    with torch.inference_mode():
        alone_s, alone = timed(lambda: [recognize(model, x, len(x), search)[0] for x in utterances])
        batch_s, together = timed(lambda: [found[0] for found in recognize_batch(model, batch, lengths, search)])
    same = [a.tokens for a in alone] == [b.tokens for b in together]
    print(f"threads {torch.get_num_threads()}, {args.model}, beam {args.beam}, {args.utterances} utterances")
    for name, seconds in (("one at a time (reference)", alone_s), ("whole batch", batch_s)):
        print(f"{name:<28} {seconds:8.2f} s {args.utterances / seconds:8.2f} utterances/s")
    print(f"speed-up batch vs one at a time: {alone_s / batch_s:.2f} x; same best hypotheses: {same}")


if __name__ == "__main__":
    main()
