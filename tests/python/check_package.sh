#!/usr/bin/env bash
# check_package.sh SOURCE BUILD WORK PYTHON: `pip install .` of the checkout into a fresh virtual
# environment (no index: the build backend needs nothing; numpy is left out), then
# tests/python/test_package.py in it, and again under PYTHON (numpy, onnxruntime; torch where
# present) with the installed package on its path. The wheel reuses the build directory BUILD.
set -euo pipefail
src=$1 build=$2 work=$3 python=$4
rm -rf "$work"
mkdir -p "$work"
t0=$EPOCHREALTIME
"$python" -m venv "$work/venv"
t1=$EPOCHREALTIME
STOF_BUILD_DIR=$build "$work/venv/bin/pip" install --no-index --no-deps --quiet "$src" 2>"$work/pip.log" \
  || { cat "$work/pip.log"; exit 1; }
t2=$EPOCHREALTIME
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "check_package: venv %.1f s, pip install . %.1f s\n", b - a, c - b }'
cd "$work"
"$work/venv/bin/python" -c "import stofc; print('import stofc:', stofc.__version__, stofc.__file__)"
export STOF_SOURCE_DIR=$src STOF_TEST_WORK=$work/tests
"$work/venv/bin/python" "$src/tests/python/test_package.py"
site=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
PYTHONPATH=$site "$python" "$src/tests/python/test_package.py"
