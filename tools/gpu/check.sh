#!/usr/bin/env bash
# Build stofc on a GPU machine and run everything that needs the GPU:
#   tools/gpu/check.sh [OUT_DIR] [STEP...]
# Steps (default: build gpu-tests zoo sanitizer): also thirdparty (THIRDPARTY_TESTS=ctest regex; the
# models must be in ~/.cache/stofc/thirdparty), latency, dumps (DUMP_MODELS=dirs), bench, e2e, bandwidth,
# shapes, calibrate, gemm.
#   bandwidth: tools/bench/bandwidth.py (fused elementwise and row-norm kernels against PyTorch, TB/s).
#   gemm: stof_fused_gemm_bench (tools/bench/fused_gemm.cu) at GEMM_CASES (swiglu:M,N,K, rotary:M,N,K,R,D,S ...;
#         default LLaMA's MLP and Q/K/V projection).
#   shapes: tools/bench/shape_ranges.sh (range plans against exact-shape plans: outputs and latency).
#   bench: tools/bench/mha.py per grid; BENCH_GRIDS (default "paper targets"; also quick headdims
#          element gqa), BENCH_FLAGS (more mha.py flags, e.g. "--dtype bf16 --no-flash").
#   e2e:   tools/bench/e2e.py; E2E_GRID (paper, today or all; default paper), E2E_ONLY (regex of case
#          names), E2E_FLAGS (e.g. "--max-autotune --flex-flash"), E2E_BUDGET_S (cases start only within
#          this many seconds of check.sh's start, default 540, for one 10-minute call; inf: no limit).
#   FLASH_SITE: where tools/gpu/flash_wheels.sh installed flash-attn-4, for FlexAttention's FLASH backend.
#   STOF_CUTLASS_DIR: the CUTLASS tree CMake builds with where python3 has no nvidia-cutlass package
#     (cmake/cutlass.cmake; the wheel unzipped: its cutlass_library/source).
# Logs and JSON results go to OUT_DIR (default build-gpu/results); a failing
# step is reported and the remaining steps still run; exit status is non-zero
# when any step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-build-gpu/results}
shift || true
STEPS=${*:-build gpu-tests zoo sanitizer}
BUILD=build-gpu
mkdir -p "$OUT"
PY=$(command -v python3)
failed=()
export PYTHONUNBUFFERED=1
[ -z "${FLASH_SITE:-}" ] ||
    export PYTHONPATH="$FLASH_SITE:$FLASH_SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"

step() {  # step NAME COMMAND...: run, log to $OUT/NAME.log, time it
    local name=$1; shift
    case " $STEPS " in *" $name "*) ;; *) return 0 ;; esac
    local t0=$SECONDS
    echo "== $name"
    if "$@" >"$OUT/$name.log" 2>&1; then echo "   ok ($((SECONDS - t0)) s)"; else
        echo "   FAILED ($((SECONDS - t0)) s); last lines:"; tail -n 40 "$OUT/$name.log"; failed+=("$name"); fi
}

