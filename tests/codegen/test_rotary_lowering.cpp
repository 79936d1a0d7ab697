// Rotary inside the generated elementwise kernels (codegen/value_emitter.cpp): where all V
// lanes of a vector take one branch (h a multiple of V, the column the lane plus multiples
// of V) the partner half, cos and sin are vector loads, the partner's guarded by its branch;
// elsewhere the partner is read element by element. Every plan precision compiles with NVRTC,
// LLaMA's 16-bit plans with 16-byte vectors of 8 elements.
#include "compile.hpp"
#include "compile_options.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "test_util.hpp"
#include "zoo_model.hpp"

#include <filesystem>
#include <map>

using namespace stof;
using test::set_attr;

namespace {

constexpr int64_t kB = 2, kS = 8;

// m [B, S, (H + 2·Hk)·D] split into q, k, v heads [B, H, S, D]; q and k rotated (LLaMA's
// rotate-half, cos and sin [1, 1, S, D]); graph outputs q, k, v.
std::string split_rope(std::mt19937_64& rng, int64_t heads, int64_t kv_heads, int64_t d) {
    test::OnnxBuilder b(18);
    b.input("m", onnx::TensorProto::FLOAT, {kB, kS, (heads + 2 * kv_heads) * d});
    b.initializer("cos", test::random_tensor(DType::f32, {1, 1, kS, d}, rng));
    b.initializer("sin", test::random_tensor(DType::f32, {1, 1, kS, d}, rng));
    b.initializer("sizes", test::ints({heads * d, kv_heads * d, kv_heads * d}));
    set_attr(b.node("Split", {"m", "sizes"}, {"y_q", "y_k", "y_v"}), "axis", int64_t{-1});
    for (const char* p : {"q", "k", "v"}) {
        const std::string n = p;
        b.initializer(n + "_heads", test::ints({kB, kS, n == "q" ? heads : kv_heads, d}));
        b.node("Reshape", {"y_" + n, n + "_heads"}, {n + "_r"});
        set_attr(b.node("Transpose", {n + "_r"}, {n == "v" ? n : n + "_x"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
        b.output(n);
        if (n != "v") test::add_rotate_half(b, n + "_x", n, d);
    }
    return b.bytes();
}

// The sources of the plan's kernels that compute Rotary, by key (NVRTC compiles them all).
std::map<std::string, std::string> rotary_kernels(ir::Graph g, Precision p, const std::map<std::string, Shape>& shapes = {}) {
    CompileOptions opt = test::compile_options(p, "rotary.onnx");
    opt.pipeline.pass.input_shapes = shapes;
    std::map<std::string, std::string> out;
    opt.lower.on_kernel_source = [&](const std::string& key, const std::string& source) {
        if (key.find("rotary") != std::string::npos) out[key] = source;
    };
    const plan::Plan plan = compile_model(g, opt);
    CHECK(ir::count_ops(g, ir::Op::Rotary) >= 1);
    CHECK(!plan.kernels.empty());
    return out;
}

// Whether a kernel source reads the partner half of head dim d with guarded vector loads of V.
void check_partner_loads(const std::string& source, int64_t d, int vec, bool paired) {
    const std::string load = fmt::format("stof::load_vec<{}>(", vec);
    const std::string lo = fmt::format("% {}) < {})) {}", d, d / 2, load), hi = fmt::format("% {}) >= {})) {}", d, d / 2, load);
    CHECK((test::count(source, lo) > 0) == paired);
    CHECK((test::count(source, hi) > 0) == paired);
    if (paired) CHECK(test::count(source, load) >= 5);        // x, cos, sin and the two partner halves
    else if (vec > 1) CHECK(test::count(source, load) >= 1);  // x itself still is one
    else CHECK(test::count(source, "load_vec") == 0);
    CHECK(test::count(source, ") stof::load_vec<") == (paired ? test::count(source, lo) + test::count(source, hi) : 0));
}

}  // namespace

TEST_CASE("Rotary lowers into the elementwise kernels, vector loads where every lane takes one branch", "[cpu][codegen]") {
    auto rng = test::make_rng();
    struct Case {
        int64_t d;
        Precision p;
        int vec;      // the kernels' vector width: 16 bytes of the f32 outputs, 1 when D is no multiple of 4
        bool paired;  // h a multiple of the width: the partner half is a guarded vector load
    };
    for (const Case& c :
         {Case{16, Precision::fp16, 4, true}, Case{16, Precision::bf16, 4, true}, Case{8, Precision::fp32, 4, true},
          Case{12, Precision::fp32, 4, false}, Case{12, Precision::fp16, 4, false}, Case{10, Precision::bf16, 1, false}}) {
        INFO("D " << c.d << " " << precision_name(c.p));
        const std::map<std::string, std::string> kernels = rotary_kernels(
            import_onnx_bytes(split_rope(rng, 4, 2, c.d), "", "rotary"), c.p);
        REQUIRE(!kernels.empty());
        for (const auto& [key, source] : kernels) {
            INFO(key << "\n" << source);
            check_partner_loads(source, c.d, c.vec, c.paired);
        }
    }
    // LLaMA: the Rotary kernel writes the attention's q|k|v operand in the plan's type.
    for (const Precision p : {Precision::fp16, Precision::bf16}) {
        INFO("llama-dynamo " << precision_name(p));
        const std::filesystem::path dir = std::filesystem::path(test::source_dir()) / "models" / "llama-dynamo";
        const std::map<std::string, std::string> kernels = rotary_kernels(import_onnx_file((dir / "model.onnx").string()), p,
                                                                          test::stored_input_shapes(dir));
        REQUIRE(kernels.size() == 1);  // both layers' kernels are one source
        for (const auto& [key, source] : kernels) {
            INFO(key << "\n" << source);
            CHECK(key.rfind(fmt::format("ew_{}_rotary_reshape_", p == Precision::fp16 ? "f16" : "bf16"), 0) == 0);
            check_partner_loads(source, 64, 8, true);
        }
    }
}
