// Conv, ConvTranspose, Resize, CumSum and ScatterND as direct kernels: one
// thread per output element (or per scanned line / scattered element).
#include "codegen/emitters.hpp"
#include "codegen/value_emitter.hpp"
#include "ops/conv_geometry.hpp"
#include "ops/op_util.hpp"
#include "ops/resize_taps.hpp"
#include "stof/error.hpp"

namespace stof::codegen {

namespace {

std::string load_f(const std::string& p, const std::string& idx) { return fmt::format("stof::to_float({}[{}])", p, idx); }

// Header of a grid-stride loop over n outputs, with the coordinates of `shape` as c0.. locals.
void loop_over(KernelBuilder& kb, int64_t n, const Shape& shape) {
    kb.line(fmt::format("typedef {} idx_t;", index_type(n)));
    kb.line(fmt::format("for (idx_t i = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; i < {}; "
                        "i += static_cast<idx_t>(gridDim.x) * blockDim.x) {{", n));
    const std::vector<std::string> c = delinearize("i", shape);
    for (size_t d = 0; d < c.size(); ++d) kb.line(fmt::format("    const idx_t c{} = {};", d, c[d]));
}

void finish(LowerState& st, KernelBuilder& kb, const std::string& key, int64_t n, const ir::Node& node,
            const std::string& label) {
    KernelJob job;
    job.key = key;
    job.source = kb.source(key, "__launch_bounds__(256)", {"stof/common.cuh"});
    job.params = kb.params();
    job.launch.args = kb.args();
    elementwise_launch(n, job.launch);
    st.add_launch(std::move(job), label, node.name);
}

void emit_conv(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    const Shape& xs = g.value(n.inputs[0]).shape;
    const ir::ops::ConvGeom c = ir::ops::conv_geometry(n, xs, g.value(n.inputs[1]).shape);
    const int32_t out = st.tensor(n.outputs[0]);
    const plan::TensorDesc& od = st.plan.tensors[static_cast<size_t>(out)];
    KernelBuilder kb;
    const std::string po = kb.tensor(out, od.dtype, true);
    const std::string px = kb.tensor(st.tensor(n.inputs[0]), st.plan.tensors[static_cast<size_t>(st.tensor(n.inputs[0]))].dtype, false);
    const int32_t wt = st.tensor(n.inputs[1]);
    const std::string pw = kb.tensor(wt, st.plan.tensors[static_cast<size_t>(wt)].dtype, false);
    const bool has_bias = n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue;
    const Shape os{c.batch, c.cout, c.oh, c.ow};
    const int64_t total = numel(os), cin_g = c.cin / c.group, cout_g = c.cout / c.group;
    loop_over(kb, total, os);
    if (has_bias) {
        const int32_t bt = st.tensor(n.inputs[2]);
        kb.line(fmt::format("    float acc = {};", load_f(kb.tensor(bt, st.plan.tensors[static_cast<size_t>(bt)].dtype, false), "c1")));
    } else {
        kb.line("    float acc = 0.0f;");
    }
    kb.line(fmt::format("    const idx_t cbase = (c1 / {}) * {};", cout_g, cin_g));
    kb.line(fmt::format("    for (int ic = 0; ic < {}; ++ic) {{", cin_g));
    kb.line(fmt::format("        for (int ky = 0; ky < {}; ++ky) {{", c.kh));
    kb.line(fmt::format("            const idx_t iy = c2 * {} - {} + ky * {};", c.sh, c.pt, c.dh));
    kb.line(fmt::format("            if (iy < 0 || iy >= {}) continue;", c.h));
    kb.line(fmt::format("            for (int kx = 0; kx < {}; ++kx) {{", c.kw));
    kb.line(fmt::format("                const idx_t ix = c3 * {} - {} + kx * {};", c.sw, c.pl, c.dw));
    kb.line(fmt::format("                if (ix < 0 || ix >= {}) continue;", c.w));
    kb.line(fmt::format("                acc += {} * {};",
                        load_f(px, fmt::format("((c0 * {} + cbase + ic) * {} + iy) * {} + ix", c.cin, c.h, c.w)),
                        load_f(pw, fmt::format("((c1 * {} + ic) * {} + ky) * {} + kx", cin_g, c.kh, c.kw))));
    kb.line("            }");
    kb.line("        }");
    kb.line("    }");
    kb.line(fmt::format("    stof::store({} + i, acc);", po));
    kb.line("}");
    finish(st, kb, fmt::format("conv_{}_{}x{}_s{}x{}_n{}", dtype_name(od.dtype), c.kh, c.kw, c.sh, c.sw, total), total, n, "conv");
}

void emit_conv_transpose(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    const ir::ops::ConvGeom c = ir::ops::conv_transpose_geometry(n, g.value(n.inputs[0]).shape, g.value(n.inputs[1]).shape);
    const int32_t out = st.tensor(n.outputs[0]);
    const plan::TensorDesc& od = st.plan.tensors[static_cast<size_t>(out)];
    KernelBuilder kb;
    const std::string po = kb.tensor(out, od.dtype, true);
    const int32_t xt = st.tensor(n.inputs[0]), wt = st.tensor(n.inputs[1]);
    const std::string px = kb.tensor(xt, st.plan.tensors[static_cast<size_t>(xt)].dtype, false);
    const std::string pw = kb.tensor(wt, st.plan.tensors[static_cast<size_t>(wt)].dtype, false);
    const Shape os{c.batch, c.cout, c.oh, c.ow};
    const int64_t total = numel(os), cin_g = c.cin / c.group, cout_g = c.cout / c.group;
    loop_over(kb, total, os);
    if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
        const int32_t bt = st.tensor(n.inputs[2]);
        kb.line(fmt::format("    float acc = {};", load_f(kb.tensor(bt, st.plan.tensors[static_cast<size_t>(bt)].dtype, false), "c1")));
    } else {
        kb.line("    float acc = 0.0f;");
    }
    // Output (oy, ox) gathers input (iy, ix) with oy = iy * s - p + ky * d.
    kb.line(fmt::format("    const idx_t grp = c1 / {}, oc = c1 % {};", cout_g, cout_g));
    kb.line(fmt::format("    for (int ky = 0; ky < {}; ++ky) {{", c.kh));
    kb.line(fmt::format("        const idx_t ty = c2 + {} - ky * {};", c.pt, c.dh));
    kb.line(fmt::format("        if (ty < 0 || ty % {} != 0 || ty / {} >= {}) continue;", c.sh, c.sh, c.h));
    kb.line(fmt::format("        for (int kx = 0; kx < {}; ++kx) {{", c.kw));
    kb.line(fmt::format("            const idx_t tx = c3 + {} - kx * {};", c.pl, c.dw));
    kb.line(fmt::format("            if (tx < 0 || tx % {} != 0 || tx / {} >= {}) continue;", c.sw, c.sw, c.w));
    kb.line(fmt::format("            for (int ic = 0; ic < {}; ++ic) {{", cin_g));
    kb.line(fmt::format("                const idx_t ci = grp * {} + ic;", cin_g));
    kb.line(fmt::format("                acc += {} * {};",
                        load_f(px, fmt::format("((c0 * {} + ci) * {} + ty / {}) * {} + tx / {}", c.cin, c.h, c.sh, c.w, c.sw)),
                        load_f(pw, fmt::format("((ci * {} + oc) * {} + ky) * {} + kx", cout_g, c.kh, c.kw))));
    kb.line("            }");
    kb.line("        }");
    kb.line("    }");
    kb.line(fmt::format("    stof::store({} + i, acc);", po));
    kb.line("}");
    finish(st, kb, fmt::format("convt_{}_{}x{}_s{}x{}_n{}", dtype_name(od.dtype), c.kh, c.kw, c.sh, c.sw, total), total, n,
           "conv");
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
    const int32_t out = st.tensor(n.outputs[0]), xt = st.tensor(n.inputs[0]);
    const plan::TensorDesc& od = st.plan.tensors[static_cast<size_t>(out)];
    KernelBuilder kb;
    const std::string po = kb.tensor(out, od.dtype, true);
    const std::string px = kb.tensor(xt, st.plan.tensors[static_cast<size_t>(xt)].dtype, false);
    const int64_t total = numel(rp.out);
    loop_over(kb, total, rp.out);
    kb.line("    float acc = 0.0f;");
    // Separable interpolation: one loop over the taps of each resized axis,
    // tap positions and weights from tables computed here.
    const std::vector<int64_t> xst = ir::ops::strides_of(xs);
    std::vector<std::string> terms;
    std::string weight = "1.0f";
    int depth = 1;
    for (size_t d = 0; d < xs.size(); ++d) {
        if (rp.out[d] == xs[d] && rp.scale[d] == 1.0) {
            if (xs[d] != 1) terms.push_back(fmt::format("c{} * {}", d, xst[d]));
            continue;
        }
        const auto taps = ir::ops::axis_taps(n, xs[d], rp.out[d], rp.scale[d]);
        size_t ntaps = 0;
        for (const auto& t : taps) ntaps = std::max(ntaps, t.size());
        Tensor idx(DType::i32, {rp.out[d], static_cast<int64_t>(ntaps)}), w(DType::f32, {rp.out[d], static_cast<int64_t>(ntaps)});
        for (size_t o = 0; o < taps.size(); ++o)
            for (size_t k = 0; k < taps[o].size(); ++k) {
                idx.set_i64(static_cast<int64_t>(o * ntaps + k), taps[o][k].index);
                w.set_f64(static_cast<int64_t>(o * ntaps + k), taps[o][k].weight);
            }
        const std::string pi = kb.tensor(st.add_weight(idx, fmt::format("{}_taps{}", n.name, d)), DType::i32, false);
        const std::string pwt = kb.tensor(st.add_weight(w, fmt::format("{}_weights{}", n.name, d)), DType::f32, false);
        const std::string pad(static_cast<size_t>(4 * depth), ' ');
        kb.line(fmt::format("{0}for (int t{1} = 0; t{1} < {2}; ++t{1}) {{", pad, d, ntaps));
        kb.line(fmt::format("{}    const idx_t s{} = {}[c{} * {} + t{}];", pad, d, pi, d, ntaps, d));
        kb.line(fmt::format("{}    const float w{} = {}[c{} * {} + t{}];", pad, d, pwt, d, ntaps, d));
        ++depth;
        terms.push_back(fmt::format("s{} * {}", d, xst[d]));
        weight += fmt::format(" * w{}", d);
    }
    std::string index;
    for (const std::string& t : terms) index += (index.empty() ? "" : " + ") + t;
    kb.line(fmt::format("{}acc += {} * {};", std::string(static_cast<size_t>(4 * depth), ' '), weight,
                        load_f(px, index.empty() ? "0" : index)));
    for (int k = depth - 1; k > 0; --k) kb.line(std::string(static_cast<size_t>(4 * k), ' ') + "}");
    kb.line(fmt::format("    stof::store({} + i, acc);", po));
    kb.line("}");
    finish(st, kb, fmt::format("resize_{}_{}_n{}", dtype_name(od.dtype), n.attrs.s("mode", "nearest"), total), total, n,
           "layout");
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
    const int32_t out = st.tensor(n.outputs[0]), xt = st.tensor(n.inputs[0]);
    const DType odt = st.plan.tensors[static_cast<size_t>(out)].dtype;
    const bool flt = is_float(odt);
    KernelBuilder kb;
    const std::string po = kb.tensor(out, odt, true);
    const std::string px = kb.tensor(xt, st.plan.tensors[static_cast<size_t>(xt)].dtype, false);
    kb.line(fmt::format("typedef {} idx_t;", index_type(numel(xs))));
    kb.line(fmt::format("for (idx_t line = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; line < {}; "
                        "line += static_cast<idx_t>(gridDim.x) * blockDim.x) {{", lines));
    kb.line(fmt::format("    const idx_t base = (line / {}) * {} + line % {};", inner, len * inner, inner));
    kb.line(fmt::format("    {} acc = 0;", flt ? "float" : "stof::i64"));
    kb.line(fmt::format("    for (idx_t s = 0; s < {}; ++s) {{", len));
    kb.line(fmt::format("        const idx_t at = base + ({}) * {};", reverse ? fmt::format("{} - s", len - 1) : "s", inner));
    const std::string x = fmt::format("stof::{}({}[at])", flt ? "to_float" : "to_int", px);
    if (exclusive) {
        kb.line(fmt::format("        stof::store({} + at, acc);", po));
        kb.line(fmt::format("        acc += {};", x));
    } else {
        kb.line(fmt::format("        acc += {};", x));
        kb.line(fmt::format("        stof::store({} + at, acc);", po));
    }
    kb.line("    }");
    kb.line("}");
    finish(st, kb, fmt::format("cumsum_{}_l{}_n{}", dtype_name(odt), len, lines), lines, n, "reduction");
}

void emit_scatter_nd(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    STOF_CHECK(n.attrs.s("reduction", "none") == "none", "{}: only reduction='none' is supported in plans", n.label());
    const Shape& ds = g.value(n.inputs[0]).shape;
    const Shape& is = g.value(n.inputs[1]).shape;
    const int32_t out = st.tensor(n.outputs[0]);
    const plan::TensorDesc& od = st.plan.tensors[static_cast<size_t>(out)];
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
    const std::vector<int64_t> st_d = ir::ops::strides_of(ds);
    KernelBuilder kb;
    const std::string po = kb.tensor(out, od.dtype, true);
    const int32_t it = st.tensor(n.inputs[1]), ut = st.tensor(n.inputs[2]);
    const std::string pi = kb.tensor(it, st.plan.tensors[static_cast<size_t>(it)].dtype, false);
    const std::string pu = kb.tensor(ut, st.plan.tensors[static_cast<size_t>(ut)].dtype, false);
    kb.line("typedef long long idx_t;");
    kb.line(fmt::format("for (idx_t i = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; i < {}; "
                        "i += static_cast<idx_t>(gridDim.x) * blockDim.x) {{", total));
    kb.line(fmt::format("    const idx_t k = i / {}, e = i % {};", slice, slice));
    kb.line("    idx_t at = e;");
    for (size_t d = 0; d < q; ++d) {
        kb.line(fmt::format("    {{ stof::i64 j = stof::to_int({}[k * {} + {}]); if (j < 0) j += {}; "
                            "j = min(max(j, 0LL), {}LL); at += j * {}; }}",
                            pi, q, d, ds[d], ds[d] - 1, st_d[d]));
    }
    kb.line(fmt::format("    {}[at] = {}[i];", po, pu));
    kb.line("}");
    finish(st, kb, fmt::format("scatternd_{}_n{}", dtype_name(od.dtype), total), total, n, "layout");
}

}  // namespace

void emit_direct(LowerState& st, const ir::Node& n) {
    switch (n.op) {
        case ir::Op::Conv: return emit_conv(st, n);
        case ir::Op::ConvTranspose: return emit_conv_transpose(st, n);
        case ir::Op::Resize: return emit_resize(st, n);
        case ir::Op::CumSum: return emit_cumsum(st, n);
        case ir::Op::ScatterND: return emit_scatter_nd(st, n);
        default: break;
    }
    STOF_FAIL("internal: {} has no direct kernel", n.label());
}

}  // namespace stof::codegen
