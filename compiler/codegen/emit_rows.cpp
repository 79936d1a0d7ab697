// Softmax, LayerNormalization, RMSNorm and ReduceMean/Sum/Max/Min as row kernels
// (templates/stof/rows.cuh): `rows` independent rows of `len` elements.
#include "codegen/emitters.hpp"
#include "codegen/value_emitter.hpp"
#include "ops/op_util.hpp"
#include "stof/error.hpp"

namespace stof::codegen {

namespace {

struct RowGeometry {
    int64_t rows = 1, len = 1;
    Shape reduced;      // the reduced axes' sizes, in order (len = their product)
    std::string index;  // C++ expression of the input's linear index from `row` and `col`
};

// Rows over the (sorted) reduced axes `red` of shape `s`; kept axes enumerate rows.
RowGeometry row_geometry(const Shape& s, const std::vector<char>& red) {
    RowGeometry g;
    Shape kept_shape, red_shape;
    std::vector<int64_t> kept_stride, red_stride;
    const std::vector<int64_t> st = ir::ops::strides_of(s);
    for (size_t d = 0; d < s.size(); ++d) {
        if (red[d]) {
            red_shape.push_back(s[d]);
            red_stride.push_back(st[d]);
        } else {
            kept_shape.push_back(s[d]);
            kept_stride.push_back(st[d]);
        }
    }
    g.rows = numel(kept_shape);
    g.len = numel(red_shape);
    g.reduced = red_shape;
    // Trailing reduced axes: rows are contiguous.
    bool trailing = true;
    for (size_t d = 0, seen_red = 0; d < s.size(); ++d) {
        if (red[d]) seen_red = 1;
        else if (seen_red && s[d] != 1) trailing = false;
    }
    if (trailing) {
        g.index = fmt::format("row * {} + col", g.len);
        return g;
    }
    std::string idx;
    const std::vector<std::string> kc = delinearize("row", kept_shape), rc = delinearize("col", red_shape);
    for (size_t k = 0; k < kc.size(); ++k)
        if (kc[k] != "0") idx += fmt::format("{}{} * {}", idx.empty() ? "" : " + ", kc[k], kept_stride[k]);
    for (size_t k = 0; k < rc.size(); ++k)
        if (rc[k] != "0") idx += fmt::format("{}{} * {}", idx.empty() ? "" : " + ", rc[k], red_stride[k]);
    g.index = idx.empty() ? "0" : idx;
    return g;
}

// BLOCK and ITEMS for rows of `len` held in registers (ITEMS 0: streamed).
std::pair<int, int> row_config(int64_t len) {
    if (len <= 128) return {32, static_cast<int>((len + 31) / 32)};
    if (len <= 1024) return {128, static_cast<int>((len + 127) / 128)};
    if (len <= 8192) return {256, static_cast<int>((len + 255) / 256)};
    if (len <= 32768) return {1024, static_cast<int>((len + 1023) / 1024)};
    return {1024, 0};
}

}  // namespace

std::string column_param(LowerState& st, KernelBuilder& kb, const ir::Node& n, size_t k, const Shape& norm, double fill) {
    const int64_t len = numel(norm);
    Tensor t(DType::f32, {len});
    if (k < n.inputs.size() && n.inputs[k] != ir::kNoValue) {
        const ir::Value& v = st.g.value(n.inputs[k]);
        STOF_CHECK(v.data, "{}: {} must be a constant in a plan", n.label(), k == 1 ? "scale" : "bias");
        const Shape& ps = v.shape;
        STOF_CHECK(ps.size() <= norm.size(), "{}: {} of shape {} does not broadcast to {}", n.label(),
                   k == 1 ? "scale" : "bias", shape_str(ps), shape_str(norm));
        for (int64_t i = 0; i < len; ++i) {
            int64_t rest = i, at = 0, stride = 1;
            for (size_t d = norm.size(); d-- > 0;) {
                const int64_t coord = rest % norm[d];
                rest /= norm[d];
                const size_t pd = d + ps.size();
                if (pd < norm.size()) continue;  // dimension absent from the parameter
                const int64_t pdim = ps[pd - norm.size()];
                STOF_CHECK(pdim == 1 || pdim == norm[d], "{}: {} of shape {} does not broadcast to {}", n.label(),
                           k == 1 ? "scale" : "bias", shape_str(ps), shape_str(norm));
                at += (pdim == 1 ? 0 : coord) * stride;
                stride *= pdim;
            }
            t.set_f64(i, v.data->get_f64(at));
        }
    } else {
        for (int64_t i = 0; i < len; ++i) t.set_f64(i, fill);
    }
    const int32_t w = st.add_weight(t, n.name + (k == 1 ? "_scale" : "_bias"));
    return kb.tensor(w, DType::f32, false);
}

void emit_rows(LowerState& st, const ir::Node& n) {
    const ir::Value& x = st.g.value(n.inputs[0]);
    const ir::ValueId out_v = n.outputs[0];
    const int32_t in_t = st.tensor(n.inputs[0]), out_t = st.tensor(out_v);
    const auto rank = static_cast<int64_t>(x.shape.size());
    std::vector<char> red(x.shape.size(), 0);
    std::string kind;
    if (n.op == ir::Op::Softmax) {
        red[static_cast<size_t>(ir::ops::normalize_axis(n.attrs.i("axis", -1), rank, n))] = 1;
        kind = "softmax";
    } else if (n.op == ir::Op::LayerNormalization || n.op == ir::Op::RMSNorm) {
        STOF_CHECK(n.outputs.size() == 1 || st.uses[static_cast<size_t>(n.outputs[1])] +
                                                    (n.outputs.size() > 2 ? st.uses[static_cast<size_t>(n.outputs[2])] : 0) ==
                                                0,
                   "{}: the Mean and InvStdDev outputs are not supported in plans", n.label());
        for (int64_t d = ir::ops::normalize_axis(n.attrs.i("axis", -1), rank, n); d < rank; ++d)
            red[static_cast<size_t>(d)] = 1;
        kind = n.op == ir::Op::RMSNorm ? "rmsnorm" : "layernorm";
    } else {
        std::vector<int64_t> axes;
        if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue) {
            const ir::Value& a = st.g.value(n.inputs[1]);
            STOF_CHECK(a.data, "{}: axes must be a constant", n.label());
            for (int64_t i = 0; i < a.data->numel(); ++i) axes.push_back(a.data->get_i64(i));
        }
        if (axes.empty() && n.attrs.i("noop_with_empty_axes", 0) == 0)
            for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
        for (int64_t a : axes) red[static_cast<size_t>(ir::ops::normalize_axis(a, rank, n))] = 1;
        kind = n.op == ir::Op::ReduceSum    ? "sum"
               : n.op == ir::Op::ReduceMean ? "mean"
               : n.op == ir::Op::ReduceMax  ? "max"
                                            : "min";
    }
    if (n.op == ir::Op::Softmax && x.shape[static_cast<size_t>(ir::ops::normalize_axis(n.attrs.i("axis", -1), rank, n))] == 0)
        STOF_FAIL("{}: softmax over an empty axis", n.label());

