// The plan part of the C API (stof/c_api.h) over stof::Runtime.
#include "c_api_status.hpp"
#include "plan/plan_reader.hpp"
#include "stof/runtime.hpp"
#include "stof/error.hpp"

#include <fmt/format.h>

#include <memory>

struct stof_plan {
    std::unique_ptr<stof::Runtime> runtime;
};

namespace {

using stof::capi::InvalidArgument;

template <class T> void need(const T* p, const char* what) {
    if (!p) throw InvalidArgument{fmt::format("{} is null", what)};
}

const stof::TensorInfo& at(const std::vector<stof::TensorInfo>& list, size_t index, const char* what) {
    if (index >= list.size())
        throw InvalidArgument{fmt::format("{} index {} is out of range ({} {}s)", what, index, list.size(), what)};
    return list[index];
}

void describe(const stof::TensorInfo& t, stof_tensor_info* info) {
    info->name = t.name.c_str();
    info->dtype = static_cast<int32_t>(t.dtype);
    info->rank = static_cast<int32_t>(t.shape.size());
    info->dims = t.shape.data();
    info->bytes = static_cast<size_t>(stof::numel(t.shape)) * stof::dtype_size(t.dtype);
}

size_t find(const std::vector<stof::TensorInfo>& list, const char* name, const char* what) {
    for (size_t i = 0; i < list.size(); ++i)
        if (list[i].name == name) return i;
    throw InvalidArgument{fmt::format("the plan has no {} named '{}'", what, name)};
}

}  // namespace

extern "C" {

stof_status stof_plan_open(const char* path, int device, stof_plan** out) {
    stof::plan::Plan p;
    const stof_status read = stof::capi::guard(STOF_ERROR_PLAN, [&] {
        need(out, "out");
        *out = nullptr;
        need(path, "path");
        p = stof::plan::read_plan(path);
    });
    if (read != STOF_OK) return read;
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        auto plan = std::make_unique<stof_plan>();
        plan->runtime = std::make_unique<stof::Runtime>(std::move(p), stof::RuntimeOptions{device});
        *out = plan.release();
    });
}

void stof_plan_close(stof_plan* plan) {
    stof::capi::guard(STOF_ERROR_CUDA, [&] { delete plan; });
}

stof_status stof_plan_num_inputs(const stof_plan* plan, size_t* count) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(count, "count");
        *count = plan->runtime->inputs().size();
    });
}

stof_status stof_plan_num_outputs(const stof_plan* plan, size_t* count) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(count, "count");
        *count = plan->runtime->outputs().size();
    });
}

stof_status stof_plan_input_info(const stof_plan* plan, size_t index, stof_tensor_info* info) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(info, "info");
        describe(at(plan->runtime->inputs(), index, "input"), info);
    });
}

stof_status stof_plan_output_info(const stof_plan* plan, size_t index, stof_tensor_info* info) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(info, "info");
        describe(at(plan->runtime->outputs(), index, "output"), info);
    });
}

stof_status stof_plan_find_input(const stof_plan* plan, const char* name, size_t* index) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(name, "name");
        need(index, "index");
        *index = find(plan->runtime->inputs(), name, "input");
    });
}

stof_status stof_plan_find_output(const stof_plan* plan, const char* name, size_t* index) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(name, "name");
        need(index, "index");
        *index = find(plan->runtime->outputs(), name, "output");
    });
}

stof_status stof_plan_set_input_shape(stof_plan* plan, size_t index, int32_t rank, const int64_t* dims) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        at(plan->runtime->inputs(), index, "input");
        if (rank < 0 || rank > 64) throw InvalidArgument{fmt::format("rank {} is not 0..64", rank)};
        if (rank) need(dims, "dims");
        const stof::Shape shape(dims, dims + rank);
        try {
            plan->runtime->set_input_shape(index, shape);
        } catch (const stof::Error& e) {
            throw InvalidArgument{e.what()};
        }
    });
}

stof_status stof_plan_shape_ranges(const stof_plan* plan, size_t* num_vars, size_t* num_buckets, size_t* bucket) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        const stof::plan::ShapeRanges* r = plan->runtime->ranges();
        if (num_vars) *num_vars = r ? r->vars.size() : 0;
        if (num_buckets) *num_buckets = r ? r->bucket_values.size() : 1;
        if (bucket) *bucket = plan->runtime->bucket();
    });
}

stof_status stof_plan_set_input(stof_plan* plan, size_t index, const void* data, size_t bytes) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        const stof::TensorInfo& t = at(plan->runtime->inputs(), index, "input");
        stof_tensor_info info;
        describe(t, &info);
        if (bytes != info.bytes)
            throw InvalidArgument{fmt::format("input '{}' takes {} bytes, got {}", t.name, info.bytes, bytes)};
        if (bytes) need(data, "data");
        plan->runtime->set_input(index, data, bytes);
    });
}

stof_status stof_plan_enqueue(stof_plan* plan, const void* const* inputs, void* const* outputs, int use_graph, void* stream) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        const stof::Runtime& rt = *plan->runtime;
        for (size_t i = 0; inputs && i < rt.inputs().size(); ++i) {
            const std::string why = inputs[i] ? stof::caller_memory_problem(inputs[i], rt.device()) : "";
            if (!why.empty()) throw InvalidArgument{fmt::format("input '{}': {}", rt.inputs()[i].name, why)};
        }
        for (size_t i = 0; outputs && i < rt.outputs().size(); ++i) {
            const std::string why = outputs[i] ? stof::caller_memory_problem(outputs[i], rt.device()) : "";
            if (!why.empty()) throw InvalidArgument{fmt::format("output '{}': {}", rt.outputs()[i].name, why)};
        }
        plan->runtime->enqueue(inputs, outputs, use_graph != 0, stream);
    });
}

stof_status stof_plan_input_address(const stof_plan* plan, size_t index, void** address) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(address, "address");
        at(plan->runtime->inputs(), index, "input");
        *address = plan->runtime->input_address(index);
    });
}

stof_status stof_plan_output_address(const stof_plan* plan, size_t index, void** address) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        need(address, "address");
        at(plan->runtime->outputs(), index, "output");
        *address = plan->runtime->output_address(index);
    });
}

stof_status stof_plan_run(stof_plan* plan, int use_graph) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        plan->runtime->run(use_graph != 0);
    });
}

stof_status stof_plan_get_output(stof_plan* plan, size_t index, void* data, size_t bytes) {
    return stof::capi::guard(STOF_ERROR_CUDA, [&] {
        need(plan, "plan");
        const stof::TensorInfo& t = at(plan->runtime->outputs(), index, "output");
        stof_tensor_info info;
        describe(t, &info);
        if (bytes != info.bytes)
            throw InvalidArgument{fmt::format("output '{}' has {} bytes, the buffer {}", t.name, info.bytes, bytes)};
        if (bytes) need(data, "data");
        plan->runtime->get_output(index, data, bytes);
    });
}

}  // extern "C"
