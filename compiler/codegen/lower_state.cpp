#include "codegen/lower_state.hpp"

#include "precision.hpp"
#include "stof/error.hpp"
#include "stof/plan_format.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace stof::codegen {

LowerState::LowerState(const ir::Graph& graph, plan::Plan& p, std::string target_arch, Precision plan_precision)
    : g(graph),
      plan(p),
      arch(std::move(target_arch)),
      precision(plan_precision),
      tensor_of(graph.values.size(), -1),
      inlined(graph.values.size(), 0),
      uses(graph.use_counts()),
      producer(graph.producers()) {}

int32_t LowerState::add_tensor(const std::string& name, DType dtype, const Shape& shape, plan::TensorRole role) {
    plan::TensorDesc t;
    t.name = name;
    for (int i = 2; !names.insert(t.name).second; ++i) t.name = fmt::format("{}_{}", name, i);
    t.dtype = dtype;
    t.shape = shape;
    t.role = role;
    t.buffer = role == plan::TensorRole::weight ? plan::BufferKind::weights : plan::BufferKind::arena;
    plan.tensors.push_back(std::move(t));
    alias_of.push_back(-1);
    return static_cast<int32_t>(plan.tensors.size() - 1);
}

int32_t LowerState::add_weight(const Tensor& t, const std::string& name) {
    const uint32_t sum = plan::checksum(t.bytes.data(), t.bytes.size());
    for (auto [it, end] = weights_by_checksum.equal_range(sum); it != end; ++it) {
        const plan::TensorDesc& w = plan.tensors[static_cast<size_t>(it->second)];
        if (w.dtype == t.dtype && w.shape == t.shape &&
            std::equal(t.bytes.begin(), t.bytes.end(), plan.weights.begin() + static_cast<std::ptrdiff_t>(w.offset)))
            return it->second;
    }
    const int32_t idx = add_tensor(name, t.dtype, t.shape, plan::TensorRole::weight);
    const uint64_t off = (plan.weights.size() + plan::kAlignment - 1) / plan::kAlignment * plan::kAlignment;
    plan.weights.resize(off + t.bytes.size());
    if (!t.bytes.empty()) std::memcpy(plan.weights.data() + off, t.bytes.data(), t.bytes.size());
    plan.tensors[static_cast<size_t>(idx)].offset = off;
    weights_by_checksum.emplace(sum, idx);
    return idx;
}

namespace {

// A hash of c's dtype, shape and up to 4096 of its bytes spread over it: equal constants
// hash equal; unequal ones almost never do (the bytes decide).
uint64_t sampled_hash(const Tensor& c) {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t x) { h = (h ^ x) * 0x100000001b3ull; };
    mix(static_cast<uint64_t>(c.dtype));
    for (int64_t d : c.shape) mix(static_cast<uint64_t>(d));
    const size_t n = c.bytes.size(), step = std::max<size_t>(1, n / 4096);
    for (size_t i = 0; i < n; i += step) mix(c.bytes[i]);
    return h;
}

}  // namespace

int32_t LowerState::add_placeholder(const Tensor& c, DType dtype, const std::string& name) {
    const uint64_t key = sampled_hash(c);
    for (auto [it, end] = placeholders_by_hash.equal_range(key); it != end; ++it) {
        const Tensor& other = *it->second.first;
        if (other.dtype == c.dtype && other.shape == c.shape && other.bytes == c.bytes &&
            plan.tensors[static_cast<size_t>(it->second.second)].dtype == dtype)
            return it->second.second;
    }
    const int32_t idx = add_tensor(name, dtype, c.shape, plan::TensorRole::weight);
    plan.tensors[static_cast<size_t>(idx)].offset = placeholder_bytes;
    placeholder_bytes = (placeholder_bytes + plan.tensors[static_cast<size_t>(idx)].bytes() + plan::kAlignment - 1) /
                        plan::kAlignment * plan::kAlignment;
    plan.placeholders.push_back(idx);
    placeholders_by_hash.emplace(key, std::make_pair(&c, idx));
    return idx;
}

void LowerState::finish_placeholders() {
    if (plan.placeholders.empty()) return;
    const uint64_t begin = (plan.weights.size() + plan::kAlignment - 1) / plan::kAlignment * plan::kAlignment;
    for (int32_t t : plan.placeholders) plan.tensors[static_cast<size_t>(t)].offset += begin;
    plan.placeholder_end = begin + std::max<uint64_t>(placeholder_bytes, plan::kAlignment);
}

int32_t LowerState::tensor(ir::ValueId v) {
    int32_t& t = tensor_of.at(static_cast<size_t>(v));
    const ir::Value& val = g.value(v);
    if (t < 0 && val.data) {
        const DType dt = plan_dtype(val.data->dtype, precision);
        if (placeholder_weights && is_float(dt) &&
            static_cast<uint64_t>(val.data->numel()) * dtype_size(dt) >= kPlaceholderMinBytes)
            t = add_placeholder(*val.data, dt, val.name);
        else {
            int64_t clamped = 0;
            t = add_weight(to_plan_precision(*val.data, precision, &clamped), val.name);
            if (clamped > 0)
                spdlog::info("weight '{}': {} of {} values beyond fp16's range clamped to +-65504", val.name, clamped,
                             val.data->numel());
        }
    }
    STOF_CHECK(t >= 0, "internal: value '{}' has no storage in the plan", val.name);
    return t;
}

void LowerState::add_launch(KernelJob job, const std::string& label, const std::string& nodes) {
    plan::Step s;
    s.kind = plan::StepKind::launch;
    s.label = label;
    s.nodes = nodes;
    s.launch = job.launch;
    add_step(std::move(s));
    jobs.push_back(std::move(job));
}

void LowerState::add_step(plan::Step s) { plan.steps.push_back(std::move(s)); }

}  // namespace stof::codegen