    // The reduced axes of a softmax are one axis; its output has the input's layout.
    const RowGeometry geo = row_geometry(x.shape, red);
    const auto [block, items] = row_config(geo.len);
    KernelBuilder kb;
    const plan::TensorDesc& in_d = st.plan.tensors[static_cast<size_t>(in_t)];
    const plan::TensorDesc& out_d = st.plan.tensors[static_cast<size_t>(out_t)];
    const std::string pin = kb.tensor(in_t, in_d.dtype, false);
    const std::string pout = kb.tensor(out_t, out_d.dtype, true);
    kb.preamble(fmt::format(
        "struct Load {{\n    const {0}* p;\n    __device__ float operator()(stof::i64 row, int col) const {{ return "
        "stof::to_float(p[{1}]); }}\n}};\n",
        c_type(in_d.dtype), geo.index));
    std::string call;
    const bool per_element = kind == "softmax" || kind == "layernorm" || kind == "rmsnorm";
    if (per_element) {
        std::string store_body = fmt::format("stof::store(p + ({}), v);", geo.index);
        std::string members = fmt::format("    {}* p;\n", c_type(out_d.dtype));
        std::string init = "Store{" + pout;
        if (kind == "layernorm") {
            const std::string ps = column_param(st, kb, n, 1, geo.reduced, 1.0),
                              pb = column_param(st, kb, n, 2, geo.reduced, 0.0);
            members += "    const float* scale;\n    const float* bias;\n";
            store_body = fmt::format("stof::store(p + ({}), fmaf(v, scale[col], bias[col]));", geo.index);
            init += ", " + ps + ", " + pb;
        } else if (kind == "rmsnorm") {
            members += "    const float* scale;\n";
            store_body = fmt::format("stof::store(p + ({}), v * scale[col]);", geo.index);
            init += ", " + column_param(st, kb, n, 1, geo.reduced, 1.0);
        }
        kb.preamble(fmt::format(
            "struct Store {{\n{}    __device__ void operator()(stof::i64 row, int col, float v) const {{ {} }}\n}};\n", members,
            store_body));
        if (kind == "softmax")
            call = fmt::format("stof::softmax_rows<{}, {}>(Load{{{}}}, {}}}, {}LL, {});", block, items, pin, init, geo.rows,
                               geo.len);
        else
            call = fmt::format("stof::{}_rows<{}, {}>(Load{{{}}}, {}}}, {}LL, {}, {});", kind, block, items, pin, init,
                               geo.rows, geo.len, literal(n.attrs.f("epsilon", 1e-5), Scalar::f));
    } else {
        const int code = kind == "sum" ? 0 : kind == "mean" ? 1 : kind == "max" ? 2 : 3;
        kb.preamble(
            fmt::format("struct Store {{\n    {}* p;\n    __device__ void operator()(stof::i64 row, float v) const {{ "
                        "stof::store(p + row, v); }}\n}};\n",
                        c_type(out_d.dtype)));
        const int rblock = geo.len <= 32 ? 32 : geo.len <= 1024 ? 128 : 256;
        call = fmt::format("stof::reduce_rows<{}, {}>(Load{{{}}}, Store{{{}}}, {}LL, {});", rblock, code, pin, pout, geo.rows,
                           geo.len);
    }
    kb.line(call);

    KernelJob job;
    job.key = fmt::format("{}_{}_r{}_c{}", kind, dtype_name(out_d.dtype), geo.rows, geo.len);
    const int launch_block = per_element ? block : (geo.len <= 32 ? 32 : geo.len <= 1024 ? 128 : 256);
    job.source = kb.source(job.key, fmt::format("__launch_bounds__({})", launch_block), {"stof/common.cuh", "stof/rows.cuh"});
    job.params = kb.params();
    job.launch.args = kb.args();
    job.launch.block[0] = static_cast<uint32_t>(launch_block);
    job.launch.grid[0] = static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(geo.rows, 65535)));
    st.add_launch(std::move(job), "reduction", n.name);
}

}  // namespace stof::codegen
