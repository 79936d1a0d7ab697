#!/usr/bin/env bash
# tools/quickstart.sh — set up, build, compile the bundled default model
# (models/bert-torchscript) at S = 512 twice: dense attention (the model's padding
# only) and with a sparse mask whose empty tiles the kernels skip. With a GPU it checks
# the sparse plan against the reference with the same mask and times both plans.
#
#   tools/quickstart.sh [MASK_SPEC]        default: longformer:16:4
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mask=${1:-longformer:16:4}
model=$root/models/bert-torchscript
out=$root/build/quickstart
seq=512

"$root/tools/setup.sh" --no-thirdparty
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$jobs" --target stofc stof-run
bin=$root/build/bin
mkdir -p "$out"
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi

echo "== the mask: $mask at S = $seq (64x64 tiles: empty ones are skipped, full ones computed unmasked)"
"$bin/stofc" mask "$mask" --seq $seq --png "$out/mask.png" | grep -E "^(size|nnz|tiles)" || true
echo "== stofc compile, fp16: dense attention, then with --mask $mask"
"$bin/stofc" compile "$model/model.onnx" -o "$out/bert_dense.plan" --precision fp16 --shape batch=2 --shape seq=$seq
"$bin/stofc" compile "$model/model.onnx" -o "$out/bert.plan" --precision fp16 --mask "$mask" \
    --shape batch=2 --shape seq=$seq
"$bin/stofc" inspect "$out/bert.plan" | sed -n '/^masks/,/^kernels/p' | grep -v '^kernels'

if [ $gpu = 1 ]; then
    echo "== stof-run on $(nvidia-smi -L | head -n 1)"
    "$root/.venv/bin/python" - "$out/inputs" $seq <<'PY'
import sys, pathlib, numpy as np
d, s = pathlib.Path(sys.argv[1]), int(sys.argv[2])
d.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
np.save(d / "input_ids.npy", rng.integers(0, 512, (2, s), dtype=np.int64))
np.save(d / "attention_mask.npy", np.ones((2, s), np.int64))
np.save(d / "token_type_ids.npy", np.zeros((2, s), np.int64))
PY
    "$bin/stofc" eval "$model/model.onnx" --inputs-dir "$out/inputs" --mask "$mask" -o "$out/reference" >/dev/null
    "$bin/stof-run" "$out/bert.plan" --inputs-dir "$out/inputs" --expect-dir "$out/reference" \
        --rtol 3e-2 --atol 3e-2 --output-dir "$out/outputs"
    dense=$("$bin/stof-run" "$out/bert_dense.plan" --inputs-dir "$out/inputs" --bench 500 --graph --json |
            "$root/.venv/bin/python" -c "import json,sys; print(json.load(sys.stdin)['latency_ms']['median'])")
    sparse=$("$bin/stof-run" "$out/bert.plan" --inputs-dir "$out/inputs" --bench 500 --graph --json |
             "$root/.venv/bin/python" -c "import json,sys; print(json.load(sys.stdin)['latency_ms']['median'])")
    awk -v d="$dense" -v s="$sparse" -v m="$mask" 'BEGIN { printf "median latency: dense %.4f ms, %s %.4f ms: %.2fx faster\n", d, m, s, d / s }'
else
    echo "== no GPU on this machine: the plans are $out/bert.plan and $out/bert_dense.plan, compiled for sm_90"
    echo "   (the mask picture: $out/mask.png). Where an NVIDIA GPU is present, run this script again, or:"
    echo "   build/bin/stof-run $out/bert.plan --bench 200 --graph      (on an H100/H200; recompile for other GPUs)"
fi
