#!/usr/bin/env bash
# tools/quickstart.sh — set up, build, compile the bundled default model
# (models/bert-torchscript) with a sparse attention mask, and run the plan against
# the reference with the same mask where a GPU exists (else show what was produced).
#
#   tools/quickstart.sh [MASK_SPEC]        default: longformer:16:4
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mask=${1:-longformer:16:4}
model=$root/models/bert-torchscript
out=$root/build/quickstart

"$root/tools/setup.sh"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$jobs" --target stofc stof-run
bin=$root/build/bin
mkdir -p "$out"

echo "== the mask: $mask at S = 128"
"$bin/stofc" mask "$mask" --seq 128 --png "$out/mask.png"
echo "== stofc compile (fp16, mask $mask)"
"$bin/stofc" compile "$model/model.onnx" -o "$out/bert.plan" --precision fp16 --mask "$mask" \
    --shape batch=2 --shape seq=128
"$bin/stofc" inspect "$out/bert.plan" | sed -n '1,/^tensors/p;/^masks/,/^kernels/p;/^steps/,$p' | head -n 60

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    echo "== stof-run on $(nvidia-smi -L | head -n 1)"
    "$bin/stofc" eval "$model/model.onnx" --inputs-dir "$model/inputs" --mask "$mask" -o "$out/reference" >/dev/null
    "$bin/stof-run" "$out/bert.plan" --inputs-dir "$model/inputs" --expect-dir "$out/reference" \
        --rtol 3e-2 --atol 3e-2 --output-dir "$out/outputs" --bench 200 --graph
else
    echo "== no GPU on this machine: the plan is $out/bert.plan (the mask picture: $out/mask.png)."
    echo "   Run it where an NVIDIA GPU (sm_80 or newer) is present:"
    echo "   build/bin/stof-run $out/bert.plan --inputs-dir $model/inputs --bench 100"
fi
