#!/usr/bin/env bash
# Packs a Release build for a GPU machine that has the CUDA toolkit but no build of its own:
#   tools/gpu/pack_build.sh BUILD_DIR OUT.tar.xz [NAME]
# The archive holds one directory NAME (default: stof) with bin/stofc, bin/stof-run, lib/libstof.so
# and the test binaries stof_kernel_tests and stof_tests where the build has them, plus the shared
# libraries they load from outside the CUDA toolkit and the C/C++ runtime (protobuf, spdlog, fmt,
# png). There: tar xJf OUT.tar.xz -C DIR; export LD_LIBRARY_PATH=DIR/NAME:/usr/local/cuda/lib64.
# Build with -DSTOF_CUDA_ARCHITECTURES=90 for the H100/H200 (tools/bench/README.md).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: tools/gpu/pack_build.sh BUILD_DIR OUT.tar.xz [NAME]" >&2; exit 2; }
build=$1 out=$2 name=${3:-stof}
[ -x "$build/bin/stofc" ] && [ -f "$build/lib/libstof.so" ] ||
    { echo "pack_build: $build has no bin/stofc and lib/libstof.so (build it first)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
files=("$build/bin/stofc" "$build/bin/stof-run" "$build/lib/libstof.so")
for t in stof_kernel_tests stof_tests; do [ -x "$build/bin/$t" ] && files+=("$build/bin/$t"); done
cp "${files[@]}" "$stage/$name/"
# Libraries outside the CUDA toolkit and the C/C++ runtime that the GPU machine may lack or hold
# in other versions.
ldd "${files[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|cuda|cublas|nvrtc|libz\.so' |
    while read -r lib; do cp -L "$lib" "$stage/$name/"; done
tar cJf "$out" -C "$stage" "$name"
echo "pack_build: $out ($(du -h "$out" | cut -f1)): $(ls "$stage/$name" | tr '\n' ' ')"
