#!/usr/bin/env bash
# Builds the plan reader fuzzer with clang in its own build directory (a STOF_FUZZ
# build: stof_core and tests/fuzz only, no CUDA) and runs it for SECONDS on a seed
# corpus written by make_plan_corpus. Exits non-zero on a crash, a sanitizer report,
# a failed round trip or an input slower than 10 s; the input is kept in
# BUILD_DIR/crashes/ and replays with `BUILD_DIR/bin/fuzz_plan_reader FILE`.
# Inputs that reach new code accumulate in BUILD_DIR/corpus/plan_reader across runs.
#   run_fuzz.sh SOURCE_DIR BUILD_DIR [SECONDS]     (default 60)
set -euo pipefail
src=$1 build=$2 seconds=${3:-60}
command -v clang++ >/dev/null || { echo "run_fuzz.sh: clang++ not found (tools/setup.sh installs clang and libclang-rt-14-dev)"; exit 1; }
cmake -S "$src" -B "$build" -G Ninja -DSTOF_FUZZ=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"
seeds=$build/corpus/plan_reader_seeds corpus=$build/corpus/plan_reader crashes=$build/crashes
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$crashes"
"$build/bin/make_plan_corpus" "$seeds"
log=$build/fuzz_plan_reader.log
echo "run_fuzz.sh: fuzzing the plan reader for $seconds s (log: $log)"
if "$build/bin/fuzz_plan_reader" "$corpus" "$seeds" -dict="$src/tests/fuzz/plan_reader.dict" \
        -max_total_time="$seconds" -max_len=32768 -timeout=10 -artifact_prefix="$crashes/" -print_final_stats=1 \
        >"$log" 2>&1; then
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || tail -n 5 "$log"
else
    tail -n 60 "$log"
    echo "run_fuzz.sh: the plan reader fuzzer failed; the failing input is in $crashes/"
    exit 1
fi
