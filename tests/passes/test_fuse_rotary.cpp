// fuse-rotary: the rotate-half rotary embedding of the heads split from one projection
// becomes one Rotary on it; near-misses stay; results are unchanged; LLaMA's exports get it.
#include "onnx_builder.hpp"
#include "pass_check.hpp"
#include "test_util.hpp"
#include "zoo_model.hpp"

#include <algorithm>
#include <cstdint>
#include <set>

using namespace stof;
using test::OnnxBuilder;
using test::set_attr;

namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int64_t kB = 2, kS = 6, kE = 16;

struct Rope {
    bool split = true;       // M = x·W split into q | k | v; else M = x·Wq, q alone
    bool transposed = true;  // x_i = Transpose(Reshape(y_i)) [B,H,S,D]; else Reshape(y_i) [B,S,H,D]
    int64_t heads = 4, kv_heads = 2, dim = 8;
    bool per_batch = false;       // cos and sin [B,1,S,D] ([B,S,1,D]); else [1,1,S,D] ([1,S,1,D])
    bool runtime_tables = false;  // cos and sin are graph inputs
    bool late_tables = false;     // with runtime_tables: inputs without the head axis, unsqueezed after the Split
    bool swapped = false;         // Mul(cos, x), Mul(sin, r), Add(sin term, cos term); ends INT64_MAX, axis 3
    bool out_read = false;        // q's result is also read by another node
    // Near-misses.
    std::string stray;         // "neg", "x", "y", "concat": that value of q's branch is also a graph output
    bool k_other_cos = false;  // k reads a cos table of other values
    bool rotate_q = true;      // false: only k is rotated (not a prefix of the Split)
    bool interleaved = false;  // GPT-J: pairs (2i, 2i+1) rotated (Slices of step 2)
    int64_t partial = 0;       // > 0: only the first `partial` columns of each head rotated
    bool reversed = false;     // Concat(Slice(x, h..D), Neg(Slice(x, 0..h))): the other direction
    bool k_other_dim = false;  // k's heads of D/2 (x·W's k columns split in twice as many heads)
};

std::vector<test::Dim> dims(const Shape& s) { return std::vector<test::Dim>(s.begin(), s.end()); }

// The rotary embedding of branch `n` of head dim d over x (its [.., D] value) into value n.
void rotate(OnnxBuilder& b, const Rope& r, const std::string& n, const std::string& x, int64_t d, const std::string& cos,
            const std::string& sin) {
    const std::string rot = n + "_rot";
    if (r.interleaved) {
        b.node("Slice", {x, "zero", "d_" + std::to_string(d), "axis", "two"}, {n + "_even"});
        b.node("Slice", {x, "one", "d_" + std::to_string(d), "axis", "two"}, {n + "_odd"});
        b.node("Neg", {n + "_odd"}, {n + "_nodd"});
        b.node("Unsqueeze", {n + "_nodd", "axis"}, {n + "_a"});
        b.node("Unsqueeze", {n + "_even", "axis"}, {n + "_b"});
        set_attr(b.node("Concat", {n + "_a", n + "_b"}, {n + "_pairs"}), "axis", int64_t{-1});
        b.node("Shape", {x}, {n + "_shape"});
        b.node("Reshape", {n + "_pairs", n + "_shape"}, {rot});
    } else {
        const std::string mid = "d_" + std::to_string(d / 2), end = r.swapped ? "big" : "d_" + std::to_string(d);
        b.node("Slice", {x, "zero", mid, "axis"}, {n + "_x1"});
        b.node("Slice", {x, mid, end, "axis"}, {n + "_x2"});
        if (r.reversed) {
            b.node("Neg", {n + "_x1"}, {n + "_neg"});
            set_attr(b.node("Concat", {n + "_x2", n + "_neg"}, {rot}), "axis", int64_t{-1});
        } else {
            b.node("Neg", {n + "_x2"}, {n + "_neg"});
            set_attr(b.node("Concat", {n + "_neg", n + "_x1"}, {rot}), "axis", r.swapped ? int64_t{3} : int64_t{-1});
        }
    }
    if (r.swapped) {
        b.node("Mul", {cos, x}, {n + "_c"});
        b.node("Mul", {sin, rot}, {n + "_s"});
        b.node("Add", {n + "_s", n + "_c"}, {n});
    } else {
        b.node("Mul", {x, cos}, {n + "_c"});
        b.node("Mul", {rot, sin}, {n + "_s"});
        b.node("Add", {n + "_c", n + "_s"}, {n});
    }
}

