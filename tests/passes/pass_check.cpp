#include "pass_check.hpp"

#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "stof/compare.hpp"
#include "test_util.hpp"

namespace stof::test {

Tensor scalar_f32(float v) {
    Tensor t(DType::f32, {});
    t.set_f64(0, v);
    return t;
}

const ir::Node* find_op(const ir::Graph& g, ir::Op op) {
    for (const ir::Node& n : g.nodes)
        if (n.op == op) return &n;
    return nullptr;
}

ir::Graph prepared(const std::string& onnx_bytes) {
    ir::Graph g = import_onnx_bytes(onnx_bytes, "", "test model");
    passes::bind_inputs(g, {});
    passes::infer_shapes(g, {});
    passes::fold_constants(g, {});
    g.verify();
    return g;
}

ir::Graph run_checked(const ir::Graph& g, void (*pass)(ir::Graph&, const PassOptions&), std::mt19937_64& rng, double rtol,
                      double atol) {
    ir::Graph after = g;
    pass(after, {});
    after.verify();
    TensorMap feeds;
    for (ir::ValueId i : g.inputs) feeds[g.value(i).name] = random_tensor(g.value(i).dtype, g.value(i).shape, rng);
    const TensorMap want = interpret(g, feeds), got = interpret(after, feeds);
    for (const auto& [name, t] : want) {
        INFO("output " << name);
        REQUIRE(got.count(name));
        CHECK(got.at(name).dtype == t.dtype);
        const Comparison c = compare(got.at(name), t, rtol, atol);
        INFO(describe(c, t, rtol, atol));
        CHECK(c.ok);
    }
    return after;
}

}  // namespace stof::test
