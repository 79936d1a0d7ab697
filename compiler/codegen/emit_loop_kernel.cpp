// Conv, ConvTranspose, Resize, CumSum and ScatterND as loop kernels: one thread
// per output element (or per scanned line / scattered element), each a call of
// its template (templates/stof/{conv,resize,scan,scatter}.cuh) with the sizes as
// constants and element functors (templates/stof/loop.cuh) for its tensors.
#include "codegen/emitters.hpp"
#include "ops/conv_geometry.hpp"
#include "ops/op_util.hpp"
#include "ops/resize_taps.hpp"
#include "stof/error.hpp"

namespace stof::codegen {

namespace {

// A kernel parameter and its element type.
struct Operand {
    std::string param, type;
};

Operand operand(LowerState& st, KernelBuilder& kb, int32_t tensor, bool output) {
    const DType dt = st.plan.tensors[static_cast<size_t>(tensor)].dtype;
    return {kb.tensor(tensor, dt, output), c_type(dt)};
}
Operand input(LowerState& st, KernelBuilder& kb, ir::ValueId v) { return operand(st, kb, st.tensor(v), false); }

// The element functors of loop.cuh over an operand.
std::string load_float(const Operand& o) { return fmt::format("stof::LoadFloat<{}>{{{}}}", o.type, o.param); }
std::string load_int(const Operand& o) { return fmt::format("stof::LoadInt<{}>{{{}}}", o.type, o.param); }
std::string store_at(const Operand& o) { return fmt::format("stof::StoreAt<{}>{{{}}}", o.type, o.param); }

template <class T> std::string joined(const std::vector<T>& v) {
    std::string s;
    for (const T& x : v) s += (s.empty() ? "" : ", ") + fmt::format("{}", x);
    return s;
}

void finish(LowerState& st, KernelBuilder& kb, const std::string& key, int64_t threads, const ir::Node& node,
            const std::string& label, const std::string& header) {
    KernelJob job;
    job.key = key;
    job.source = kb.source(key, "__launch_bounds__(256)", {"stof/common.cuh", header});
    job.params = kb.params();
    job.launch.args = kb.args();
    elementwise_launch(threads, job.launch);
    st.add_launch(std::move(job), label, node.name);
}

void emit_conv(LowerState& st, const ir::Node& n, bool transpose) {
    const ir::Graph& g = st.g;
    const Shape &xs = g.value(n.inputs[0]).shape, &ws = g.value(n.inputs[1]).shape;
    const ir::ops::ConvGeom c = transpose ? ir::ops::conv_transpose_geometry(n, xs, ws) : ir::ops::conv_geometry(n, xs, ws);
    KernelBuilder kb;
    const Operand out = operand(st, kb, st.tensor(n.outputs[0]), true), x = input(st, kb, n.inputs[0]),
                  w = input(st, kb, n.inputs[1]);
    const bool has_bias = n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue;
    const std::string bias = has_bias ? load_float(input(st, kb, n.inputs[2])) : "stof::Zero{}";
    const int64_t total = c.batch * c.cout * c.oh * c.ow;
    const std::string idx = index_type(total);
    kb.line(fmt::format("const stof::ConvGeom<{}> geom{{{}}};", idx,
                        joined(std::vector<int64_t>{c.batch, c.cin, c.h, c.w, c.cout, c.kh, c.kw, c.oh, c.ow, c.group, c.sh,
                                                    c.sw, c.dh, c.dw, c.pt, c.pl})));
    kb.line(fmt::format("stof::{}<{}>(geom, {}, {}, {}, {});", transpose ? "conv_transpose2d" : "conv2d", idx, load_float(x),
                        load_float(w), bias, store_at(out)));
    const DType odt = st.plan.tensors[static_cast<size_t>(st.tensor(n.outputs[0]))].dtype;
    finish(st, kb,
           fmt::format("{}_{}_{}x{}_s{}x{}_n{}", transpose ? "convt" : "conv", dtype_name(odt), c.kh, c.kw, c.sh, c.sw, total),
           total, n, "conv", "stof/conv.cuh");
}

void emit_resize(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    std::vector<ir::InferInput> in(n.inputs.size());
    for (size_t k = 0; k < n.inputs.size(); ++k) {
        if (n.inputs[k] == ir::kNoValue) continue;
        const ir::Value& v = g.value(n.inputs[k]);
        in[k] = {true, v.dtype, v.shape, v.data.get()};
    }
    const Shape& xs = g.value(n.inputs[0]).shape;
    const ir::ops::ResizePlan rp = ir::ops::resize_plan(n, in);
    KernelBuilder kb;
    const Operand out = operand(st, kb, st.tensor(n.outputs[0]), true), x = input(st, kb, n.inputs[0]);
    // Per axis: its taps (tables of input coordinates and weights, plan weights), or 0 where it maps through.
    std::vector<int64_t> taps;
    std::vector<std::string> index, weight;
    for (size_t d = 0; d < xs.size(); ++d) {
        if (rp.out[d] == xs[d] && rp.scale[d] == 1.0) {
            taps.push_back(0);
            index.push_back("nullptr");
            weight.push_back("nullptr");
            continue;
        }
        const auto axis = ir::ops::axis_taps(n, xs[d], rp.out[d], rp.scale[d]);
        size_t ntaps = 0;
        for (const auto& t : axis) ntaps = std::max(ntaps, t.size());
        Tensor idx(DType::i32, {rp.out[d], static_cast<int64_t>(ntaps)}),
            w(DType::f32, {rp.out[d], static_cast<int64_t>(ntaps)});
        for (size_t o = 0; o < axis.size(); ++o)
            for (size_t k = 0; k < axis[o].size(); ++k) {
                idx.set_i64(static_cast<int64_t>(o * ntaps + k), axis[o][k].index);
                w.set_f64(static_cast<int64_t>(o * ntaps + k), axis[o][k].weight);
            }
        taps.push_back(static_cast<int64_t>(ntaps));
        index.push_back(kb.tensor(st.add_weight(idx, fmt::format("{}_taps{}", n.name, d)), DType::i32, false));
        weight.push_back(kb.tensor(st.add_weight(w, fmt::format("{}_weights{}", n.name, d)), DType::f32, false));
    }
    const int64_t total = numel(rp.out);
    kb.line(fmt::format("const stof::ResizeAxes<{}> axes{{{{{}}}, {{{}}}, {{{}}}, {{{}}}, {{{}}}}};", xs.size(), joined(rp.out),
                        joined(ir::ops::strides_of(xs)), joined(taps), joined(index), joined(weight)));
    kb.line(fmt::format("stof::resize<{}, {}>(axes, {}, {});", xs.size(), index_type(total), load_float(x), store_at(out)));
    const DType odt = st.plan.tensors[static_cast<size_t>(st.tensor(n.outputs[0]))].dtype;
    finish(st, kb, fmt::format("resize_{}_{}_n{}", dtype_name(odt), n.attrs.s("mode", "nearest"), total), total, n, "layout",
           "stof/resize.cuh");
}

void emit_cumsum(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    const Shape& xs = g.value(n.inputs[0]).shape;
    const ir::Value& axis_v = g.value(n.inputs[1]);
    STOF_CHECK(axis_v.data, "{}: axis must be a constant", n.label());
    const auto axis = static_cast<size_t>(ir::ops::normalize_axis(axis_v.data->get_i64(0), static_cast<int64_t>(xs.size()), n));
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d) outer *= xs[d];
    for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
    const int64_t len = xs[axis], lines = outer * inner;
    const bool exclusive = n.attrs.i("exclusive", 0) != 0, reverse = n.attrs.i("reverse", 0) != 0;
    const DType odt = st.plan.tensors[static_cast<size_t>(st.tensor(n.outputs[0]))].dtype;
    const bool flt = is_float(odt);
    KernelBuilder kb;
    const Operand out = operand(st, kb, st.tensor(n.outputs[0]), true), x = input(st, kb, n.inputs[0]);
    kb.line(fmt::format("stof::cumsum<{}, {}, {}, {}>({}, {}, {}, {}, {});", index_type(numel(xs)), flt ? "float" : "stof::i64",
                        exclusive, reverse, lines, len, inner, flt ? load_float(x) : load_int(x), store_at(out)));
    finish(st, kb, fmt::format("cumsum_{}_l{}_n{}", dtype_name(odt), len, lines), lines, n, "reduction", "stof/scan.cuh");
}

void emit_scatter_nd(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    STOF_CHECK(n.attrs.s("reduction", "none") == "none", "{}: only reduction='none' is supported in plans", n.label());
    const Shape& ds = g.value(n.inputs[0]).shape;
    const Shape& is = g.value(n.inputs[1]).shape;
    const int32_t out = st.tensor(n.outputs[0]);
    const plan::TensorDesc od = st.plan.tensors[static_cast<size_t>(out)];  // a copy: st.tensor may reallocate
    // out = data, then the updates written over it.
    plan::Step copy;
    copy.kind = plan::StepKind::copy;
    copy.label = "copy";
    copy.nodes = n.name;
    copy.copy.src = st.tensor(n.inputs[0]);
    copy.copy.dst = out;
    copy.copy.bytes = od.bytes();
    st.add_step(copy);

    const auto q = static_cast<size_t>(is.back());
    int64_t slice = 1;
    for (size_t d = q; d < ds.size(); ++d) slice *= ds[d];
    const int64_t count = numel(is) / static_cast<int64_t>(q), total = count * slice;
    const std::vector<int64_t> strides = ir::ops::strides_of(ds);
    KernelBuilder kb;
    const Operand o = operand(st, kb, out, true), idx = input(st, kb, n.inputs[1]), upd = input(st, kb, n.inputs[2]);
    kb.line(fmt::format("const stof::ScatterDims<{}> dims{{{{{}}}, {{{}}}}};", q,
                        joined(std::vector<int64_t>(ds.begin(), ds.begin() + q)),
                        joined(std::vector<int64_t>(strides.begin(), strides.begin() + q))));
    kb.line(fmt::format("stof::scatter_nd<{}>(dims, {}, {}, {}, {}, {});", q, count, slice, load_int(idx), upd.param, o.param));
    finish(st, kb, fmt::format("scatternd_{}_n{}", dtype_name(od.dtype), total), total, n, "layout", "stof/scatter.cuh");
}

}  // namespace

void emit_loop_kernel(LowerState& st, const ir::Node& n) {
    switch (n.op) {
        case ir::Op::Conv: return emit_conv(st, n, false);
        case ir::Op::ConvTranspose: return emit_conv(st, n, true);
        case ir::Op::Resize: return emit_resize(st, n);
        case ir::Op::CumSum: return emit_cumsum(st, n);
        case ir::Op::ScatterND: return emit_scatter_nd(st, n);
        default: break;
    }
    STOF_FAIL("internal: {} has no loop kernel", n.label());
}

}  // namespace stof::codegen