// x [B, S, E] → M = x·W → q, k, v heads (or q alone) → q and k rotated → graph outputs q, k, v.
std::string rope_model(std::mt19937_64& rng, const Rope& r) {
    OnnxBuilder b(18);
    const int64_t d = r.dim;
    b.input("x", kF32, {kB, kS, kE});
    const int64_t tb = r.per_batch ? kB : 1;
    auto table_shape = [&](int64_t cols) { return r.transposed ? Shape{tb, 1, kS, cols} : Shape{tb, kS, 1, cols}; };
    for (const char* t : {"cos", "sin"}) {
        if (r.late_tables) b.input(std::string(t) + "_in", kF32, {tb, kS, d});
        else if (r.runtime_tables) b.input(t, kF32, dims(table_shape(d)));
        else b.initializer(t, test::random_tensor(DType::f32, table_shape(d), rng));
    }
    if (r.k_other_cos) b.initializer("cos_k", test::random_tensor(DType::f32, table_shape(d), rng));
    if (r.k_other_dim) {
        b.initializer("cos_h", test::random_tensor(DType::f32, table_shape(d / 2), rng));
        b.initializer("sin_h", test::random_tensor(DType::f32, table_shape(d / 2), rng));
    }
    if (r.partial) {
        b.initializer("cos_p", test::random_tensor(DType::f32, table_shape(r.partial), rng));
        b.initializer("sin_p", test::random_tensor(DType::f32, table_shape(r.partial), rng));
    }
    b.initializer("zero", test::ints({0})).initializer("one", test::ints({1})).initializer("two", test::ints({2}));
    b.initializer("big", test::ints({INT64_MAX})).initializer("axis", test::ints({r.swapped ? 3 : -1}));
    for (int64_t v : std::set<int64_t>{d / 4, d / 2, d, r.partial, r.partial / 2})  // slice bounds "d_<v>"
        if (v > 0) b.initializer("d_" + std::to_string(v), test::ints({v}));

    struct Part {
        std::string name;
        int64_t heads, dim;
        bool rotated;
    };
    std::vector<Part> parts{{"q", r.heads, d, r.rotate_q}};
    if (r.split) {
        parts.push_back(r.k_other_dim ? Part{"k", 2 * r.kv_heads, d / 2, true} : Part{"k", r.kv_heads, d, true});
        parts.push_back({"v", r.kv_heads, d, false});
    }
    int64_t width = 0;
    std::vector<int64_t> widths;
    for (const Part& p : parts) {
        widths.push_back(p.heads * p.dim);
        width += widths.back();
    }
    b.initializer("w", test::random_weights({kE, width}, kE, rng));
    b.node("MatMul", {"x", "w"}, {r.split ? "m" : "y_q"});
    if (r.split) {
        b.initializer("sizes", test::ints({widths[0], widths[1], widths[2]}));
        set_attr(b.node("Split", {"m", "sizes"}, {"y_q", "y_k", "y_v"}), "axis", int64_t{-1});
    }
    if (r.late_tables) {  // as HF's apply_rotary_pos_emb: cos.unsqueeze(1) where the heads are rotated
        b.initializer("head_axis", test::ints({r.transposed ? 1 : 2}));
        b.node("Unsqueeze", {"cos_in", "head_axis"}, {"cos"});
        b.node("Unsqueeze", {"sin_in", "head_axis"}, {"sin"});
    }
    for (const Part& p : parts) {
        const std::string n = p.name, y = "y_" + n, x = n + "_x";
        b.initializer(n + "_heads", test::ints({kB, kS, p.heads, p.dim}));
        if (r.transposed) {
            b.node("Reshape", {y, n + "_heads"}, {n + "_r"});
            set_attr(b.node("Transpose", {n + "_r"}, {x}), "perm", std::vector<int64_t>{0, 2, 1, 3});
        } else {
            b.node("Reshape", {y, n + "_heads"}, {x});
        }
        if (!p.rotated) {
            b.node("Identity", {x}, {n});
        } else if (r.partial) {
            b.node("Slice", {x, "zero", "d_" + std::to_string(r.partial), "axis"}, {n + "_xr"});
            b.node("Slice", {x, "d_" + std::to_string(r.partial), "big", "axis"}, {n + "_xp"});
            rotate(b, r, n + "_rr", n + "_xr", r.partial, "cos_p", "sin_p");
            set_attr(b.node("Concat", {n + "_rr", n + "_xp"}, {n}), "axis", int64_t{-1});
        } else {
            const bool other = n == "k" && r.k_other_dim;
            rotate(b, r, n, x, p.dim, other ? "cos_h" : n == "k" && r.k_other_cos ? "cos_k" : "cos", other ? "sin_h" : "sin");
        }
        b.output(n);
    }
    if (r.out_read) {
        b.node("Mul", {"q", "q"}, {"q_sq"});
        b.output("q_sq");
    }
    if (r.stray == "neg") b.output("q_neg");
    if (r.stray == "concat") b.output("q_rot");
    if (r.stray == "x") b.output("q_x");
    if (r.stray == "y") b.output("y_q");
    return b.bytes();
}