build() {
    nvidia-smi -L
    cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTOF_CUDA_ARCHITECTURES=90 \
        -DSTOF_PYTHON="$PY" &&
    cmake --build $BUILD -j"$(nproc)"
}
gpu_tests() { $BUILD/bin/stof_tests "[gpu]" --durations yes; }
zoo() { (cd $BUILD && ctest -R "zoo_run|zoo_mask_run|op_cases_run" -j8 --output-on-failure); }
thirdparty() { (cd $BUILD && ctest -R "${THIRDPARTY_TESTS:-thirdparty_}" -j4 --output-on-failure); }
sanitizer() {
    compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/bin/stof_kernel_tests "attention: small cases for compute-sanitizer" &&
    compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/bin/stof_tests "GPU mask conversion equals from_dense" &&
    compute-sanitizer --tool memcheck --error-exitcode 9 $BUILD/bin/stof_tests \
        "the box copy kernel pads and cuts many tensors in one launch like the host reference"
}
bench() {
    local g
    for g in ${BENCH_GRIDS:-paper targets}; do
        "$PY" tools/bench/mha.py --lib $BUILD/lib/libstof.so --grid "$g" ${BENCH_FLAGS:-} --json "$OUT/mha_$g.json" \
            --markdown "$OUT/mha_$g.md" || return 1
    done
}
dumps() {  # where each zoo model's fp32 plan first departs from the interpreter
    local m d=$BUILD/test_tmp/dumps
    for m in ${DUMP_MODELS:-models/*/}; do
        m=${m%/}; local n; n=$(basename "$m"); mkdir -p "$d/$n"
        local shp; shp=$("$PY" -c "import numpy as np,glob,os;print(' '.join('--shape %s=%s'%(os.path.basename(f)[:-4],'x'.join(map(str,np.load(f).shape))) for f in sorted(glob.glob('$m/inputs/*.npy'))))")
        $BUILD/bin/stofc compile "$m/model.onnx" -o "$d/$n/plan" $shp 2>&1 | tail -n 1
        $BUILD/bin/stof-run "$d/$n/plan" --inputs-dir "$m/inputs" --dump-dir "$d/$n/gpu"
        $BUILD/bin/stofc eval "$m/model.onnx" --inputs-dir "$m/inputs" --dump-dir "$d/$n/ref" >/dev/null
        echo "== $n"; "$PY" tools/compare_dumps.py "$d/$n/gpu" "$d/$n/ref" --show 3 | grep -v " ok " | head -20
    done
}
latency() {  # stof-run --bench of every zoo model, fp32 and fp16, plain and CUDA graph
    local m n p prec shp d=$BUILD/test_tmp/latency
    mkdir -p $d
    for m in models/*/; do
        m=${m%/}; n=$(basename "$m")
        [ -f "$m/model.onnx" ] || continue
        shp=$("$PY" -c "import numpy as np,glob,os;print(' '.join('--shape %s=%s'%(os.path.basename(f)[:-4],'x'.join(map(str,np.load(f).shape))) for f in sorted(glob.glob('$m/inputs/*.npy'))))")
        for prec in fp32 fp16; do
            p=$d/$n.$prec.plan
            $BUILD/bin/stofc compile "$m/model.onnx" -o "$p" --precision $prec $shp >/dev/null 2>&1 || { echo "$n $prec: compile failed"; return 1; }
            for g in "" --graph; do
                $BUILD/bin/stof-run "$p" --inputs-dir "$m/inputs" --bench 200 --warmup 20 $g --json > "$d/$n.$prec$g.json" 2>/dev/null || return 1
                "$PY" -c "import json,sys;j=json.load(open(sys.argv[1]));b=j['latency_ms'];print(f\"{sys.argv[2]:20s} {sys.argv[3]:5s} {sys.argv[4] or 'plain':8s} min {b['min']:.3f} median {b['median']:.3f} p99 {b['p99']:.3f} ms\")" "$d/$n.$prec$g.json" $n $prec "$g"
            done
        done
    done
}
e2e() {
    local grid=${E2E_GRID:-paper} budget=${E2E_BUDGET_S:-540}
    [ "$budget" = inf ] || budget=$((budget - SECONDS))
    "$PY" tools/bench/e2e.py --stofc $BUILD/bin/stofc --lib $BUILD/lib/libstof.so --work $BUILD/test_tmp/e2e \
        --grid "$grid" --only "${E2E_ONLY:-}" --budget-s "$budget" ${E2E_FLAGS:-} \
        --json "$OUT/e2e_$grid.json" --markdown "$OUT/e2e_$grid.md"
}
bandwidth() {
    "$PY" tools/bench/bandwidth.py --stofc $BUILD/bin/stofc --stof-run $BUILD/bin/stof-run --work $BUILD/test_tmp/bandwidth \
        --json "$OUT/bandwidth.json" --markdown "$OUT/bandwidth.md"
}
shapes() { tools/bench/shape_ranges.sh $BUILD "$OUT/shapes"; }
gemm() { $BUILD/bin/stof_fused_gemm_bench ${GEMM_CASES:-} > "$OUT/fused_gemm.md" && cat "$OUT/fused_gemm.md"; }
calibrate() { "$PY" tools/bench/calibrate_selector.py --lib $BUILD/lib/libstof.so --json "$OUT/calibration.json"; }

step build build
step gpu-tests gpu_tests
step zoo zoo
step thirdparty thirdparty
step sanitizer sanitizer
step bench bench
step dumps dumps
step latency latency
step e2e e2e
step bandwidth bandwidth
step shapes shapes
step calibrate calibrate
step gemm gemm
[ ${#failed[@]} -eq 0 ] || { echo "failed steps: ${failed[*]}"; exit 1; }
