#!/usr/bin/env bash
# Builds the plan reader fuzzer with clang in its own build directory and runs it
# for a while on a seed corpus of real plans; fails on any crash or sanitizer report.
#   run_fuzz.sh SOURCE_DIR BUILD_DIR STOFC OP_CASES_DIR PYTHON [SECONDS]
set -euo pipefail
src=$1 build=$2 stofc=$3 cases=$4 python=$5 seconds=${6:-60}
command -v clang++ >/dev/null || { echo "run_fuzz.sh: clang++ not found (tools/setup.sh installs it)"; exit 1; }
cmake -S "$src" -B "$build" -G Ninja -DSTOF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_plan_reader
corpus=$build/corpus
rm -rf "$corpus" && mkdir -p "$corpus"
for c in Add_f32_bcast_op13 LayerNormalization_axisneg1_op17 MatMul_weight_init_op13 Gemm_transB_op13 Softmax_default_op13; do
    [ -f "$cases/$c/model.onnx" ] || continue
    "$stofc" compile "$cases/$c/model.onnx" -o "$corpus/$c.plan" --offline --arch sm_90 \
        $(cd "$cases/$c/inputs" && for f in *.npy; do "$python" -c "import numpy as np,sys;s=np.load(sys.argv[1]).shape;print(f'--shape {sys.argv[1][:-4]}='+'x'.join(map(str,s))) if s else None" "$f"; done) >/dev/null 2>&1
done
ls "$corpus"/*.plan >/dev/null 2>&1 || { echo "run_fuzz.sh: no seed plans were written"; exit 1; }
"$build/bin/fuzz_plan_reader" "$corpus" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>&1 | tail -n 25
