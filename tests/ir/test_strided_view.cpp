// Strided views against the reference interpreter: a layout chain applied to
// 0, 1, 2, ... must put, at every output element, the offset the view gives.
#include "interp/interpreter.hpp"
#include "ir/strided_view.hpp"
#include "passes/passes.hpp"
#include "test_util.hpp"

using namespace stof;
using namespace stof::ir;

namespace {

// A graph over one f32 input "x" of `shape`, built one layout node at a time.
struct Chain {
    Graph g;
    ValueId last = kNoValue;
    std::vector<std::pair<size_t, size_t>> steps;  // (node, output the chain continues with)

    explicit Chain(const Shape& shape) {
        Value x;
        x.name = "x";
        x.dtype = DType::f32;
        x.shape = shape;
        x.shape_known = true;
        last = g.add_value(x);
        g.inputs.push_back(last);
    }
    ValueId ints(const std::vector<int64_t>& v, bool scalar = false) {
        Tensor t(DType::i64, scalar ? Shape{} : Shape{static_cast<int64_t>(v.size())});
        for (size_t k = 0; k < v.size(); ++k) t.set_i64(static_cast<int64_t>(k), v[k]);
        return g.add_constant(t, "c");
    }
    // Appends `op` on the chain's value; the chain continues with output `follow` of `outputs`.
    Chain& then(Op op, std::vector<ValueId> args = {}, Attrs attrs = {}, size_t outputs = 1, size_t follow = 0) {
        Node n{op, "n" + std::to_string(g.nodes.size()), {last}, {}, std::move(attrs)};
        n.inputs.insert(n.inputs.end(), args.begin(), args.end());
        for (size_t k = 0; k < outputs; ++k) {
            Value v;
            v.name = g.unique_name(n.name + "_out");
            v.dtype = DType::f32;
            n.outputs.push_back(g.add_value(v));
        }
        last = n.outputs[follow];
        steps.push_back({g.nodes.size(), follow});
        g.nodes.push_back(n);
        return *this;
    }
};

Attrs attr(const std::string& name, std::vector<int64_t> v) {
    Attrs a;
    a.set(name, std::move(v));
    return a;
}
Attrs attr(const std::string& name, int64_t v) {
    Attrs a;
    a.set(name, v);
    return a;
}

// The element offset of view index `idx` (row-major over each dim's sub-dims).
int64_t offset_of(const StridedView& v, std::vector<int64_t> idx) {
    int64_t off = v.offset;
    for (size_t d = 0; d < v.dims.size(); ++d)
        for (size_t s = v.dims[d].size(); s-- > 0;) {
            off += idx[d] % v.dims[d][s].size * v.dims[d][s].stride;
            idx[d] /= v.dims[d][s].size;
        }
    return off;
}

// Runs the chain on iota and checks the view of its last value element by element.
void check_chain(Chain& c) {
    c.g.outputs = {c.last};
    passes::infer_shapes(c.g, {});
    const Value& x = c.g.value(c.g.inputs[0]);
    Tensor iota(DType::f32, x.shape);
    for (int64_t k = 0; k < iota.numel(); ++k) iota.set_f64(k, static_cast<double>(k));
    const Tensor got = interpret(c.g, {{x.name, iota}}).at(c.g.value(c.last).name);

    std::optional<StridedView> v = contiguous_view(x.shape);
    for (const auto& [node, output] : c.steps) {
        REQUIRE(v);
        REQUIRE(is_layout_op(c.g.nodes[node].op));
        v = apply_layout(c.g, c.g.nodes[node], output, *v);
    }
    REQUIRE(v);
    REQUIRE(v->dims.size() == got.shape.size());
    for (int64_t k = 0; k < got.numel(); ++k) {
        std::vector<int64_t> idx(got.shape.size());
        for (int64_t r = k, d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
            idx[static_cast<size_t>(d)] = r % got.shape[static_cast<size_t>(d)];
            r /= got.shape[static_cast<size_t>(d)];
        }
        INFO("element " << k);
        REQUIRE(offset_of(*v, idx) == static_cast<int64_t>(got.get_f64(k)));
    }
}

}  // namespace

TEST_CASE("a contiguous view has one sub-dim per dim larger than 1", "[cpu][ir]") {
    const StridedView v = contiguous_view({2, 1, 3, 4});
    REQUIRE(v.dims.size() == 4);
    CHECK(v.dims[0].size() == 1);
    CHECK(v.dims[0][0].size == 2);
    CHECK(v.dims[0][0].stride == 12);
    CHECK(v.dims[1].empty());
    CHECK(v.dims[2][0].stride == 4);
    CHECK(v.dims[3][0].stride == 1);
}

TEST_CASE("strided views after layout ops address what the reference computes", "[cpu][ir]") {
    SECTION("head split: Reshape then Transpose [0,2,1,3]") {
        Chain c({2, 6, 12});
        c.then(Op::Reshape, {c.ints({2, 6, 3, 4})}).then(Op::Transpose, {}, attr("perm", {0, 2, 1, 3}));
        check_chain(c);
    }
    SECTION("the second of three Split outputs of a fused projection, as heads") {
        Chain c({2, 6, 12});
        c.then(Op::Split, {c.ints({4, 4, 4})}, attr("axis", int64_t{2}), 3, 1)
            .then(Op::Reshape, {c.ints({2, 6, 2, 2})})
            .then(Op::Transpose, {}, attr("perm", {0, 2, 3, 1}));
        check_chain(c);
    }
    SECTION("Slice with a negative start, then a scalar Gather drops a dim") {
        Chain c({2, 3, 6, 4});
        c.then(Op::Slice, {c.ints({-4}), c.ints({6}), c.ints({2})})
            .then(Op::Gather, {c.ints({1}, true)}, attr("axis", int64_t{1}));
        check_chain(c);
    }
    SECTION("a grouped-query repeat: Unsqueeze, Expand, Reshape") {
        Chain c({2, 2, 5, 4});
        c.then(Op::Unsqueeze, {c.ints({2})})
            .then(Op::Expand, {c.ints({2, 2, 3, 5, 4})})
            .then(Op::Reshape, {c.ints({2, 6, 5, 4})});
        check_chain(c);
    }
}

TEST_CASE("a reshape that would cut a strided dim unevenly is no view", "[cpu][ir]") {
    StridedView t;  // [4,6] transposed: [6,4]
    t.dims = {{{6, 1}}, {{4, 6}}};
    CHECK_FALSE(reshape_view(t, {4, 6}));
    const auto flat = reshape_view(t, {24});
    REQUIRE(flat);
    CHECK(flat->dims[0].size() == 2);  // two strides: no narrow along it
    CHECK_FALSE(narrow(*flat, 0, 0, 12));
    CHECK_FALSE(narrow(t, 0, 4, 3));  // past the end
    const auto n = narrow(t, 1, 1, 2);
    REQUIRE(n);
    CHECK(n->offset == 6);
}
