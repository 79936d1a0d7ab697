#!/usr/bin/env bash
# tools/quickstart.sh — set up, build, compile the bundled default model
# (models/bert-torchscript) at S = 512 with a sparse mask whose empty tiles the kernels
# skip, and models/llama-dynamo at S = 2048 with its own causal mask and with
# --mask sliding:128 on top. With a GPU it checks the BERT plan against the reference
# with the same mask and times the two LLaMA plans against each other.
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
echo "== stofc compile, fp16, --mask $mask"
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
fi

echo "== what skipping tiles buys: models/llama-dynamo at S = 2048, fp16, its causal mask, then & sliding:128"
llama=$root/models/llama-dynamo/model.onnx
for m in causal sliding; do
    extra=()
    [ $m = sliding ] && extra=(--mask sliding:128)
    STOF_LOG=warn "$bin/stofc" compile "$llama" -o "$out/llama_$m.plan" --precision fp16 --shape batch=1 \
        --shape seq=2048 "${extra[@]}"
    "$bin/stofc" inspect "$out/llama_$m.plan" --json | "$root/.venv/bin/python" -c \
        "import json,sys; m=json.load(sys.stdin)['masks'][0]; t=m['tiles']; print(f'   $m: {t[\"empty\"]} of {sum(t.values())} tiles skipped')"
done
if [ $gpu = 1 ]; then
    median() { "$bin/stof-run" "$1" --bench 200 --graph --json |
               "$root/.venv/bin/python" -c "import json,sys; print(json.load(sys.stdin)['latency_ms']['median'])"; }
    c=$(median "$out/llama_causal.plan")
    s=$(median "$out/llama_sliding.plan")
    awk -v c="$c" -v s="$s" 'BEGIN { printf "median latency: causal %.4f ms, causal & sliding:128 %.4f ms: %.2fx faster\n", c, s, c / s }'
else
    echo "== no GPU on this machine: the plans in $out are compiled for sm_90 (the mask picture: $out/mask.png)."
    echo "   Where an NVIDIA GPU is present, run this script again, or time a plan with"
    echo "   build/bin/stof-run $out/llama_sliding.plan --bench 200 --graph      (recompile for GPUs other than sm_90)"
fi
