#!/usr/bin/env bash
# tools/setup.sh — installs everything stofc needs to build and test, idempotently.
#
#   tools/setup.sh                   Debian/Ubuntu packages, .venv with onnx, onnxruntime, numpy, onnxscript,
#                                    and the third-party test models in ~/.cache/stofc/thirdparty
#   tools/setup.sh --no-thirdparty   the same without the third-party test models (tools/quickstart.sh;
#                                    the tests need them)
#
# Needs the CUDA toolkit (nvcc, NVRTC, cuBLAS) at $CUDA_HOME, /usr/local/cuda or on PATH.
# Packages are installed with apt-get (as root, or through sudo). When everything is
# present already it only checks and returns.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
thirdparty=1
case "${1:-}" in
  --no-thirdparty) thirdparty=0 ;;
  "") ;;
  *) printf 'setup: error: unknown argument %s (usage: tools/setup.sh [--no-thirdparty])\n' "$1" >&2; exit 2 ;;
esac
say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# --- CUDA toolkit -------------------------------------------------------------
nvcc_path=""
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null || true)"; do
  if [ -n "$c" ] && [ -x "$c" ]; then nvcc_path=$c; break; fi
done
[ -n "$nvcc_path" ] || die "the CUDA toolkit was not found (no nvcc in \$CUDA_HOME/bin, /usr/local/cuda/bin or PATH).
Install CUDA 12 or 13 (nvcc, NVRTC, cuBLAS) from https://developer.nvidia.com/cuda-downloads and re-run."
cuda_root=$(cd "$(dirname "$nvcc_path")/.." && pwd)
for lib in libnvrtc.so libcublasLt.so libcudart.so; do
  ls "$cuda_root"/lib64/$lib* "$cuda_root"/lib/$lib* >/dev/null 2>&1 \
    || ls "$cuda_root"/targets/*/lib/$lib* >/dev/null 2>&1 \
    || die "the CUDA toolkit at $cuda_root lacks $lib; install its NVRTC and cuBLAS components"
done
say "CUDA toolkit: $cuda_root ($("$nvcc_path" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"

# --- system packages ------------------------------------------------------------
packages=(cmake ninja-build g++ pkg-config libprotobuf-dev protobuf-compiler libonnx-dev libcli11-dev
          libspdlog-dev libfmt-dev nlohmann-json3-dev catch2 libpng-dev clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get to install them"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "missing packages (${missing[*]}); run as root or install sudo"
    sudo=sudo
  fi
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >/dev/null || die "apt-get update failed (no network?)"
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
fi
say "system packages: ok"

# --- python virtual environment -------------------------------------------------
python=${PYTHON:-python3}
command -v "$python" >/dev/null || die "no python3 found (set PYTHON=/path/to/python3.10+)"
venv="$root/.venv"
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$root/tools/requirements.txt" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "creating $venv"
  "$python" -m venv "$venv" || die "python -m venv failed (on Debian: apt-get install python3-venv)"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null || die "pip upgrade failed (no network?)"
  "$venv/bin/python" -m pip install -q -r "$root/tools/requirements.txt" || die "pip install -r tools/requirements.txt failed"
  echo "$want" >"$stamp"
fi
"$venv/bin/python" -c "import onnx, onnxruntime, numpy" || die "the virtual environment at $venv is broken; delete it and re-run"
# CUTLASS's C++ headers, for the fused GEMM kernels (kernels/gemm; cmake/cutlass.cmake finds them
# in .venv): the nvidia-cutlass package alone, without the Python packages its own tools need.
cutlass_version=4.2.0.0
if [ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('nvidia-cutlass'))" 2>/dev/null)" != "$cutlass_version" ]; then
  say "installing nvidia-cutlass $cutlass_version (CUTLASS headers)"
  "$venv/bin/python" -m pip install -q --no-deps "nvidia-cutlass==$cutlass_version" \
    || die "pip install nvidia-cutlass==$cutlass_version failed (no network?)"
fi
say "python environment: $venv"

# --- third-party ONNX exports used by the tests ---------------------------------
if [ "$thirdparty" = 0 ]; then
  say "third-party test models: skipped (--no-thirdparty)"
  exit 0
fi
"$root/tools/thirdparty/fetch.sh" "$HOME/.cache/stofc/thirdparty" "$venv/bin/python" | sed 's/^/setup: /' \
  || die "could not fetch the third-party test models (tools/thirdparty/fetch.sh)"
"$venv/bin/python" "$root/tools/thirdparty/onnxscript_models.py" "$HOME/.cache/stofc/thirdparty" | sed 's/^/setup: /' \
  || die "could not build the onnxscript test models (tools/thirdparty/onnxscript_models.py)"
