#include "ir/graph.hpp"
#include "test_util.hpp"

using namespace stof;
using namespace stof::ir;

namespace {
Graph two_node_graph() {
    Graph g;
    g.name = "g";
    Value x;
    x.name = "x";
    x.dtype = DType::f32;
    x.shape = {2};
    x.shape_known = true;
    const ValueId xi = g.add_value(x);
    g.inputs.push_back(xi);
    Value a, y;
    a.name = "a";
    y.name = "y";
    const ValueId ai = g.add_value(a), yi = g.add_value(y);
    g.nodes.push_back({Op::Neg, "n1", {xi}, {ai}, {}});
    g.nodes.push_back({Op::Relu, "n2", {ai}, {yi}, {}});
    g.outputs.push_back(yi);
    return g;
}
}  // namespace

TEST_CASE("every op in the table has a name that maps back to it", "[cpu][ir]") {
    Op op;
    for (int i = 0; i <= static_cast<int>(Op::Range); ++i) {
        const OpInfo& info = op_info(static_cast<Op>(i));
        INFO(info.name);
        REQUIRE(op_from_name(info.name, &op));
        CHECK(static_cast<int>(op) == i);
        CHECK(info.infer != nullptr);
        CHECK(info.eval != nullptr);
        CHECK(info.min_inputs >= 0);
        CHECK((info.max_inputs < 0 || info.max_inputs >= info.min_inputs));
    }
    CHECK_FALSE(op_from_name("NoSuchOp", &op));
}

TEST_CASE("verify accepts a valid graph and names the first violation", "[cpu][ir]") {
    Graph g = two_node_graph();
    g.verify();

    Graph swapped = two_node_graph();
    std::swap(swapped.nodes[0], swapped.nodes[1]);
    test::require_error([&] { swapped.verify(); }, "Relu node 'n2' reads 'a' before it is defined");

    Graph dup = two_node_graph();
    dup.nodes[1].name = "n1";
    test::require_error([&] { dup.verify(); }, "two nodes are named 'n1'");

    Graph twice = two_node_graph();
    twice.nodes[1].outputs[0] = twice.nodes[0].outputs[0];
    twice.outputs[0] = twice.nodes[0].outputs[0];
    test::require_error([&] { twice.verify(); }, "redefines 'a'");

    Graph arity = two_node_graph();
    arity.nodes[0].inputs.push_back(arity.inputs[0]);
    test::require_error([&] { arity.verify(); }, "Neg node 'n1' has 2 inputs");

    Graph bad_id = two_node_graph();
    bad_id.nodes[1].inputs[0] = 17;
    test::require_error([&] { bad_id.verify(); }, "value id 17");
}

TEST_CASE("the text form is stable and complete", "[cpu][ir]") {
    Graph g = two_node_graph();
    const std::string text = to_text(g);
    CHECK(text == to_text(two_node_graph()));
    CHECK(text.find("input  %x: f32[2]") != std::string::npos);
    CHECK(text.find("%a: ? = Neg(%x)  # n1") != std::string::npos);
    CHECK(text.find("output %y") != std::string::npos);
    CHECK(op_histogram(g) == "1 Neg, 1 Relu");
}