const ir::Node& rotary_node(const ir::Graph& g) {
    const ir::Node* n = test::find_op(g, ir::Op::Rotary);
    REQUIRE(n);
    return *n;
}

}  // namespace

TEST_CASE("fuse-rotary makes the rotary embedding of the split heads one Rotary", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto fused = [&](const Rope& r, int64_t positions) {
        const ir::Graph g = test::prepared(rope_model(rng, r));
        const ir::Graph after = test::run_checked(g, passes::fuse_rotary, rng);
        INFO(ir::to_text(after));
        for (ir::Op op : {ir::Op::Slice, ir::Op::Neg, ir::Op::Concat, ir::Op::Add}) CHECK(ir::count_ops(after, op) == 0);
        CHECK(ir::count_ops(after, ir::Op::Mul) == (r.out_read ? 1 : 0));
        CHECK(ir::count_ops(after, ir::Op::Rotary) == 1);
        const ir::Node& rot = rotary_node(after);
        CHECK(rot.attrs.i("head_dim", 0) == r.dim);
        CHECK(rot.attrs.i("rot_cols", 0) == (r.split ? r.heads + r.kv_heads : r.heads) * r.dim);
        CHECK(after.value(rot.inputs[0]).shape == Shape({kB, kS, (r.split ? r.heads + 2 * r.kv_heads : r.heads) * r.dim}));
        for (size_t k = 1; k < 3; ++k) {
            CHECK(after.value(rot.inputs[k]).shape == Shape({positions, r.dim}));
            CHECK(static_cast<bool>(after.value(rot.inputs[k]).data) == !r.runtime_tables);
        }
        // The Split (or the head split) reads the Rotary output.
        CHECK(ir::count_ops(after, r.split ? ir::Op::Split : ir::Op::Reshape) >= 1);
        bool read = false;
        for (const ir::Node& n : after.nodes) read = read || (n.op != ir::Op::Rotary && n.inputs[0] == rot.outputs[0]);
        CHECK(read);
        return after;
    };
    SECTION("q | k | v with grouped-query heads, [B,H,S,D] heads (LLaMA)") { fused({}, kS); }
    SECTION("[B,S,H,D] heads, no Transpose") {
        Rope r;
        r.transposed = false;
        const ir::Graph after = fused(r, kS);
        CHECK(ir::count_ops(after, ir::Op::Transpose) == 0);
    }
    SECTION("tables per batch row: [B·S, D]") {
        Rope r;
        r.per_batch = true;
        fused(r, kB * kS);
        r.transposed = false;
        fused(r, kB * kS);
    }
    SECTION("operands swapped, ends INT64_MAX, the axis as rank - 1") {
        Rope r;
        r.swapped = true;
        fused(r, kS);
    }
    SECTION("one branch: q's projection alone, no Split") {
        Rope r;
        r.split = false;
        fused(r, kS);
        r.transposed = false;
        fused(r, kS);
    }
    SECTION("run-time tables become a Reshape to [P, D]") {
        Rope r;
        r.runtime_tables = true;
        const ir::Graph after = fused(r, kS);
        const ir::Node& rot = rotary_node(after);
        const std::vector<int> producer = after.producers();
        CHECK(after.nodes.at(static_cast<size_t>(producer.at(static_cast<size_t>(rot.inputs[1])))).op == ir::Op::Reshape);
        r.per_batch = true;
        r.transposed = false;
        fused(r, kB * kS);
    }
    SECTION("run-time tables computed after the Split move before the Rotary") {
        Rope r;
        r.runtime_tables = r.late_tables = true;
        fused(r, kS);
        r.split = false;
        r.per_batch = true;
        fused(r, kB * kS);
        r.transposed = false;
        fused(r, kB * kS);
    }
    SECTION("a rotated result that is a graph output and read elsewhere keeps its name") {
        Rope r;
        r.out_read = true;
        const ir::Graph after = fused(r, kS);
        const ir::ValueId q = after.find_value("q");
        REQUIRE(q != ir::kNoValue);
        CHECK(std::find(after.outputs.begin(), after.outputs.end(), q) != after.outputs.end());
        for (const ir::Node& n : after.nodes)
            if (std::find(n.outputs.begin(), n.outputs.end(), q) != n.outputs.end()) CHECK(n.op == ir::Op::Transpose);
    }
    SECTION("equal constant tables of q and k are one table") {
        Rope r;
        r.k_other_cos = true;
        ir::Graph g = test::prepared(rope_model(rng, r));
        // k's cos: a copy of q's under another name.
        const ir::ValueId cos = g.find_value("cos"), cos_k = g.find_value("cos_k");
        REQUIRE((cos != ir::kNoValue && cos_k != ir::kNoValue));
        g.value(cos_k).data = g.value(cos).data;
        const ir::Graph after = test::run_checked(g, passes::fuse_rotary, rng);
        CHECK(ir::count_ops(after, ir::Op::Rotary) == 1);
        CHECK(ir::count_ops(after, ir::Op::Concat) == 0);
    }
}

