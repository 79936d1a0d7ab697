#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build directory (a STOF_FUZZ
# build: stof_core, stof_compiler and tests/fuzz, no CUDA) and runs each for SECONDS
# on a seed corpus its make_*_corpus tool writes: fuzz_plan_reader (plan files) and
# fuzz_onnx_import (ONNX models). Exits non-zero on a crash, a sanitizer report, a
# broken contract or an input slower than 10 s; the input is kept in
# BUILD_DIR/crashes/<target>/ and replays with `BUILD_DIR/bin/<target> FILE`.
# Inputs that reach new code accumulate in BUILD_DIR/corpus/<target> across runs.
#   run_fuzz.sh SOURCE_DIR BUILD_DIR [SECONDS]     (default 60, per target)
set -euo pipefail
src=$1 build=$2 seconds=${3:-60}
command -v clang++ >/dev/null || { echo "run_fuzz.sh: clang++ not found (tools/setup.sh installs clang and libclang-rt-14-dev)"; exit 1; }
cmake -S "$src" -B "$build" -G Ninja -DSTOF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"
# fuzz TARGET CORPUS_TOOL WHAT [libFuzzer options]
fuzz() {
    local target=$1 tool=$2 what=$3
    shift 3
    local seeds=$build/corpus/${target}_seeds corpus=$build/corpus/$target crashes=$build/crashes/$target
    rm -rf "$seeds"
    mkdir -p "$seeds" "$corpus" "$crashes"
    "$build/bin/$tool" "$seeds"
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
fuzz fuzz_plan_reader make_plan_corpus "the plan reader" -dict="$src/tests/fuzz/plan_reader.dict" -max_len=32768
fuzz fuzz_onnx_import make_onnx_corpus "the ONNX importer" -dict="$src/tests/fuzz/onnx_import.dict" -max_len=16384
