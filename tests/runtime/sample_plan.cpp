#include "sample_plan.hpp"

#include "stof/sparse_mask.hpp"

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace stof::test {

namespace {

using namespace stof::plan;

int32_t add_tensor(Plan& p, const std::string& name, DType dt, Shape shape, BufferKind buffer, uint64_t offset,
                   TensorRole role) {
    TensorDesc t;
    t.name = name;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.buffer = buffer;
    t.offset = offset;
    t.role = role;
    p.tensors.push_back(t);
    return static_cast<int32_t>(p.tensors.size() - 1);
}

Arg pointer(int32_t tensor, uint64_t byte_offset) {
    Arg a;
    a.kind = ParamKind::pointer;
    a.tensor = tensor;
    a.byte_offset = byte_offset;
    return a;
}
Arg scalar_i(ParamKind kind, int64_t v) {
    Arg a;
    a.kind = kind;
    a.i = v;
    return a;
}
Arg scalar_f(float v) {
    Arg a;
    a.kind = ParamKind::f32;
    a.f = v;
    return a;
}

Step make_step(StepKind kind, const std::string& label, const std::string& nodes) {
    Step s;
    s.kind = kind;
    s.label = label;
    s.nodes = nodes;
    return s;
}

}  // namespace

Plan sample_plan(uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto random_bytes = [&](size_t n) {
        std::vector<uint8_t> b(n);
        for (uint8_t& v : b) v = static_cast<uint8_t>(rng());
        return b;
    };

    Plan p;
    p.meta = {"sample.onnx",
              "0.1.0-test",
              "sm_90",
              "13.0",
              "fp16",
              "2026-11-22T00:00:00Z",
              "--mask 'causal|global:1' (notes are UTF-8: \xc3\xbc\xc3\xaf)"};

    // batch 2, seq 16, hidden 32 = 2 heads × 16; f16 unless noted.
    const int32_t x = add_tensor(p, "x", DType::f16, {2, 16, 32}, BufferKind::arena, 0, TensorRole::input);
    const int32_t pad = add_tensor(p, "attention_mask", DType::i64, {2, 16}, BufferKind::arena, 2048, TensorRole::input);
    p.tensors[pad].int_lo = 0;
    p.tensors[pad].int_hi = 1;
    const int32_t w = add_tensor(p, "w_qkv", DType::f16, {96, 32}, BufferKind::weights, 0, TensorRole::weight);
    const int32_t b = add_tensor(p, "b_qkv", DType::f16, {96}, BufferKind::weights, 6144, TensorRole::weight);
    const int32_t bias = add_tensor(p, "rel_bias", DType::f16, {2, 16, 16}, BufferKind::weights, 6400, TensorRole::weight);
    const int32_t qkv = add_tensor(p, "qkv", DType::f16, {2, 16, 96}, BufferKind::arena, 2304, TensorRole::intermediate);
    const int32_t words = add_tensor(p, "key_valid", DType::i64, {2, 1}, BufferKind::arena, 8448, TensorRole::intermediate);
    const int32_t attn = add_tensor(p, "attn", DType::f16, {2, 16, 32}, BufferKind::arena, 8704, TensorRole::intermediate);
    const int32_t y = add_tensor(p, "y", DType::f16, {2, 16, 32}, BufferKind::arena, 10752, TensorRole::output);
    const int32_t attn_out = add_tensor(p, "attn_out", DType::f16, {2, 16, 32}, BufferKind::arena, 12800, TensorRole::output);
    p.tensors[y].int_lo = -7;  // stored for every tensor, meaningful for inputs only
    p.arena_bytes = 14848;
    p.inputs = {x, pad};
    p.outputs = {y, attn_out};
    p.weights = random_bytes(7424 + 44);  // the tensors use 7424; the tail is unused padding

    KernelDesc k0;
    k0.key = "ew_f16_add_gelu_b4_sm90";
    k0.entry = "ew_add_gelu";
    k0.arch = "sm_90";
    k0.cubin = random_bytes(300);
    std::memcpy(k0.cubin.data(),
                "\x7f"
                "ELF",
                4);
    k0.ptx = ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry ew_add_gelu()\n{\n\tret;\n}\n";
    k0.params = {ParamKind::pointer, ParamKind::pointer, ParamKind::pointer, ParamKind::i32, ParamKind::i64, ParamKind::f32};
    KernelDesc k1;
    k1.key = "rownorm_f16_layernorm_w4_sm90";
    k1.entry = "rownorm_layernorm";
    k1.ptx = ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry rownorm_layernorm()\n{\n\tret;\n}\n";
    k1.params = {ParamKind::pointer, ParamKind::pointer, ParamKind::i32, ParamKind::f32};
    p.kernels = {k0, k1};

    // Mask 0: causal | global:1 on 16×16 in 8×8 tiles (full, partial and empty tiles).
    std::vector<uint8_t> keep(16 * 16);
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) keep[i * 16 + j] = j <= i || i == 0 || j == 0;
    MaskEntry m0;
    m0.spec = "causal|global:1";
    m0.kernel_reason = "block-wise: rho 0.75 above the row-wise threshold";
    m0.mask = from_dense(keep.data(), 1, 1, 16, 16, 8, 8);
    // Mask 1: per head on 24×20 in 16×8 tiles (edge tiles cut by the matrix):
    // head 0 sliding:3, head 1 random.
    std::vector<uint8_t> keep2(2 * 24 * 20);
    for (int i = 0; i < 24; ++i)
        for (int j = 0; j < 20; ++j) {
            keep2[i * 20 + j] = i - j <= 3 && j - i <= 3;
            keep2[24 * 20 + i * 20 + j] = rng() % 3 == 0;
        }
    MaskEntry m1;
    m1.spec = "file:heads.npy";
    m1.kernel_reason = "";
    m1.mask = from_dense(keep2.data(), 1, 2, 24, 20, 16, 8);
    p.masks = {m0, m1};

    // qkv[b] = x[b] · w_qkvᵀ + b_qkv: [16, 32] · [32, 96] per batch, w shared.
    Step gemm = make_step(StepKind::gemm, "gemm", "q_proj,k_proj,v_proj");
    GemmStep& g = gemm.gemm;
    g.a = x, g.b = w, g.d = qkv, g.bias = b;
    g.trans_b = true;
    g.m = 16, g.n = 96, g.k = 32, g.batch = 2;
    g.lda = 32, g.ldb = 32, g.ldd = 96;
    g.batch_stride_a = 512, g.batch_stride_d = 1536;
    g.alpha = 0.5f;
    g.epilogue = Epilogue::bias;
    p.steps.push_back(gemm);

    Step kv = make_step(StepKind::key_valid, "key_valid", "attention_mask");
    kv.key_valid = {pad, words, 2, 16};
    p.steps.push_back(kv);

    // q, k, v: [2, 2, 16, 16] views of qkv [2, 16, 3 × 32]; o: [2, 2, 16, 16] view of attn.
    Step at = make_step(StepKind::attention, "attention", "attn_0");
    AttentionStep& a = at.attention;
    a.q = {qkv, 0, 1536, 16, 96};
    a.k = {qkv, 64, 1536, 16, 96};
    a.v = {qkv, 128, 1536, 16, 96};
    a.o = {attn, 0, 512, 16, 32};
    a.batch = 2, a.heads = 2, a.kv_heads = 2, a.seq_q = 16, a.seq_k = 16, a.head_dim = 16;
    a.scale = 0.25f;
    a.mask = 0;
    a.key_valid = words;
    a.bias = bias;
    a.bias_stride_h = 256, a.bias_stride_s = 16;
    a.kernel = 1;
    p.steps.push_back(at);

    Step l0 = make_step(StepKind::launch, "fused", "add_0,gelu_0");
    l0.launch.kernel = 0;
    l0.launch.grid[0] = 4;
    l0.launch.block[0] = 256;
    l0.launch.args = {pointer(attn, 0),
                      pointer(x, 0),
                      pointer(y, 0),
                      scalar_i(ParamKind::i32, 1024),
                      scalar_i(ParamKind::i64, -5000000000),
                      scalar_f(0.70710677f)};
    p.steps.push_back(l0);

    Step l1 = make_step(StepKind::launch, "layernorm", "ln_0");
    l1.launch.kernel = 1;
    l1.launch.grid[0] = 16, l1.launch.grid[1] = 2;
    l1.launch.block[0] = 32, l1.launch.block[1] = 4;
    l1.launch.shared_bytes = 2048;
    l1.launch.args = {pointer(y, 0), pointer(b, 64), scalar_i(ParamKind::i32, 32), scalar_f(1e-5f)};
    p.steps.push_back(l1);

    Step cp = make_step(StepKind::copy, "copy", "attn_out");
    cp.copy = {attn, attn_out, 1024, 512, 1024};
    p.steps.push_back(cp);
    p.segments = {{"elementwise", "elementwise", "block=128,vec=1", "measured", 3.25f, "expand: merge 'a' into 'b'",
                   "mul_0,add_0", 24, 3.25f, "block=128,vec=1", 3.0f, "block=512,vec=1"},
                  {"gemm", "cublasLt", "default", "rule", -1, "", "matmul_0"}};
    return p;
}

Plan minimal_plan() { return copy_plan(4); }

Plan copy_plan(int64_t n) {
    Plan p;
    p.meta.stofc_version = "0.1.0-test";
    const int32_t in = add_tensor(p, "in", DType::f32, {n}, BufferKind::arena, 0, TensorRole::input);
    const uint64_t bytes = static_cast<uint64_t>(n) * 4, slot = (bytes + 255) / 256 * 256;
    const int32_t out = add_tensor(p, "out", DType::f32, {n}, BufferKind::arena, slot, TensorRole::output);
    p.arena_bytes = 2 * slot;
    p.inputs = {in};
    p.outputs = {out};
    Step cp = make_step(StepKind::copy, "copy", "identity");
    cp.copy = {in, out, 0, 0, bytes};
    p.steps.push_back(cp);
    return p;
}

Plan ranged_plan() {
    Plan p;
    p.meta.stofc_version = "0.1.0-test";
    p.ranges.vars = {{"n", 3, 8}};
    p.ranges.input_dims = {{0}};
    p.ranges.output_dims = {{0}};
    for (int64_t n : {4, 8}) {
        p.ranges.bucket_values.push_back({n});
        p.buckets.push_back(copy_plan(n));
    }
    return p;
}

}  // namespace stof::test
