#include "codegen/lower.hpp"

#include "codegen/emitters.hpp"
#include "codegen/input_range.hpp"
#include "codegen/lower_state.hpp"
#include "codegen/memory_plan.hpp"
#include "codegen/nvrtc.hpp"
#include "codegen/storage.hpp"
#include "stof/error.hpp"
#include "stof/version.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <thread>

namespace stof::codegen {

using ir::Op;

namespace {

enum class Kind { injective, rows, gemm, direct, attention };

Kind kind_of(const ir::Node& n) {
    switch (n.op) {
        case Op::Softmax: case Op::LayerNormalization: case Op::RMSNorm: case Op::ReduceMean: case Op::ReduceSum: case Op::ReduceMax:
        case Op::ReduceMin:
            return Kind::rows;
        case Op::MatMul: case Op::Gemm: return Kind::gemm;
        case Op::SparseAttention: return Kind::attention;
        case Op::Conv: case Op::ConvTranspose: case Op::Resize: case Op::CumSum: case Op::ScatterND: return Kind::direct;
        case Op::Shape: case Op::Size:
            STOF_FAIL("internal: {} was not folded", n.label());
        default: return Kind::injective;
    }
}

bool is_view(Op op) {
    return op == Op::Reshape || op == Op::Squeeze || op == Op::Unsqueeze || op == Op::Flatten || op == Op::Identity;
}

// The consumers of each value (node indices).
std::vector<std::vector<int>> consumers_of(const ir::Graph& g) {
    std::vector<std::vector<int>> c(g.values.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (ir::ValueId v : g.nodes[i].inputs)
            if (v != ir::kNoValue) c[static_cast<size_t>(v)].push_back(static_cast<int>(i));
    return c;
}

// Bias-add / ReLU / tanh-GELU nodes after a GEMM that cuBLASLt can apply in its epilogue.
std::vector<int> gemm_epilogue(const ir::Graph& g, const ir::Node& n, const std::vector<std::vector<int>>& cons,
                               const std::vector<char>& is_output) {
    std::vector<int> chain;
    if (n.op == Op::Gemm && n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) return chain;
    const Shape& out_shape = g.value(n.outputs[0]).shape;
    if (out_shape.empty()) return chain;
    const int64_t cols = out_shape.back();
    ir::ValueId v = n.outputs[0];
    bool has_bias = false;
    while (true) {
        const auto& c = cons[static_cast<size_t>(v)];
        if (c.size() != 1 || is_output[static_cast<size_t>(v)]) break;
        const ir::Node& next = g.nodes[static_cast<size_t>(c[0])];
        if (next.op == Op::Add && !has_bias && chain.empty()) {
            const ir::ValueId other = next.inputs[0] == v ? next.inputs[1] : next.inputs[0];
            const ir::Value& b = g.value(other);
            const bool row_vector = b.data && numel(b.shape) == cols && !b.shape.empty() && b.shape.back() == cols;
            if (!row_vector || next.inputs[0] == next.inputs[1] || g.value(next.outputs[0]).shape != out_shape) break;
            has_bias = true;
        } else if (next.op == Op::Relu || (next.op == Op::Gelu && next.attrs.s("approximate", "none") == "tanh")) {
            chain.push_back(c[0]);
            break;
        } else {
            break;
        }
        chain.push_back(c[0]);
        v = next.outputs[0];
    }
    return chain;
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// Gives each distinct source one kernel (renaming entry points whose keys
// collide), compiles them in parallel and points the launch steps at them.
void compile_kernels(LowerState& st, const LowerOptions& opt) {
    std::map<std::string, int32_t> by_source;
    std::map<std::string, int> key_uses;
    std::vector<size_t> job_of_kernel;
    size_t job = 0;
    for (plan::Step& s : st.plan.steps) {
        if (s.kind != plan::StepKind::launch) continue;
        KernelJob& j = st.jobs.at(job);
        auto it = by_source.find(j.source);
        if (it == by_source.end()) {
            if (const int n = key_uses[j.key]++; n > 0) {
                const std::string renamed = fmt::format("{}_{}", j.key, n + 1);
                const size_t at = j.source.find(" " + j.key + "(");
                STOF_CHECK(at != std::string::npos, "internal: kernel '{}' has no entry point", j.key);
                const std::string original = j.source;
                j.source.replace(at + 1, j.key.size(), renamed);
                j.key = renamed;
                by_source[original] = static_cast<int32_t>(st.plan.kernels.size());
            }
            it = by_source.emplace(j.source, static_cast<int32_t>(st.plan.kernels.size())).first;
            plan::KernelDesc k;
            k.key = j.key;
            k.entry = j.key;
            k.arch = opt.arch;
            k.params = j.params;
            st.plan.kernels.push_back(std::move(k));
            job_of_kernel.push_back(job);
        }
        s.launch.kernel = it->second;
        ++job;
    }
    const std::string cache = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
    const size_t total = st.plan.kernels.size();
    const unsigned threads = opt.jobs > 0 ? static_cast<unsigned>(opt.jobs) : std::max(1u, std::thread::hardware_concurrency());
    std::atomic<size_t> next{0}, done{0}, cached{0};
    std::vector<std::string> errors(total);
    auto worker = [&] {
        for (size_t k = next++; k < total; k = next++) {
            plan::KernelDesc& kd = st.plan.kernels[k];
            try {
                CompiledKernel c = compile_kernel(kd.key, st.jobs[job_of_kernel[k]].source, opt.arch, cache);
                kd.cubin = std::move(c.cubin);
                kd.ptx = std::move(c.ptx);
                cached += c.cached;
            } catch (const std::exception& e) {
                errors[k] = e.what();
            }
            const size_t d = ++done;
            if (d % 16 == 0 || d == total) spdlog::info("  NVRTC {}/{} kernels", d, total);
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(total, 1))); ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
    for (const std::string& e : errors) STOF_CHECK(e.empty(), "{}", e);
    spdlog::info("kernels: {} compiled for {}, {} from the cache ({})", total - cached, opt.arch, cached.load(), cache);
}

}  // namespace

plan::Plan lower(const ir::Graph& input, const LowerOptions& opt) {
    check_arch(opt.arch);
    float_storage(opt.precision);  // validates the name
    const ir::Graph g =
        expand_attention(input, [&](const ir::Node& n) { return attention_on_kernels(input, n, opt.precision); });
    plan::Plan p;
    p.meta.model = opt.model;
    p.meta.stofc_version = kVersion;
    p.meta.target_arch = opt.arch;
    p.meta.nvrtc_version = nvrtc_version();
    p.meta.precision = opt.precision;
    p.meta.created = utc_now();
    LowerState st(g, p, opt.arch);
    STOF_CHECK(opt.attention_kernel == "auto" || opt.attention_kernel == "block-wise" || opt.attention_kernel == "row-wise",
               "attention kernel '{}': use auto, block-wise or row-wise", opt.attention_kernel);
    st.attention_kernel = opt.attention_kernel;

    const std::vector<std::vector<int>> cons = consumers_of(g);
    std::vector<char> is_output(g.values.size(), 0);
    for (ir::ValueId o : g.outputs) is_output[static_cast<size_t>(o)] = 1;

    // Partition: GEMM epilogues, then injective values inlined into their single injective consumer.
    std::vector<Kind> kind;
    for (const ir::Node& n : g.nodes) kind.push_back(kind_of(n));
    std::vector<int> folded_into(g.nodes.size(), -1);
    std::vector<std::vector<int>> epilogue(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (kind[i] != Kind::gemm) continue;
        epilogue[i] = gemm_epilogue(g, g.nodes[i], cons, is_output);
        for (int e : epilogue[i]) folded_into[static_cast<size_t>(e)] = static_cast<int>(i);
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (kind[i] != Kind::injective || folded_into[i] >= 0) continue;
        for (ir::ValueId v : g.nodes[i].outputs) {
            const auto& c = cons[static_cast<size_t>(v)];
            st.inlined[static_cast<size_t>(v)] = c.size() == 1 && !is_output[static_cast<size_t>(v)] &&
                                                 kind[static_cast<size_t>(c[0])] == Kind::injective &&
                                                 folded_into[static_cast<size_t>(c[0])] < 0;
        }
    }

    // Tensors: inputs, outputs, stored intermediates and views (aliases).
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
    std::vector<char> needs_copy(g.values.size(), 0);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const ir::Node& n = g.nodes[i];
        // A GEMM with an epilogue stores only the epilogue's last output.
        if (folded_into[i] >= 0 && epilogue[static_cast<size_t>(folded_into[i])].back() != static_cast<int>(i)) continue;
        if (kind[i] == Kind::gemm && !epilogue[i].empty()) continue;
        for (ir::ValueId v : n.outputs) {
            const auto vi = static_cast<size_t>(v);
            if (st.inlined[vi]) continue;
            if (output_tensor[vi] >= 0) {
                st.tensor_of[vi] = output_tensor[vi];
                continue;
            }
            const ir::Value& val = g.value(v);
            if (kind[i] == Kind::injective && folded_into[i] < 0) {
                const std::vector<const ir::Node*> grp = injective_group(st, v);
                const bool views = std::all_of(grp.begin(), grp.end(), [](const ir::Node* x) { return is_view(x->op); });
                if (views) {
                    ir::ValueId base = grp.front()->inputs[0];
                    const int32_t bt = st.tensor(base);
                    const int32_t t = st.add_tensor(val.name, p.tensors[static_cast<size_t>(bt)].dtype, val.shape,
                                                    p.tensors[static_cast<size_t>(bt)].role == plan::TensorRole::weight
                                                        ? plan::TensorRole::weight
                                                        : plan::TensorRole::intermediate);
                    st.alias_of[static_cast<size_t>(t)] = bt;
                    p.tensors[static_cast<size_t>(t)].buffer = p.tensors[static_cast<size_t>(bt)].buffer;
                    st.tensor_of[vi] = t;
                    continue;
                }
            }
            st.tensor_of[vi] = st.add_tensor(val.name, storage_dtype(val.dtype, opt.precision), val.shape,
                                             plan::TensorRole::intermediate);
        }
    }
    for (ir::ValueId v : g.outputs) {
        const auto vi = static_cast<size_t>(v);
        if (st.tensor_of[vi] != output_tensor[vi]) needs_copy[vi] = 1;  // an input, a constant or a view
    }

    // Steps, in node order.
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const ir::Node& n = g.nodes[i];
        if (folded_into[i] >= 0) continue;
        switch (kind[i]) {
            case Kind::injective:
                for (ir::ValueId v : n.outputs) {
                    const auto vi = static_cast<size_t>(v);
                    if (st.inlined[vi] || st.tensor_of[vi] < 0 || st.alias_of[static_cast<size_t>(st.tensor_of[vi])] >= 0)
                        continue;
                    emit_injective(st, v);
                }
                break;
            case Kind::rows: emit_rows(st, n); break;
            case Kind::direct: emit_direct(st, n); break;
            case Kind::attention: emit_attention(st, n); break;
            case Kind::gemm: {
                std::vector<const ir::Node*> epi;
                for (int e : epilogue[i]) epi.push_back(&g.nodes[static_cast<size_t>(e)]);
                emit_gemm(st, n, epi);
                break;
            }
        }
    }
    std::vector<char> copied(g.values.size(), 0);
    for (ir::ValueId v : g.outputs) {
        const auto vi = static_cast<size_t>(v);
        if (!needs_copy[vi] || copied[vi]) continue;
        copied[vi] = 1;
        plan::Step s;
        s.kind = plan::StepKind::copy;
        s.label = "copy";
        s.nodes = g.value(v).name;
        s.copy.dst = output_tensor[vi];
        const ir::Value& val = g.value(v);
        s.copy.src = val.data ? st.add_weight(cast(*val.data, p.tensors[static_cast<size_t>(s.copy.dst)].dtype), val.name + ".value")
                              : st.tensor(v);
        const plan::TensorDesc& src = p.tensors[static_cast<size_t>(s.copy.src)];
        STOF_CHECK(src.dtype == p.tensors[static_cast<size_t>(s.copy.dst)].dtype,
                   "internal: output '{}' is copied from a {} tensor", g.value(v).name, dtype_name(src.dtype));
        s.copy.bytes = src.bytes();
        st.add_step(std::move(s));
    }

    plan_memory(p, st.alias_of);
    spdlog::info("plan: {} steps, {} tensors, arena {:.1f} MB, weights {:.1f} MB", p.steps.size(), p.tensors.size(),
                 static_cast<double>(p.arena_bytes) / 1e6, static_cast<double>(p.weights.size()) / 1e6);
    const auto t0 = std::chrono::steady_clock::now();
    compile_kernels(st, opt);
    spdlog::info("NVRTC: {:.1f} s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return p;
}

}  // namespace stof::codegen
