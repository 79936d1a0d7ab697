#!/usr/bin/env bash
# check_install.sh SOURCE BUILD WORK: `cmake --install BUILD` into WORK/prefix, then
# the installed stofc compiles a zoo model offline and a tiny C program built with
# find_package(stof) against the prefix opens (and, with a GPU, runs) that plan.
set -euo pipefail
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/stofc bin/stof-run lib/libstof.so include/stof/c_api.h lib/cmake/stof/stofConfig.cmake \
         lib/cmake/stof/stofConfigVersion.cmake lib/cmake/stof/stofTargets.cmake; do
  [ -e "$prefix/$f" ] || { echo "check_install: $f was not installed" >&2; exit 1; }
done
"$prefix/bin/stofc" --version
"$prefix/bin/stof-run" --version
STOF_LOG=warn "$prefix/bin/stofc" compile "$src/models/bert-torchscript/model.onnx" --shape batch=1 --shape seq=64 \
  --offline --arch sm_90 --cache-dir "$work/cache" -o "$work/bert.plan"
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || { cat "$work/consumer.log"; exit 1; }
[ "$(cat "$work/consumer/stofc_path.txt")" = "$prefix/bin/stofc" ] \
  || { echo "check_install: stof::stofc is $(cat "$work/consumer/stofc_path.txt"), not $prefix/bin/stofc" >&2; exit 1; }
"$work/consumer/consumer" "$work/bert.plan"
