// rownorm segments (fusion/fusion_plan.hpp) as one templates/stof/rownorm.cuh kernel:
// LayerNormalization, RMSNorm or Softmax over the trailing axes of x [rows..., len...],
// x computed from stored values by the segment's prologue nodes (and also stored when
// it is a second output), scale and bias applied as f32 columns.
#include "codegen/emitters.hpp"
#include "codegen/value_emitter.hpp"
#include "ops/op_util.hpp"
#include "stof/error.hpp"

namespace stof::codegen {

namespace {

struct RowShape {
    Shape kept, reduced;  // x's leading (row) and trailing (normalised) dims
    int64_t rows = 1, len = 1;
};

RowShape row_shape(const ir::Graph& g, const ir::Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const auto rank = static_cast<int64_t>(xs.size());
    const int64_t axis = n.op == ir::Op::Softmax ? rank - 1 : ir::ops::normalize_axis(n.attrs.i("axis", -1), rank, n);
    RowShape r;
    r.kept.assign(xs.begin(), xs.begin() + axis);
    r.reduced.assign(xs.begin() + axis, xs.end());
    r.rows = numel(r.kept);
    r.len = numel(r.reduced);
    return r;
}

}  // namespace

void emit_rownorm(LowerState& st, const fusion::Segment& seg) {
    const ir::Graph& g = st.g;
    const ir::Node& n = g.nodes[static_cast<size_t>(seg.nodes.front())];
    const ir::ValueId x = n.inputs[0];
    const RowShape rs = row_shape(g, n);
    STOF_CHECK(rs.len > 0 && rs.len <= 16384, "internal: {} normalises rows of {} elements", n.label(), rs.len);
    const int32_t out_t = st.tensor(n.outputs[0]);
    const DType out_dt = st.plan.tensors[static_cast<size_t>(out_t)].dtype;
    const int32_t second = seg.outputs.size() > 1 ? st.tensor(seg.outputs[1]) : -1;

    // 16-byte accesses of the plan's float type where the innermost dim allows.
    int vec = 16 / static_cast<int>(dtype_size(plan_dtype(DType::f32, st.precision)));
    while (vec > 1 && rs.reduced.back() % vec != 0) vec /= 2;
    // Threads a row: the config's, or the fewest (a warp at least) holding at most 4 vectors
    // a thread; at most 16 vectors a thread either way.
    int threads = 32;
    while (threads < 1024 && threads * vec * 4 < rs.len) threads *= 2;
    if (seg.config.block && seg.config.block * vec * 16 >= rs.len) threads = seg.config.block;
    const auto items = static_cast<int>((rs.len + threads * vec - 1) / (threads * vec));
    const int rows_per_cta = threads == 32 ? (seg.config.rows ? seg.config.rows : 4) : 1;
    const char* op = n.op == ir::Op::LayerNormalization ? "stof::kLayerNorm"
                     : n.op == ir::Op::RMSNorm          ? "stof::kRmsNorm"
                                                        : "stof::kSoftmax";

    KernelBuilder kb;
    const std::string pout = kb.tensor(out_t, out_dt, true);
    const std::string psecond = second >= 0 ? kb.tensor(second, st.plan.tensors[static_cast<size_t>(second)].dtype, true) : "";

    // load(row, col, x[vec]): x's coordinates from the row and the lane.
    kb.line(fmt::format("typedef {} idx_t;", index_type(rs.rows * rs.len)));
    kb.line(fmt::format("auto load = [&](stof::i64 row, int col, float (&xv)[{}]) {{", vec));
    kb.line("    const idx_t rr = static_cast<idx_t>(row);");
    std::vector<std::string> coords = delinearize("rr", rs.kept);
    for (size_t d = 0; d < coords.size(); ++d) {
        if (coords[d] == "0") continue;
        kb.line(fmt::format("    const idx_t k{} = {};", d, coords[d]));
        coords[d] = fmt::format("k{}", d);
    }
    std::vector<std::string> red = delinearize("col", rs.reduced);
    for (size_t d = 0; d + 1 < red.size(); ++d) {
        if (red[d] == "0") continue;
        kb.line(fmt::format("    const idx_t r{} = {};", d, red[d]));
        red[d] = fmt::format("r{}", d);
    }
    kb.line(
        fmt::format("    const idx_t cl = {};", rs.reduced.size() == 1 ? "col" : fmt::format("col % {}", rs.reduced.back())));
    red.back() = ValueEmitter::kLane;
    coords.insert(coords.end(), red.begin(), red.end());
    ValueEmitter em(st, kb, "    ");
    em.set_vector(vec, "cl");
    // x itself when the segment computes it (a prologue), else its stored value.
    const bool computed = seg.nodes.size() > 1;
    emit_vector_loop(kb, em, vec, "cl", "idx_t", "    ",
                     {{"xt", [&] { return computed ? em.compute(x, coords) : em.at(x, coords); }}});
    kb.line(fmt::format("    for (int k = 0; k < {}; ++k) xv[k] = xt[k];", vec));
    if (second >= 0) kb.line(fmt::format("    stof::store_vec<{}>({} + row * {}LL + col, xt);", vec, psecond, rs.len));
    kb.line("};");

    // store(row, col, y[vec]): scale and bias, then the output.
    std::string scale, bias;
    if (n.op != ir::Op::Softmax) scale = column_param(st, kb, n, 1, rs.reduced, 1.0);
    if (n.op == ir::Op::LayerNormalization) bias = column_param(st, kb, n, 2, rs.reduced, 0.0);
    kb.line(fmt::format("auto store = [&](stof::i64 row, int col, const float (&y)[{}]) {{", vec));
    kb.line(fmt::format("    float o[{}];", vec));
    for (const auto& [param, name] : {std::pair{scale, "s"}, std::pair{bias, "b"}}) {
        if (param.empty()) continue;
        kb.line(fmt::format("    alignas(16) float {}[{}];", name, vec));
        kb.line(fmt::format("    stof::load_vec<{}>({} + col, {});", vec, param, name));
    }
    kb.line(fmt::format("    for (int k = 0; k < {}; ++k) o[k] = {};", vec,
                        bias.empty() ? (scale.empty() ? "y[k]" : "y[k] * s[k]") : "fmaf(y[k], s[k], b[k])"));
    kb.line(fmt::format("    stof::store_vec<{}>({} + row * {}LL + col, o);", vec, pout, rs.len));
    kb.line("};");
    kb.line(fmt::format("stof::rownorm<{}, {}, {}, {}, {}>(load, store, {}LL, {}, {});", threads, rows_per_cta, vec, items, op,
                        rs.rows, rs.len, literal(n.attrs.f("epsilon", 1e-5), Scalar::f)));

    std::vector<const ir::Node*> prologue;
    for (size_t k = 1; k < seg.nodes.size(); ++k) prologue.push_back(&g.nodes[static_cast<size_t>(seg.nodes[k])]);
    const char* kind = n.op == ir::Op::LayerNormalization ? "ln" : n.op == ir::Op::RMSNorm ? "rms" : "softmax";
    KernelJob job;
    job.key = fmt::format("rownorm_{}_{}{}_r{}_c{}_t{}_v{}", dtype_name(out_dt), kind,
                          prologue.empty() ? "" : "_" + ops_tag(prologue), rs.rows, rs.len, threads, vec);
    job.source = kb.source(job.key, fmt::format("__launch_bounds__({})", threads * rows_per_cta),
                           {"stof/common.cuh", "stof/vector.cuh", "stof/rownorm.cuh"});
    job.params = kb.params();
    job.launch.args = kb.args();
    job.launch.block[0] = static_cast<uint32_t>(threads * rows_per_cta);
    job.launch.grid[0] = static_cast<uint32_t>(
        std::max<int64_t>(1, std::min<int64_t>((rs.rows + rows_per_cta - 1) / rows_per_cta, 65535)));
    std::vector<const ir::Node*> all{&n};
    all.insert(all.end(), prologue.begin(), prologue.end());
    st.add_launch(std::move(job), "reduction", node_names(all));
}

}  // namespace stof::codegen
