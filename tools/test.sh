#!/usr/bin/env bash
# tools/test.sh — set up, build, and run the whole test suite (what CI runs).
#
#   tools/test.sh [ctest arguments...]     e.g. tools/test.sh -R npy
#
# Builds into build/ (binaries in build/bin). Tests that need a GPU report
# themselves as skipped where none is present. Then builds the libFuzzer targets
# with clang into build-fuzz/ and fuzzes the plan reader and the ONNX importer for STOF_FUZZ_SECONDS
# each (default 60; 0 skips them), the whole compiler, the mask spec parser and the .npy
# reader for half that; a crash fails the run (tests/fuzz/run_fuzz.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$jobs"
(cd "$root/build" && ctest --output-on-failure -j"$jobs" "$@")
fuzz_seconds=${STOF_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" != 0 ]; then
  "$root/tests/fuzz/run_fuzz.sh" "$root" "$root/build-fuzz" "$fuzz_seconds"
fi
