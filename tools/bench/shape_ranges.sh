#!/usr/bin/env bash
# Shape ranges against exact shapes (docs/PERF.md): for each case, one range plan
# (`--shape seq=MIN..MAX`) and one plan per shape, fp16, --mask sliding:64, --tune off,
# batch 1; the range plan checked at each shape (stof-run --expect-dir, plain and as a
# CUDA graph) against `stofc eval`, or for the BERT-base case against the exact plan's
# outputs, then both timed with stof-run --bench 300, plain and as a CUDA graph. The
# zoo models are tiny (the fixed cost of a range plan at its largest); bert-base is a
# BERT-base-sized encoder (12 layers, hidden 768) built by transformers from a config
# with random weights and exported here, also with `--shape-buckets 8` (bert-base-b8:
# buckets at most 9 % apart; nothing is downloaded; skipped with a line in
# the summary where torch or transformers is missing, or left out with SHAPES_LARGE=0).
# Needs a GPU.
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

# bert_base DIR: the BERT-base-sized encoder as DIR/model.onnx (TorchScript exporter, opset 17,
# dynamic batch and seq) with inputs DIR/inputs/*.npy ([2, 128]), as the zoo's bert-torchscript.
bert_base() {
    python3 - "$1" <<'PY'
import os, sys, numpy as np, torch, transformers
d = sys.argv[1]
os.makedirs(f"{d}/inputs", exist_ok=True)
torch.manual_seed(0)
config = transformers.BertConfig(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072)
model = transformers.BertModel(config, add_pooling_layer=False).eval()
names = ("input_ids", "attention_mask", "token_type_ids")
class LastHidden(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
    def forward(self, *args):
        return self.m(**dict(zip(names, args)), return_dict=True).last_hidden_state
rng = np.random.default_rng(0)
feeds = {"input_ids": rng.integers(0, config.vocab_size, size=(2, 128), dtype=np.int64),
         "attention_mask": np.ones((2, 128), dtype=np.int64), "token_type_ids": np.zeros((2, 128), dtype=np.int64)}
for n, a in feeds.items():
    np.save(f"{d}/inputs/{n}.npy", a)
axes = {n: {0: "batch", 1: "seq"} for n in names + ("last_hidden_state",)}
with torch.no_grad():
    torch.onnx.export(LastHidden(model), tuple(torch.from_numpy(feeds[n]) for n in names), f"{d}/model.onnx",
                      dynamo=False, opset_version=17, input_names=list(names), output_names=["last_hidden_state"],
                      dynamic_axes=axes)
PY
}

# case NAME MODEL_DIR RANGE EXTRA_FLAGS REFERENCE SHAPES...: a range plan and exact plans, checked
# (REFERENCE: eval = stofc eval, exact = the exact plan's outputs) and timed.
echo "| model | range | shape | bucket | exact plain ms | range plain ms | ratio | exact graph ms | range graph ms | ratio |" > "$O/latency.md"
echo "|---|---|---|---|---|---|---|---|---|---|" >> "$O/latency.md"
case_() {
    local name=$1 m=$2 range=$3 extra=$4 ref=$5; shift 5
    local flags="--precision fp16 --mask sliding:64 --tune off"
    $B/stofc compile $m/model.onnx $flags --shape batch=1 --shape seq=$range $extra -o $W/$name.range.plan > $W/$name.compile.log 2>&1 \
        || { echo "$name: range compile FAILED: $(tail -1 $W/$name.compile.log)" >> $S; fails=$((fails + 1)); return; }
    echo "$name: $(tail -1 $W/$name.compile.log)" >> $S
    local s
    for s in "$@"; do
        local d=$W/$name.$s; mkdir -p $d
        inputs $m 1 $s $d/in
        if [ $ref = eval ]; then
            $B/stofc eval $m/model.onnx --inputs-dir $d/in --mask sliding:64 -o $d/ref > $d/eval.log 2>&1 || echo "$name seq $s: eval FAILED" >> $S
        else
            $B/stofc compile $m/model.onnx $flags --shape batch=1 --shape seq=$s -o $d/exact.plan > $d/exact.log 2>&1 &&
                $B/stof-run $d/exact.plan --inputs-dir $d/in -o $d/ref > $d/ref.log 2>&1 || echo "$name seq $s: exact plan outputs FAILED" >> $S
        fi
        $B/stof-run $W/$name.range.plan --inputs-dir $d/in --expect-dir $d/ref --rtol 3e-2 --atol 3e-2 --json > $d/check.json 2> $d/check.err
        local rc=$?; [ $rc -eq 0 ] || fails=$((fails + 1))
        echo "$name seq $s: range plan vs $ref rc=$rc $(python3 -c "import json;j=json.load(open('$d/check.json'));print(j.get('bucket'), [(o['name'], o.get('max_abs'), o.get('match')) for o in j.get('outputs', [])])" 2>&1)" >> $S
        $B/stof-run $W/$name.range.plan --inputs-dir $d/in --expect-dir $d/ref --rtol 3e-2 --atol 3e-2 --graph > $d/check-graph.out 2>&1
        rc=$?; [ $rc -eq 0 ] || fails=$((fails + 1))
        echo "$name seq $s: the same as a CUDA graph rc=$rc $(tail -1 $d/check-graph.out)" >> $S
        [ -f $d/exact.plan ] || $B/stofc compile $m/model.onnx $flags --shape batch=1 --shape seq=$s -o $d/exact.plan > $d/exact.log 2>&1 || { echo "$name seq $s: exact compile FAILED" >> $S; fails=$((fails + 1)); continue; }
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
case_ bert models/bert-torchscript 128..512 "" eval 200 300 500 2>>$O/errors.log
case_ llama models/llama-dynamo 128..1024 "" eval 200 512 1000 2>>$O/errors.log
case_ llama-b4 models/llama-dynamo 128..1024 "--shape-buckets 4" eval 200 512 1000 2>>$O/errors.log
if [ "${SHAPES_LARGE:-1}" = 0 ]; then
    echo "bert-base: left out (SHAPES_LARGE=0)" >> $S
elif bert_base $W/bert-base > $W/bert-base.export.log 2>&1; then
    case_ bert-base $W/bert-base 128..512 "" exact 200 256 500 2>>$O/errors.log
    case_ bert-base-b8 $W/bert-base 128..512 "--shape-buckets 8" exact 200 300 500 2>>$O/errors.log
else
    echo "bert-base: skipped, the export failed: $(tail -1 $W/bert-base.export.log)" >> $S
fi
echo "median latency over 300 runs, fp16, --mask sliding:64, --tune off, batch 1; llama-b4: --shape-buckets 4; bert-base: 12 layers, hidden 768; bert-base-b8: --shape-buckets 8 ($((SECONDS-t0)) s)" >> $S
cat "$O/latency.md" >> $S
nvidia-smi -L >> $S 2>/dev/null
echo "$fails checks failed" >> $S
[ $fails -eq 0 ]
