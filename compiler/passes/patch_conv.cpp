// patch-conv: a 2-D convolution over non-overlapping patches (ViT's patch
// embedding) becomes a linear layer over the patches:
//   Conv(x [N,C,H,W], w [O,C,kh,kw], b [O])   strides = kernel, no padding,
//                                            dilation 1, group 1, kh | H, kw | W
//   → Reshape(x → [N, C, H/kh, kh, W/kw, kw])
//   → Transpose(perm 0,2,4,1,3,5) → Reshape([N, H/kh, W/kw, C·kh·kw])
//   → Add(MatMul(·, W [C·kh·kw, O]), b [O])   (fuse-linear's canonical form)
//   → Transpose(perm 0,3,1,2)                 [N, O, H/kh, W/kw] as before
// w and b must be constants. The layout nodes fold into index maps, so the
// convolution runs as one GEMM with a bias epilogue on cuBLASLt.
#include "passes/match.hpp"
#include "passes/passes.hpp"

#include <spdlog/spdlog.h>

namespace stof::passes {

namespace {

using ir::Op;

bool match_at(Matcher& m, const ir::Node& conv) {
    const ir::Value& xv = m.g.value(conv.inputs[0]);
    const ir::Value& wv = m.g.value(conv.inputs[1]);
    const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoValue;
    if (xv.shape.size() != 4 || !wv.data || wv.shape.size() != 4 || !is_float(xv.dtype)) return false;
    if (has_bias && !m.g.value(conv.inputs[2]).data) return false;
    const int64_t n = xv.shape[0], c = xv.shape[1], h = xv.shape[2], w = xv.shape[3];
    const int64_t o = wv.shape[0], kh = wv.shape[2], kw = wv.shape[3];
    const std::vector<int64_t> kernel{kh, kw};
    if (wv.shape[1] != c || conv.attrs.i("group", 1) != 1 || conv.attrs.ints("strides", {1, 1}) != kernel ||
        conv.attrs.ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
        conv.attrs.ints("pads", {0, 0, 0, 0}) != std::vector<int64_t>{0, 0, 0, 0} ||
        conv.attrs.s("auto_pad", "NOTSET") != "NOTSET" || h % kh != 0 || w % kw != 0)
        return false;
    const int64_t oh = h / kh, ow = w / kw, k = c * kh * kw;
    const DType dt = xv.dtype;

    // W[(ci·kh + i)·kw + j, oc] = w[oc, ci, i, j]: the weight rows in the patches' order.
    Tensor weight(wv.dtype, {k, o});
    for (int64_t r = 0; r < k; ++r)
        for (int64_t oc = 0; oc < o; ++oc) weight.set_f64(r * o + oc, wv.data->get_f64(oc * k + r));

    std::vector<ir::Node> add;
    ir::ValueId cur = conv.inputs[0];
    auto emit = [&](Op op, std::vector<ir::ValueId> inputs, const Shape& shape, ir::Attrs attrs, const std::string& what,
                    ir::ValueId out = ir::kNoValue) {
        ir::Node node;
        node.op = op;
        node.name = m.node_name(conv, what);
        node.inputs = std::move(inputs);
        node.attrs = std::move(attrs);
        node.outputs = {out != ir::kNoValue ? out : m.new_value(node.name + "_output", dt, shape)};
        cur = node.outputs[0];
        add.push_back(std::move(node));
    };
    auto reshape = [&](const Shape& shape, const std::string& what) {
        Tensor s(DType::i64, {static_cast<int64_t>(shape.size())});
        for (size_t i = 0; i < shape.size(); ++i) s.set_i64(static_cast<int64_t>(i), shape[i]);
        const ir::ValueId target = m.g.add_constant(s, m.node_name(conv, what) + "_shape");
        emit(Op::Reshape, {cur, target}, shape, {}, what);
    };
    auto transpose = [&](std::vector<int64_t> perm, const Shape& shape, const std::string& what,
                         ir::ValueId out = ir::kNoValue) {
        ir::Attrs a;
        a.set("perm", std::move(perm));
        emit(Op::Transpose, {cur}, shape, std::move(a), what, out);
    };
    reshape({n, c, oh, kh, ow, kw}, "PatchSplit");
    transpose({0, 2, 4, 1, 3, 5}, {n, oh, ow, c, kh, kw}, "PatchTranspose");
    reshape({n, oh, ow, k}, "Patches");
    emit(Op::MatMul, {cur, m.g.add_constant(weight, m.node_name(conv, "MatMul") + ".weight")}, {n, oh, ow, o}, {}, "MatMul");
    if (has_bias) {
        const std::optional<Tensor> bias = row_vector(m, conv.inputs[2], o, dt);
        if (!bias) return false;
        emit(Op::Add, {cur, m.g.add_constant(*bias, m.node_name(conv, "Add") + ".bias")}, {n, oh, ow, o}, {}, "Add");
    }
    transpose({0, 3, 1, 2}, {n, o, oh, ow}, "ChannelsFirst", conv.outputs[0]);
    return m.replace({&conv}, conv, std::move(add));
}

}  // namespace

void patch_conv(ir::Graph& g, const PassOptions&) {
    Matcher m(g);
    for (const ir::Node& n : g.nodes)
        if (n.op == Op::Conv && !m.claimed(n)) match_at(m, n);
    const int rewritten = m.commit();
    if (rewritten) spdlog::debug("patch-conv: {} patch convolutions as linear layers", rewritten);
}

}  // namespace stof::passes
