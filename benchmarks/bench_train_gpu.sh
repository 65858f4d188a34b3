#!/usr/bin/env bash
# Issue 19 item 5 on a lent GPU, as one prepared run: the device and software, then bench_train.py's eager modes
# (fp32, bf16, channels_last, both) for every distinct registered network, the paper's flagship models first, then
# torch.compile's modes for three models. Each phase has its own time limit, and bench_train.py writes its JSON row
# by row, so a phase stopped at its limit keeps what it measured. Output: ${OUT:-results/bench_train_gpu}.
#
#   PYTHONPATH=. bash benchmarks/bench_train_gpu.sh            # on the GPU machine, from the clone's root
#
# The project need not be installed there: the harness finds its plugins through paper_harness.egg-info (made by
# `pip install -e .` here) on PYTHONPATH, so carry that folder along with the working tree.
set -u
out=${OUT:-results/bench_train_gpu}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    $py -c "import torch, lightning; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'lightning', lightning.__version__, 'cudnn', torch.backends.cudnn.version(), \
'tf32 matmul', torch.backends.cuda.matmul.allow_tf32, 'tf32 cudnn', torch.backends.cudnn.allow_tf32)"
    nproc
} 2>&1 | tee "$out/device.txt"
ids=$($py - <<'PY'
from harness import registry

FIRST = ("efficientnet-b0", "mobilenetv3-large-1.0", "efficientnet-condconv-b0-8e", "aa-resnet50", "nasfpn-r50-7x256-640",
         "selfie-resnet50", "uda-wrn-28-2", "gpt", "xlnet-base", "uda-bert-base", "las-4-1024", "elmo-bilm",
         "ulmfit-awd-lstm-lm", "resnet-w4-standard")
ids = sorted(registry.models())
print(",".join([i for i in FIRST if i in ids] + [i for i in ids if i not in FIRST]))
PY
) || { echo "the harness does not import here"; exit 1; }
timeout "${EAGER_S:-270}" $py benchmarks/bench_train.py --device cuda --distinct --modes eager --models "$ids" \
    --json "$out/eager.json" >"$out/eager.log" 2>&1
echo "eager phase: exit $?, $(grep -c ' ms ' "$out/eager.log") rows, $(grep -c failed "$out/eager.log") failed"
timeout "${COMPILE_S:-220}" $py benchmarks/bench_train.py --device cuda --modes all \
    --models "${COMPILE_MODELS:-gpt,efficientnet-b0,aa-resnet50}" --json "$out/compile.json" >"$out/compile.log" 2>&1
echo "compile phase: exit $?"
cat "$out/compile.log"
grep -v ' x1.00$' "$out/eager.log" | head -60
