#!/usr/bin/env bash
# FlexAttention's FLASH backend (flash-attn-4's CuTe-DSL kernels) for a GPU machine that has
# torch 2.11 and Python 3.12 but no network, carried as wheels:
#
#   tools/gpu/flash_wheels.sh download DIR        # where PyPI is reachable
#   tools/gpu/flash_wheels.sh install DIR TARGET  # on the GPU machine, once per carried part
#
# download: the pinned wheels (manylinux x86_64, CPython 3.12) into DIR/1, DIR/2 and DIR/3,
# the 92 MB nvidia-cutlass-dsl-libs-cu13 wheel split into three parts (split -n 3), one a
# folder, the small wheels spread over the folders, SHA256SUMS in each. Each folder is ~35 MB,
# so that the repository plus one folder stays within a 64 MiB transfer.
# install: copies the parts and wheels found under DIR/*/ to $FLASH_STAGE (default
# /tmp/stof-flash-wheels, outside the repository, kept between calls on the same machine);
# once all three parts are there, reassembles the wheel, checks every checksum, installs all
# wheels with pip --no-deps --target TARGET and checks that `flash_attn.cute` imports. Until
# then it says which parts are staged and exits 0. Then:
#   export PYTHONPATH=TARGET:TARGET/nvidia_cutlass_dsl/dsl_packages   (check.sh: FLASH_SITE=TARGET)
# e.g. three consecutive calls on one warm machine, each carrying one folder:
#   carry .whl/flash/1: tools/gpu/flash_wheels.sh install .whl/flash /tmp/flash
#   carry .whl/flash/2: the same
#   carry .whl/flash/3: tools/gpu/flash_wheels.sh install .whl/flash /tmp/flash &&
#                       FLASH_SITE=/tmp/flash tools/gpu/check.sh OUT bench
set -euo pipefail
WHEELS=(flash-attn-4==4.0.0b36 quack-kernels==0.6.5 apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5
        nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1
        nvidia-cutlass-dsl-libs-cu13==4.8.1)
SPLIT=nvidia_cutlass_dsl_libs_cu13-  # the wheel too large for one transfer
PARTS=3
usage() { echo "usage: $0 download DIR | install DIR TARGET" >&2; exit 2; }

download() {
    local dir=$1 all=$1/all w i n small
    rm -rf "$all" "$dir"/[1-9]
    mkdir -p "$all"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$all" "${WHEELS[@]}"
    n=$(find "$all" -name '*.whl' | wc -l)
    [ "$n" -eq ${#WHEELS[@]} ] || { echo "expected ${#WHEELS[@]} wheels in $all, found $n" >&2; exit 1; }
    (cd "$all" && sha256sum -- *.whl >SHA256SUMS)
    for i in $(seq 1 $PARTS); do mkdir -p "$dir/$i"; cp "$all/SHA256SUMS" "$dir/$i/"; done
    w=$(cd "$all" && ls $SPLIT*.whl)
    (cd "$all" && split -n $PARTS -a 1 "$w" "$w.part-")  # .part-a .part-b .part-c
    i=1
    for p in "$all/$w".part-?; do mv "$p" "$dir/$i/"; i=$((i + 1)); done
    rm "$all/$w"
    for small in $(cd "$all" && ls -S -- *.whl); do  # largest first, each into the lightest folder
        i=$(du -sb "$dir"/[1-9] | sort -n | head -n 1 | cut -f2)
        mv "$all/$small" "$i/"
    done
    rm -rf "$all"
    du -sh "$dir"/[1-9]
    echo "carry one folder a call (the repository plus the folder must stay within 64 MiB)"
}

install() {
    local dir=$1 target=$2 stage=${FLASH_STAGE:-/tmp/stof-flash-wheels} w have
    export PYTHONPATH="$target:$target/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
    if python3 -c "import flash_attn.cute" 2>/dev/null; then echo "flash_attn.cute already imports from $target"; return; fi
    compgen -G "$dir/[1-9]/*" >/dev/null || { echo "no carried folder under $dir (carry one of $dir/1..$PARTS)" >&2; exit 1; }
    mkdir -p "$stage"
    for w in "$dir"/[1-9]; do cp -f "$w"/* "$stage"/; done  # every folder carries the same SHA256SUMS
    have=$(find "$stage" -name "$SPLIT*.part-?" | wc -l)
    if [ "$have" -lt $PARTS ]; then
        echo "staged in $stage: $have of $PARTS parts of $SPLIT*.whl; carry the next folder of $dir"
        return
    fi
    for w in $(cd "$stage" && ls $SPLIT*.part-a); do cat "$stage/${w%.part-a}".part-? >"$stage/${w%.part-a}"; done
    (cd "$stage" && sha256sum -c --quiet SHA256SUMS)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" "$stage"/*.whl
    python3 -c "import flash_attn.cute" || { echo "flash_attn.cute does not import from $target" >&2; exit 1; }
    echo "flash-attn-4 installed: export PYTHONPATH=$PYTHONPATH"
}

case ${1:-} in
    download) [ $# -eq 2 ] || usage; download "$2" ;;
    install) [ $# -eq 3 ] || usage; install "$2" "$3" ;;
    *) usage ;;
esac
