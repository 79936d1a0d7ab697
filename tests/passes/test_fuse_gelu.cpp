// fuse-gelu: the erf and tanh spellings of GELU become one Gelu with the
// matching `approximate`; near-misses stay; results are unchanged.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"

#include <set>

using namespace stof;

namespace {

struct N {
    std::string op;
    std::vector<std::string> in;
    std::string out;
};

// Inputs x and (when read) y: [2, 3, 8] f32; "#v" names a scalar constant v.
// The last node's output is the model output "out"; `extra` are outputs too.
std::string model(const std::vector<N>& nodes, const std::vector<std::string>& extra = {}) {
    test::OnnxBuilder b(17);
    b.input("x", onnx::TensorProto::FLOAT, {2, 3, 8});
    std::set<std::string> seen;
    for (const N& n : nodes)
        for (const std::string& i : n.in) {
            if (!seen.insert(i).second) continue;
            if (i[0] == '#') b.initializer(i, test::scalar_f32(std::stof(i.substr(1))));
            if (i == "y") b.input("y", onnx::TensorProto::FLOAT, {2, 3, 8});
        }
    for (const N& n : nodes) b.node(n.op, n.in, {n.out});
    b.node("Identity", {nodes.back().out}, {"out"});
    b.output("out");
    for (const std::string& e : extra) b.output(e);
    return b.bytes();
}

const std::string kSqrt2 = "#1.4142135", kInvSqrt2 = "#0.70710678", kSqrt2Pi = "#0.7978845834732056",
                  kCubic = "#0.044714998453855515";

// 0.5·x·(1 + Erf(x/√2)) as BERT's TorchScript export spells it, with `half` for 0.5.
std::vector<N> erf_bert(const std::string& sqrt2 = kSqrt2, const std::string& half = "#0.5") {
    return {{"Div", {"x", sqrt2}, "t"},
            {"Erf", {"t"}, "e"},
            {"Add", {"e", "#1"}, "a"},
            {"Mul", {"x", "a"}, "m"},
            {"Mul", {"m", half}, "g"}};
}

// 0.5·x·(1 + Tanh(√(2/π)·(x + 0.044715·x³))) as GPT-2's exports spell it.
std::vector<N> tanh_gpt2(const std::string& cubic = kCubic, const std::string& power = "#3") {
    return {{"Mul", {"x", "#0.5"}, "h"},   {"Pow", {"x", power}, "p"}, {"Mul", {"p", cubic}, "c"}, {"Add", {"x", "c"}, "s"},
            {"Mul", {"s", kSqrt2Pi}, "u"}, {"Tanh", {"u"}, "th"},      {"Add", {"th", "#1"}, "a"}, {"Mul", {"h", "a"}, "g"}};
}

}  // namespace

TEST_CASE("fuse-gelu fuses the erf and tanh spellings", "[cpu][passes]") {
    auto rng = test::make_rng();
    const std::vector<std::pair<std::string, std::vector<N>>> cases = {
        {"erf: (x·a)·0.5", erf_bert()},
        {"erf: x·(0.5·a), dynamo",
         {{"Div", {"x", kSqrt2}, "t"},
          {"Erf", {"t"}, "e"},
          {"Add", {"e", "#1"}, "a"},
          {"Mul", {"#0.5", "a"}, "h"},
          {"Mul", {"x", "h"}, "g"}}},
        {"erf: (x·0.5)·a, x·(1/√2), 1 + e",
         {{"Mul", {"x", "#0.5"}, "h"},
          {"Mul", {kInvSqrt2, "x"}, "t"},
          {"Erf", {"t"}, "e"},
          {"Add", {"#1", "e"}, "a"},
          {"Mul", {"h", "a"}, "g"}}},
        {"tanh: GPT-2", tanh_gpt2()},
        {"tanh: (x·x)·x, (a·x)·0.5",
         {{"Mul", {"x", "x"}, "xx"},
          {"Mul", {"xx", "x"}, "p"},
          {"Mul", {kCubic, "p"}, "c"},
          {"Add", {"c", "x"}, "s"},
          {"Mul", {kSqrt2Pi, "s"}, "u"},
          {"Tanh", {"u"}, "th"},
          {"Add", {"#1", "th"}, "a"},
          {"Mul", {"a", "x"}, "m"},
          {"Mul", {"m", "#0.5"}, "g"}}},
        {"tanh: x·(x·x), (a·0.5)·x",
         {{"Mul", {"x", "x"}, "xx"},
          {"Mul", {"x", "xx"}, "p"},
          {"Mul", {"p", kCubic}, "c"},
          {"Add", {"x", "c"}, "s"},
          {"Mul", {"s", kSqrt2Pi}, "u"},
          {"Tanh", {"u"}, "th"},
          {"Add", {"th", "#1"}, "a"},
          {"Mul", {"a", "#0.5"}, "m"},
          {"Mul", {"m", "x"}, "g"}}},
    };
    for (const auto& [name, nodes] : cases) {
        INFO(name);
        const ir::Graph g = test::prepared(model(nodes));
        const ir::Graph after = test::run_checked(g, passes::fuse_gelu, rng);
        CHECK(ir::op_histogram(after) == "1 Gelu, 1 Identity");
        for (const ir::Node& n : after.nodes) {
            if (n.op != ir::Op::Gelu) continue;
            CHECK(n.attrs.s("approximate", "") == (name.rfind("tanh", 0) == 0 ? "tanh" : "none"));
            CHECK(after.value(n.inputs[0]).name == "x");
        }
    }
}

TEST_CASE("fuse-gelu leaves near-misses alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto unchanged = [&](const std::string& bytes) {
        const ir::Graph g = test::prepared(bytes);
        const ir::Graph after = test::run_checked(g, passes::fuse_gelu, rng);
        CHECK(ir::op_histogram(after) == ir::op_histogram(g));
    };
    SECTION("x / 1.5 inside Erf") { unchanged(model(erf_bert("#1.5"))); }
    SECTION("0.6 instead of 0.5") { unchanged(model(erf_bert(kSqrt2, "#0.6"))); }
    SECTION("Erf read outside the pattern") { unchanged(model(erf_bert(), {"e"})); }
    SECTION("the product takes another tensor") {
        std::vector<N> nodes = erf_bert();
        nodes[3].in = {"y", "a"};
        unchanged(model(nodes));
    }
    SECTION("0.05 instead of 0.044715") { unchanged(model(tanh_gpt2("#0.05"))); }
    SECTION("x² instead of x³") { unchanged(model(tanh_gpt2(kCubic, "#2"))); }
}