TEST_CASE("fuse-rotary leaves near-misses alone", "[cpu][passes]") {
    auto rng = test::make_rng();
    auto unchanged = [&](const Rope& r) {
        const ir::Graph g = test::prepared(rope_model(rng, r));
        const ir::Graph after = test::run_checked(g, passes::fuse_rotary, rng);
        CHECK(ir::op_histogram(after) == ir::op_histogram(g));
        CHECK(ir::count_ops(after, ir::Op::Rotary) == 0);
    };
    for (const char* stray : {"neg", "concat", "x", "y"}) {
        DYNAMIC_SECTION("an intermediate of q's branch read elsewhere: " << stray) {
            Rope r;
            r.stray = stray;
            unchanged(r);
            r.split = false;
            unchanged(r);
        }
    }
    SECTION("different cos tables for q and k") {
        Rope r;
        r.k_other_cos = true;
        unchanged(r);
    }
    SECTION("q and k of different head dims") {
        Rope r;
        r.k_other_dim = true;
        unchanged(r);
    }
    SECTION("interleaved pairs (GPT-J)") {
        Rope r;
        r.interleaved = true;
        unchanged(r);
        r.split = false;
        unchanged(r);
    }
    SECTION("partial rotary: the first half of each head rotated") {
        Rope r;
        r.partial = r.dim / 2;
        unchanged(r);
        r.split = false;
        unchanged(r);
    }
    SECTION("the halves rotated the other way") {
        Rope r;
        r.reversed = true;
        unchanged(r);
    }
    SECTION("the rotated branch is not a prefix of the Split") {
        Rope r;
        r.rotate_q = false;
        unchanged(r);
    }
}

TEST_CASE("LLaMA's exports get one Rotary per layer over the merged q|k|v projection", "[cpu][passes]") {
    for (const char* name : {"llama-dynamo", "llama-torchscript"}) {
        INFO(name);
        const ir::Graph g = test::zoo_graph(name, Precision::fp16);
        CHECK(ir::count_ops(g, ir::Op::Rotary) == 2);
        CHECK(ir::count_ops(g, ir::Op::Neg) == 0);
        CHECK(ir::count_ops(g, ir::Op::Slice) == 0);
        CHECK(ir::count_ops(g, ir::Op::Concat) == 0);
        const std::vector<int> producer = g.producers();
        for (const ir::Node& n : g.nodes) {
            if (n.op != ir::Op::Rotary) continue;
            // 4 query and 2 key heads of 64 rotated, the 2 value heads not; one position a sequence row.
            CHECK(n.attrs.i("head_dim", 0) == 64);
            CHECK(n.attrs.i("rot_cols", 0) == 384);
            CHECK(g.value(n.inputs[0]).shape == Shape({2, 128, 512}));
            CHECK(g.value(n.inputs[1]).shape == Shape({128, 64}));
            CHECK(g.nodes.at(static_cast<size_t>(producer.at(static_cast<size_t>(n.inputs[0])))).op == ir::Op::MatMul);
        }
        for (const ir::Node& n : g.nodes)
            if (n.op == ir::Op::SparseAttention) CHECK(n.attrs.s("layout", "") == "ssss");
    }
}
