#!/usr/bin/env bash
# Shape ranges against exact shapes (docs/PERF.md): for each case, one range plan
# (`--shape seq=MIN..MAX`) and one plan per shape, fp16, --mask sliding:64, --tune off,
# batch 1; the range plan checked against `stofc eval` at each shape (stof-run
# --expect-dir, plain and as a CUDA graph), then both timed with stof-run --bench 300,
# plain and as a CUDA graph. Needs a GPU.
#   tools/bench/shape_ranges.sh BUILD_DIR OUT_DIR
# Results: OUT_DIR/summary.log (checks), OUT_DIR/latency.md (the table).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
B=$1/bin; O=$2; mkdir -p "$O"
S=$O/summary.log; : > "$S"
t0=$SECONDS
W=$O/work; rm -rf $W; mkdir -p $W
fails=0  # checks that failed

# inputs MODEL BATCH SEQ DIR: the model's zoo inputs cut to [BATCH, SEQ] (tiled along seq when longer).
inputs() {
    python3 - "$1" "$2" "$3" "$4" <<'PY'
import sys, glob, os, numpy as np
m, b, s, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.makedirs(d, exist_ok=True)
for f in glob.glob(f"{m}/inputs/*.npy"):
    a = np.load(f)
    a = np.tile(a, (1, (s + a.shape[1] - 1) // a.shape[1]))[:b, :s]
    if os.path.basename(f) == "attention_mask.npy":
        a = np.ones_like(a); a[-1, -5:] = 0
    np.save(os.path.join(d, os.path.basename(f)), np.ascontiguousarray(a))
PY
}

# case NAME MODEL RANGE EXTRA_FLAGS SHAPES...: a range plan and exact plans, checked and timed.
echo "| model | range | shape | bucket | exact plain ms | range plain ms | ratio | exact graph ms | range graph ms | ratio |" > "$O/latency.md"
echo "|---|---|---|---|---|---|---|---|---|---|" >> "$O/latency.md"
case_() {
    local name=$1 m=models/$2 range=$3 extra=$4; shift 4
    local flags="--precision fp16 --mask sliding:64 --tune off"
    $B/stofc compile $m/model.onnx $flags --shape batch=1 --shape seq=$range $extra -o $W/$name.range.plan > $W/$name.compile.log 2>&1 \
        || { echo "$name: range compile FAILED: $(tail -1 $W/$name.compile.log)" >> $S; fails=$((fails + 1)); return; }
    echo "$name: $(tail -1 $W/$name.compile.log)" >> $S
    local s
    for s in "$@"; do
        local d=$W/$name.$s; mkdir -p $d
        inputs $m 1 $s $d/in
        $B/stofc eval $m/model.onnx --inputs-dir $d/in --mask sliding:64 -o $d/ref > $d/eval.log 2>&1 || echo "$name seq $s: eval FAILED" >> $S
        $B/stof-run $W/$name.range.plan --inputs-dir $d/in --expect-dir $d/ref --rtol 3e-2 --atol 3e-2 --json > $d/check.json 2> $d/check.err
        local rc=$?; [ $rc -eq 0 ] || fails=$((fails + 1))
        echo "$name seq $s: range plan vs stofc eval rc=$rc $(python3 -c "import json;j=json.load(open('$d/check.json'));print(j.get('bucket'), [(o['name'], o.get('max_abs'), o.get('match')) for o in j.get('outputs', [])])" 2>&1)" >> $S
        $B/stof-run $W/$name.range.plan --inputs-dir $d/in --expect-dir $d/ref --rtol 3e-2 --atol 3e-2 --graph > $d/check-graph.out 2>&1
        rc=$?; [ $rc -eq 0 ] || fails=$((fails + 1))
        echo "$name seq $s: the same as a CUDA graph rc=$rc $(tail -1 $d/check-graph.out)" >> $S
        $B/stofc compile $m/model.onnx $flags --shape batch=1 --shape seq=$s -o $d/exact.plan > $d/exact.log 2>&1 || { echo "$name seq $s: exact compile FAILED" >> $S; fails=$((fails + 1)); continue; }
        local row="| $name | $range | 1x$s |" bucket="" g
        local -A ms=()
        for g in "" --graph; do
            for p in exact range; do
                local plan=$d/exact.plan; [ $p = range ] && plan=$W/$name.range.plan
                $B/stof-run $plan --inputs-dir $d/in --bench 300 --warmup 50 $g --json > $d/bench.$p$g.json 2> $d/bench.$p$g.err
                ms[$p$g]=$(python3 -c "import json;print('%.4f'%json.load(open('$d/bench.$p$g.json'))['latency_ms']['median'])" 2>/dev/null || echo nan)
                [ $p = range ] && bucket=$(python3 -c "import json;print(json.load(open('$d/bench.$p$g.json')).get('bucket'))" 2>/dev/null)
            done
        done
        r1=$(python3 -c "print('%.3f'%(${ms[range]}/${ms[exact]}))" 2>/dev/null || echo nan)
        r2=$(python3 -c "print('%.3f'%(${ms[range--graph]}/${ms[exact--graph]}))" 2>/dev/null || echo nan)
        echo "$row $bucket | ${ms[exact]} | ${ms[range]} | $r1 | ${ms[exact--graph]} | ${ms[range--graph]} | $r2 |" >> "$O/latency.md"
    done
}
case_ bert bert-torchscript 128..512 "" 200 300 500 2>>$O/errors.log
case_ llama llama-dynamo 128..1024 "" 200 512 1000 2>>$O/errors.log
case_ llama-b4 llama-dynamo 128..1024 "--shape-buckets 4" 200 512 1000 2>>$O/errors.log
echo "median latency over 300 runs, fp16, --mask sliding:64, --tune off, batch 1; llama-b4: --shape-buckets 4 ($((SECONDS-t0)) s)" >> $S
cat "$O/latency.md" >> $S
nvidia-smi -L >> $S 2>/dev/null
echo "$fails checks failed" >> $S
[ $fails -eq 0 ]
