#include "codegen/emitters.hpp"
#include "codegen/value_emitter.hpp"
#include "stof/error.hpp"

#include <algorithm>

namespace stof::codegen {

const char* index_type(int64_t max_index) { return max_index < (int64_t{1} << 31) ? "int" : "long long"; }

void elementwise_launch(int64_t n, plan::LaunchStep& launch, int block, int max_blocks) {
    launch.block[0] = static_cast<uint32_t>(block);
    launch.grid[0] = static_cast<uint32_t>(std::max<int64_t>(1, std::min<int64_t>(max_blocks, (n + block - 1) / block)));
}

std::string ops_tag(const std::vector<const ir::Node*>& nodes, size_t max) {
    std::vector<std::string> seen;
    for (const ir::Node* n : nodes) {
        std::string name(ir::op_name(n->op));
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
    }
    std::string tag;
    for (size_t i = 0; i < seen.size() && i < max; ++i) tag += (tag.empty() ? "" : "_") + seen[i];
    if (seen.size() > max) tag += "_etc";
    return tag;
}

std::string node_names(const std::vector<const ir::Node*>& nodes) {
    std::string s;
    for (const ir::Node* n : nodes) s += (s.empty() ? "" : ",") + n->name;
    return s;
}

void emit_injective(LowerState& st, const fusion::Segment& seg) {
    std::vector<const ir::Node*> group;
    for (int i : seg.nodes) group.push_back(&st.g.nodes[static_cast<size_t>(i)]);
    // One index range over every output, in order; float outputs whose innermost
    // dimensions are multiples of 16 bytes take 16 bytes a thread.
    int64_t total = 0;
    const DType dt = st.plan.tensors[static_cast<size_t>(st.tensor(seg.outputs[0]))].dtype;
    int vec = is_float(dt) && seg.config.vec != 1 ? 16 / static_cast<int>(dtype_size(dt)) : 1;
    const int block = seg.config.block ? seg.config.block : 256, max_blocks = seg.config.grid ? seg.config.grid : 8192;
    for (ir::ValueId root : seg.outputs) {
        const Shape& shape = st.g.value(root).shape;
        total += numel(shape);
        if (shape.empty() || shape.back() % vec != 0) vec = 1;
    }

    KernelBuilder kb;
    kb.line(fmt::format("typedef {} idx_t;", index_type(total)));
    kb.line(
        fmt::format("for (idx_t i = (blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x){0}; i < {1}; "
                    "i += static_cast<idx_t>(gridDim.x) * blockDim.x{0}) {{",
                    vec > 1 ? fmt::format(" * {}", vec) : "", total));
    int64_t start = 0;
    for (size_t j = 0; j < seg.outputs.size(); ++j) {
        const ir::ValueId root = seg.outputs[j];
        const Shape& shape = st.g.value(root).shape;
        const int32_t out = st.tensor(root);
        const std::string out_p = kb.tensor(out, st.plan.tensors[static_cast<size_t>(out)].dtype, true);
        const int64_t end = start + numel(shape);
        std::string ind = "    ";
        std::string at = "i";
        if (seg.outputs.size() > 1) {  // this output's part of the range
            kb.line(j == 0                       ? fmt::format("    if (i < {}) {{", end)
                    : j + 1 < seg.outputs.size() ? fmt::format("    }} else if (i < {}) {{", end)
                                                 : "    } else {");
            ind = "        ";
            at = "j";
            kb.line(fmt::format("{}const idx_t j = i - {};", ind, start));
        }
        std::vector<std::string> coords = delinearize(at, shape);
        if (vec > 1) coords.pop_back();
        for (size_t d = 0; d < coords.size(); ++d) {
            if (coords[d] == "0") continue;
            const std::string name = fmt::format("c{}", d);
            kb.line(fmt::format("{}const idx_t {} = {};", ind, name, coords[d]));
            coords[d] = name;
        }
        ValueEmitter em(st, kb, ind);
        if (vec > 1) {
            // The innermost coordinate is the lane: cl + k for k < vec.
            kb.line(fmt::format("{}const idx_t cl = {};", ind, coords.empty() ? at : fmt::format("{} % {}", at, shape.back())));
            coords.push_back(ValueEmitter::kLane);
            em.set_vector(vec, "cl");
            emit_vector_loop(kb, em, vec, "cl", "idx_t", ind, {{"o", [&] { return em.compute(root, coords); }}});
            kb.line(fmt::format("{}stof::store_vec<{}>({} + {}, o);", ind, vec, out_p, at));
        } else {
            const Expr e = em.compute(root, coords);
            kb.line(fmt::format("{}stof::store({} + {}, {});", ind, out_p, at, e.code));
        }
        start = end;
    }
    if (seg.outputs.size() > 1) kb.line("    }");
    kb.line("}");

    KernelJob job;
    job.key = fmt::format("ew_{}_{}_n{}{}{}", dtype_name(dt), ops_tag(group), total, vec > 1 ? fmt::format("_v{}", vec) : "",
                          block != 256 ? fmt::format("_b{}", block) : "");
    job.source = kb.source(
        job.key, fmt::format("__launch_bounds__({})", block),
        vec > 1 ? std::vector<std::string>{"stof/common.cuh", "stof/vector.cuh"} : std::vector<std::string>{"stof/common.cuh"});
    job.params = kb.params();
    job.launch.args = kb.args();
    elementwise_launch(total / vec, job.launch, block, max_blocks);
    const bool pure_layout = std::all_of(group.begin(), group.end(),
                                         [](const ir::Node* x) { return ir::op_info(x->op).category == ir::Category::layout; });
    st.add_launch(std::move(job), pure_layout ? "layout" : "elementwise", node_names(group));
}

namespace {

// `dst` (a new intermediate of dtype `to` and shape `shape` when -1) written by one
// grid-stride kernel: dst[i] = convert(src[index(i)]), `index` a C++ expression of i.
int32_t emit_copy_kernel(LowerState& st, int32_t tensor, DType to, const Shape& shape, const std::string& index,
                         const std::string& name, const std::string& key, const char* label, int32_t dst = -1) {
    const plan::TensorDesc src = st.plan.tensors[static_cast<size_t>(tensor)];
    if (dst < 0) dst = st.add_tensor(src.name + "_" + name, to, shape, plan::TensorRole::intermediate);
    const int64_t n = numel(shape);
    KernelBuilder kb;
    const std::string po = kb.tensor(dst, to, true), pi = kb.tensor(tensor, src.dtype, false);
    kb.line(fmt::format("typedef {} idx_t;", index_type(n)));
    kb.line(
        fmt::format("for (idx_t i = blockIdx.x * static_cast<idx_t>(blockDim.x) + threadIdx.x; i < {}; "
                    "i += static_cast<idx_t>(gridDim.x) * blockDim.x) {{",
                    n));
    kb.line(fmt::format("    stof::store({} + i, stof::{}({}[{}]));", po,
                        is_float(src.dtype) || is_float(to) ? "to_float" : "to_int", pi, index));
    kb.line("}");
    KernelJob job;
    job.key = key;
    job.source = kb.source(job.key, "__launch_bounds__(256)", {"stof/common.cuh"});
    job.params = kb.params();
    job.launch.args = kb.args();
    elementwise_launch(n, job.launch);
    st.add_launch(std::move(job), label, src.name);
    return dst;
}

}  // namespace

int32_t emit_convert(LowerState& st, int32_t tensor, DType to) {
    const auto [it, fresh] = st.conversions.try_emplace({tensor, to}, -1);
    if (!fresh) return it->second;
    const plan::TensorDesc src = st.plan.tensors[static_cast<size_t>(tensor)];  // a copy: add_tensor may reallocate
    it->second = emit_copy_kernel(st, tensor, to, src.shape, "i", dtype_name(to),
                                  fmt::format("convert_{}_{}_n{}", dtype_name(src.dtype), dtype_name(to), numel(src.shape)),
                                  "elementwise");
    return it->second;
}

void emit_convert_into(LowerState& st, int32_t tensor, int32_t dst) {
    const plan::TensorDesc src = st.plan.tensors[static_cast<size_t>(tensor)];
    const DType to = st.plan.tensors[static_cast<size_t>(dst)].dtype;
    emit_copy_kernel(st, tensor, to, src.shape, "i", dtype_name(to),
                     fmt::format("convert_{}_{}_n{}", dtype_name(src.dtype), dtype_name(to), numel(src.shape)), "elementwise",
                     dst);
}

int32_t emit_broadcast(LowerState& st, int32_t tensor, const Shape& shape) {
    const plan::TensorDesc src = st.plan.tensors[static_cast<size_t>(tensor)];  // a copy: add_tensor may reallocate
    Shape padded(shape.size() - src.shape.size(), 1);
    padded.insert(padded.end(), src.shape.begin(), src.shape.end());
    std::string index = "0";
    int64_t inner = 1, src_stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        if (padded[d] != 1) index += fmt::format(" + (i / {}) % {} * {}", inner, shape[d], src_stride);
        inner *= shape[d];
        src_stride *= padded[d];
    }
    return emit_copy_kernel(
        st, tensor, src.dtype, shape, index, "broadcast",
        fmt::format("broadcast_{}_{}_to_{}", dtype_name(src.dtype), fmt::join(src.shape, "x"), fmt::join(shape, "x")),
        "layout");
}

}  // namespace stof::codegen
