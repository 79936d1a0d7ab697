#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build directory (a STOF_FUZZ
# build: stof_core, stof_compiler, stof_codegen (NVRTC) and tests/fuzz, no nvcc) and runs
# each for SECONDS on a seed corpus its make_* tool writes: fuzz_plan_reader (plan files) and
# fuzz_onnx_import (ONNX models), then for SECONDS/2 each fuzz_compile (the whole
# compiler with offline code generation on fuzzed models), fuzz_mask_spec (mask
# specs) and fuzz_npy (.npy files), those with -rss_limit_mb=2048. Exits non-zero
# on a crash, a sanitizer report, a broken contract or an input slower than 10 s
# (60 s for fuzz_compile, which runs NVRTC); the input is kept in
# BUILD_DIR/crashes/<target>/ and replays with `BUILD_DIR/bin/<target> FILE`.
# Inputs that reach new code accumulate in BUILD_DIR/corpus/<target> across runs.
#   run_fuzz.sh SOURCE_DIR BUILD_DIR [SECONDS]     (default 60, per target)
set -euo pipefail
src=$1 build=$2 seconds=${3:-60}
command -v clang++ >/dev/null || { echo "run_fuzz.sh: clang++ not found (tools/setup.sh installs clang and libclang-rt-14-dev)"; exit 1; }
cmake -S "$src" -B "$build" -G Ninja -DSTOF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"
# fuzz TARGET "CORPUS_TOOL [ARGS]" WHAT SECONDS [libFuzzer options]
fuzz() {
    local target=$1 what=$3 seconds=$4
    local -a tool=($2)
    shift 4
    local seeds=$build/corpus/${target}_seeds corpus=$build/corpus/$target crashes=$build/crashes/$target
    rm -rf "$seeds"
    mkdir -p "$seeds" "$corpus" "$crashes"
    "$build/bin/${tool[0]}" "${tool[@]:1}" "$seeds"
    local log=$build/$target.log
    echo "run_fuzz.sh: fuzzing $what for $seconds s (log: $log)"
    if "$build/bin/$target" "$corpus" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
            -artifact_prefix="$crashes/" -print_final_stats=1 "$@" >"$log" 2>&1; then
        grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || tail -n 5 "$log"
    else
        tail -n 60 "$log"
        echo "run_fuzz.sh: the $what fuzzer failed; the failing input is in $crashes/"
        exit 1
    fi
}
fuzz fuzz_plan_reader make_plan_corpus "the plan reader" "$seconds" -dict="$src/tests/fuzz/plan_reader.dict" -max_len=32768
fuzz fuzz_onnx_import make_onnx_corpus "the ONNX importer" "$seconds" -dict="$src/tests/fuzz/onnx_import.dict" -max_len=16384
short=$(( (seconds + 1) / 2 ))
# NVRTC keeps allocations for the process's life: no leak detection in fuzz_compile. Later
# flags override the defaults above.
export STOF_FUZZ_CACHE=$build/fuzz_compile_cache
fuzz fuzz_compile make_onnx_corpus "the whole compiler" "$short" \
    -dict="$src/tests/fuzz/onnx_import.dict" -max_len=16384 -rss_limit_mb=2048 -timeout=60 -detect_leaks=0
fuzz fuzz_mask_spec "make_small_corpora mask_spec" "the mask spec parser" "$short" -max_len=512 -rss_limit_mb=2048
fuzz fuzz_npy "make_small_corpora npy" "the .npy reader" "$short" -max_len=4096 -rss_limit_mb=2048
