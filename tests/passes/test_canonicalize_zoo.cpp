// The canonicalization passes over real exports: every zoo model ends with its
// norms, GELUs and linear layers in canonical form and unchanged outputs.
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "pipeline.hpp"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace stof;
namespace fs = std::filesystem;

namespace {

// Linear layers are Add(MatMul(x, W), b [N]) wherever a constant bias follows a
// MatMul with a constant weight; no Gemm is left.
void check_linear_canonical(const ir::Graph& g) {
    CHECK(ir::count_ops(g, ir::Op::Gemm) == 0);
    std::vector<int> uses = g.use_counts();
    for (const ir::Node& add : g.nodes) {
        if (add.op != ir::Op::Add) continue;
        for (int side = 0; side < 2; ++side) {
            const ir::ValueId mm = add.inputs[static_cast<size_t>(side)], b = add.inputs[static_cast<size_t>(1 - side)];
            const ir::Value& bv = g.value(b);
            bool from_linear = false;
            for (const ir::Node& n : g.nodes)
                from_linear = from_linear || (n.op == ir::Op::MatMul && n.outputs[0] == mm && g.value(n.inputs[1]).data);
            if (!from_linear || !bv.data || uses[static_cast<size_t>(mm)] != 1) continue;
            INFO(add.label());
            CHECK(side == 0);
            CHECK(bv.shape == Shape{g.value(mm).shape.back()});
        }
    }
}

}  // namespace

TEST_CASE("every zoo model has canonical norms, GELUs, linear layers and patch embeddings", "[cpu][passes]") {
    int models = 0;
    for (const auto& d : fs::directory_iterator(test::source_dir() + "/models")) {
        if (!fs::exists(d.path() / "model.onnx")) continue;
        const std::string name = d.path().filename().string();
        INFO(name);
        ir::Graph g = import_onnx_file((d.path() / "model.onnx").string());
        PipelineOptions opt;
        TensorMap inputs;
        for (const auto& f : fs::directory_iterator(d.path() / "inputs")) {
            Tensor t = read_npy(f.path().string());
            opt.pass.input_shapes[f.path().stem().string()] = t.shape;
            inputs[f.path().stem().string()] = std::move(t);
        }
        opt.after_pass = [](const PassInfo&, const ir::Graph& cur) { cur.verify(); };
        run_pipeline(g, opt);
        INFO(ir::op_histogram(g));
        const std::string family = name.substr(0, name.find('-'));
        if (family == "llama" || family == "t5") {
            CHECK(ir::count_ops(g, ir::Op::RMSNorm) == 5);  // 2 layers x 2 + final
            CHECK(ir::count_ops(g, ir::Op::ReduceMean) == 0);
            CHECK(ir::count_ops(g, ir::Op::Sqrt) == 0);
            CHECK(ir::count_ops(g, ir::Op::Pow) == 0);
        } else {
            CHECK(ir::count_ops(g, ir::Op::LayerNormalization) == 5);
            CHECK(ir::count_ops(g, ir::Op::Gelu) == 2);  // one per layer
            CHECK(ir::count_ops(g, ir::Op::Erf) == 0);
            CHECK(ir::count_ops(g, ir::Op::Tanh) == 0);
            for (const ir::Node& n : g.nodes)
                if (n.op == ir::Op::Gelu) CHECK(n.attrs.s("approximate", "") == (family == "gpt2" ? "tanh" : "none"));
        }
        check_linear_canonical(g);
        CHECK(ir::count_ops(g, ir::Op::Conv) == 0);  // ViT's patch embedding is a linear layer
        const Tensor want = read_npy((d.path() / "expected" / "last_hidden_state.npy").string());
        const Tensor got = interpret(g, inputs).at("last_hidden_state");
        const Comparison c = compare(got, want, 1e-3, 1e-4);
        INFO(describe(c, want, 1e-3, 1e-4));
        CHECK(c.ok);
        ++models;
    }
    CHECK(models >= 10);
}

TEST_CASE("DINOv2's spelled-out LayerNorms and GELUs are fused", "[cpu][passes]") {
    const char* home = std::getenv("HOME");
    const fs::path path = fs::path(home ? home : "") / ".cache/stofc/thirdparty/vit/dinov2-vits14-focus.onnx";
    if (!fs::exists(path)) {
        std::printf("STOF-SKIP: %s is absent (tools/thirdparty/fetch.sh fetches it)\n", path.string().c_str());
        return;
    }
    ir::Graph g = import_onnx_file(path.string());
    PipelineOptions opt;
    opt.pass.input_shapes["input_image"] = {1, 3, 224, 224};
    run_pipeline(g, opt);
    g.verify();
    INFO(ir::op_histogram(g));
    CHECK(ir::count_ops(g, ir::Op::LayerNormalization) == 25);  // 12 layers x 2 + final
    CHECK(ir::count_ops(g, ir::Op::Gelu) == 12);
    CHECK(ir::count_ops(g, ir::Op::Erf) == 0);
    CHECK(ir::count_ops(g, ir::Op::Conv) == 0);  // the 14x14 patch embedding and the decoder's 1x1 convolution
    check_linear_canonical(g);
}
