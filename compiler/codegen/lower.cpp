#include "codegen/lower.hpp"

#include "codegen/compile_kernels.hpp"
#include "codegen/emitters.hpp"
#include "codegen/input_range.hpp"
#include "codegen/lower_state.hpp"
#include "codegen/memory_plan.hpp"
#include "codegen/nvrtc.hpp"
#include "stof/error.hpp"
#include "stof/version.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>

namespace stof::codegen {

using fusion::SegmentKind;

AttentionKernelChoice parse_attention_kernel_choice(std::string_view name) {
    if (name == "auto") return AttentionKernelChoice::selector;
    if (name == "block-wise") return AttentionKernelChoice::block_wise;
    if (name == "row-wise") return AttentionKernelChoice::row_wise;
    STOF_FAIL("attention kernel '{}': use auto, block-wise or row-wise", name);
}

const char* attention_kernel_choice_name(AttentionKernelChoice c) {
    switch (c) {
        case AttentionKernelChoice::selector: return "auto";
        case AttentionKernelChoice::block_wise: return "block-wise";
        case AttentionKernelChoice::row_wise: return "row-wise";
    }
    return "?";
}

namespace {

// Now, or $SOURCE_DATE_EPOCH when set (reproducible builds: the same inputs give the same plan bytes).
std::string utc_now() {
    std::time_t t = std::time(nullptr);
    if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
        char* end = nullptr;
        const long long v = std::strtoll(epoch, &end, 10);
        STOF_CHECK(end != epoch && *end == 0 && v >= 0, "SOURCE_DATE_EPOCH='{}' is not a number of seconds", epoch);
        t = static_cast<std::time_t>(v);
    }
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

}  // namespace

plan::Plan lower(const ir::Graph& g, const fusion::FusionPlan& fp, const LowerOptions& opt) {
    check_arch(opt.arch);
    STOF_CHECK(fp.inlined.size() == g.values.size() && fp.stored.size() == g.values.size(),
               "internal: the fusion plan is for another graph");
    plan::Plan p;
    p.meta.model = opt.model;
    p.meta.stofc_version = kVersion;
    p.meta.target_arch = opt.arch;
    p.meta.nvrtc_version = nvrtc_version();
    p.meta.precision = precision_name(opt.precision);
    p.meta.created = utc_now();
    LowerState st(g, p, opt.arch, opt.precision);
    st.attention_kernel = opt.attention_kernel;
    st.placeholder_weights = opt.placeholder_weights;
    st.inlined = fp.inlined;
    std::vector<const fusion::Segment*> view_of(g.values.size(), nullptr);
    for (const fusion::Segment& s : fp.segments)
        if (s.kind == SegmentKind::view) view_of[static_cast<size_t>(s.outputs[0])] = &s;
    // The stored value a view segment reshapes.
    auto view_base = [&](const fusion::Segment& s) { return g.nodes[static_cast<size_t>(s.nodes.front())].inputs[0]; };

    // Tensors: inputs, outputs, stored values and views (aliases), in node order.
    for (ir::ValueId v : g.inputs) {
        const ir::Value& val = g.value(v);
        STOF_CHECK(val.dtype != DType::f64, "input '{}' is float64; plans take float32, float16 or integer inputs", val.name);
        st.tensor_of[static_cast<size_t>(v)] = st.add_tensor(val.name, val.dtype, val.shape, plan::TensorRole::input);
        p.inputs.push_back(st.tensor_of[static_cast<size_t>(v)]);
        if (!is_float(val.dtype) && val.dtype != DType::boolean) {
            plan::TensorDesc& d = p.tensors[static_cast<size_t>(st.tensor_of[static_cast<size_t>(v)])];
            std::tie(d.int_lo, d.int_hi) = integer_input_range(g, v);
        }
    }
    std::vector<int32_t> output_tensor(g.values.size(), -1);
    for (ir::ValueId v : g.outputs) {
        const ir::Value& val = g.value(v);
        if (output_tensor[static_cast<size_t>(v)] < 0) {
            const DType dt = val.dtype == DType::f64 ? DType::f32 : val.dtype;
            output_tensor[static_cast<size_t>(v)] = st.add_tensor(val.name, dt, val.shape, plan::TensorRole::output);
        }
        p.outputs.push_back(output_tensor[static_cast<size_t>(v)]);
    }
    // The base of a view segment that is a graph output (a row normalisation's output) is the
    // graph output's tensor, in the base's shape.
    std::vector<int32_t> viewed_output(g.values.size(), -1);
    for (const fusion::Segment& s : fp.segments)
        if (s.kind == SegmentKind::view && output_tensor[static_cast<size_t>(s.outputs[0])] >= 0)
            viewed_output[static_cast<size_t>(view_base(s))] = output_tensor[static_cast<size_t>(s.outputs[0])];
    for (const ir::Node& n : g.nodes) {
        for (ir::ValueId v : n.outputs) {
            const auto vi = static_cast<size_t>(v);
            if (!fp.stored[vi]) continue;
            if (output_tensor[vi] >= 0) {
                st.tensor_of[vi] = output_tensor[vi];
                continue;
            }
            const ir::Value& val = g.value(v);
            // v as an alias of tensor `base` (its type and buffer, v's shape).
            auto alias = [&](int32_t base) {
                const plan::TensorDesc b = p.tensors[static_cast<size_t>(base)];
                const int32_t t = st.add_tensor(
                    val.name, b.dtype, val.shape,
                    b.role == plan::TensorRole::weight ? plan::TensorRole::weight : plan::TensorRole::intermediate);
                st.alias_of[static_cast<size_t>(t)] = base;
                p.tensors[static_cast<size_t>(t)].buffer = b.buffer;
                st.tensor_of[vi] = t;
            };
            if (viewed_output[vi] >= 0) {
                alias(viewed_output[vi]);
                continue;
            }
            if (const fusion::Segment* view = view_of[vi]) {
                alias(st.tensor(view_base(*view)));
                continue;
            }
            st.tensor_of[vi] = st.add_tensor(val.name, plan_dtype(val.dtype, opt.precision), val.shape,
                                             plan::TensorRole::intermediate);
        }
    }
    std::vector<char> needs_copy(g.values.size(), 0);
    for (ir::ValueId v : g.outputs) {
        const auto vi = static_cast<size_t>(v);
        if (st.tensor_of[vi] != output_tensor[vi]) needs_copy[vi] = 1;  // an input, a constant or a view
    }

    // Steps, one segment after the other.
    for (const fusion::Segment& s : fp.segments) {
        // A segment that stores no elements has nothing to compute.
        if (!s.outputs.empty() &&
            std::all_of(s.outputs.begin(), s.outputs.end(), [&](ir::ValueId v) { return numel(g.value(v).shape) == 0; }))
            continue;
        const ir::Node& n = g.nodes[static_cast<size_t>(s.nodes.front())];
        switch (s.kind) {
            case SegmentKind::view: break;
            case SegmentKind::elementwise: {
                const auto vi = static_cast<size_t>(s.outputs[0]);
                if (st.tensor_of[vi] >= 0 && st.alias_of[static_cast<size_t>(st.tensor_of[vi])] < 0) emit_injective(st, s);
                break;
            }
            case SegmentKind::row: emit_rows(st, n); break;
            case SegmentKind::rownorm: emit_rownorm(st, s); break;
            case SegmentKind::loop: emit_loop_kernel(st, n); break;
            case SegmentKind::attention: emit_attention(st, n); break;
            case SegmentKind::gemm: {
                std::vector<const ir::Node*> epi;
                for (size_t k = 1; k < s.nodes.size(); ++k) epi.push_back(&g.nodes[static_cast<size_t>(s.nodes[k])]);
                emit_gemm(st, n, epi, s.config.algo);
                break;
            }
        }
    }
    std::vector<char> copied(g.values.size(), 0);
    for (ir::ValueId v : g.outputs) {
        const auto vi = static_cast<size_t>(v);
        if (!needs_copy[vi] || copied[vi] || p.tensors[static_cast<size_t>(output_tensor[vi])].bytes() == 0) continue;
        copied[vi] = 1;
        plan::Step s;
        s.kind = plan::StepKind::copy;
        s.label = "copy";
        s.nodes = g.value(v).name;
        s.copy.dst = output_tensor[vi];
        const ir::Value& val = g.value(v);
        s.copy.src = val.data
                         ? st.add_weight(cast(*val.data, p.tensors[static_cast<size_t>(s.copy.dst)].dtype), val.name + ".value")
                         : st.tensor(v);
        const plan::TensorDesc& src = p.tensors[static_cast<size_t>(s.copy.src)];
        STOF_CHECK(src.dtype == p.tensors[static_cast<size_t>(s.copy.dst)].dtype,
                   "internal: output '{}' is copied from a {} tensor", g.value(v).name, dtype_name(src.dtype));
        s.copy.bytes = src.bytes();
        st.add_step(std::move(s));
    }

    st.finish_placeholders();
    plan_memory(p, st.alias_of);
    const auto level = opt.quiet ? spdlog::level::debug : spdlog::level::info;
    spdlog::log(level, "plan: {} steps, {} tensors, arena {:.1f} MB, weights {:.1f} MB", p.steps.size(), p.tensors.size(),
                static_cast<double>(p.arena_bytes) / 1e6, static_cast<double>(p.weights_bytes()) / 1e6);
    const auto t0 = std::chrono::steady_clock::now();
    compile_kernels(st, opt);
    spdlog::log(level, "NVRTC: {:.1f} s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return p;
}

}  // namespace stof::codegen
