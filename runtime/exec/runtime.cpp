#include "stof/runtime.hpp"

#include "exec/executor.hpp"
#include "plan/plan_reader.hpp"
#include "stof/cuda_check.hpp"
#include "stof/cuda_versions.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstring>

namespace stof {

int cuda_device_count() {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (e == cudaErrorInsufficientDriver)
            STOF_FAIL("no CUDA device: no NVIDIA driver was found, or it is older than this CUDA {}.{} runtime needs ({})",
                      CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, cudaGetErrorString(e));
        STOF_FAIL("no CUDA device: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
    }
    STOF_CHECK(count > 0, "no CUDA device: the CUDA runtime sees no GPU (check the driver and CUDA_VISIBLE_DEVICES)");
    return count;
}

std::string caller_memory_problem(const void* ptr, int device) {
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, ptr);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fmt::format("address {} cannot be queried: {}", ptr, cudaGetErrorString(e));
    }
    if (a.type == cudaMemoryTypeUnregistered)
        return fmt::format(
            "address {} is not memory the GPU can reach (pass device memory, or host memory through "
            "set_input / get_output)",
            ptr);
    if (a.type == cudaMemoryTypeDevice && a.device != device)
        return fmt::format("address {} is memory of CUDA device {}; the plan runs on device {}", ptr, a.device, device);
    return "";
}

std::string cuda_versions() {
    const size_t lt = cublasLtGetVersion();
    return fmt::format("{}, cuBLASLt {}.{}.{}", cuda_runtime_versions(), lt / 10000, lt % 10000 / 100, lt % 100);
}

struct Runtime::Impl {
    exec::Executor exec;
    std::vector<TensorInfo> inputs, outputs;
    cudaEvent_t start = nullptr, stop = nullptr;

    Impl(plan::Plan p, int device) : exec(std::move(p), device) {
        const plan::Plan& pl = exec.plan();
        for (int32_t t : pl.inputs) inputs.push_back(info(pl, t));
        for (int32_t t : pl.outputs) outputs.push_back(info(pl, t));
    }
    ~Impl() {
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
    }

    static TensorInfo info(const plan::Plan& p, int32_t t) {
        const plan::TensorDesc& d = p.tensors[t];
        return TensorInfo{d.name, d.dtype, d.shape, t, d.int_lo, d.int_hi};
    }

    static const TensorInfo& find(const std::vector<TensorInfo>& list, const std::string& name, const char* what) {
        for (const TensorInfo& i : list)
            if (i.name == name) return i;
        std::string names;
        for (const TensorInfo& i : list) names += (names.empty() ? "" : ", ") + i.name;
        STOF_FAIL("the plan has no {} named '{}' ({}s: {})", what, name, what, names.empty() ? "none" : names);
    }
};

Runtime::Runtime(const std::string& path, const RuntimeOptions& options) : Runtime(plan::read_plan(path), options) {}

Runtime::Runtime(plan::Plan plan, const RuntimeOptions& options)
    : impl_(std::make_unique<Impl>(std::move(plan), options.device)) {}

Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

const plan::Plan& Runtime::plan() const { return impl_->exec.plan(); }
const std::vector<TensorInfo>& Runtime::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Runtime::outputs() const { return impl_->outputs; }
std::string Runtime::device_name() const { return impl_->exec.device_name(); }
int Runtime::device() const { return impl_->exec.device(); }

void Runtime::set_input(const std::string& name, const Tensor& t) {
    const TensorInfo& in = Impl::find(impl_->inputs, name, "input");
    STOF_CHECK(t.dtype == in.dtype && t.shape == in.shape, "input '{}': got {}, the plan takes {}{}", name, t.describe(),
               dtype_name(in.dtype), shape_str(in.shape));
    impl_->exec.upload(in.tensor, t.bytes.data());
}

void Runtime::set_input(size_t index, const void* data, size_t bytes) {
    STOF_CHECK(index < impl_->inputs.size(), "input index {} is out of range ({} inputs)", index, impl_->inputs.size());
    const TensorInfo& in = impl_->inputs[index];
    const uint64_t want = plan().tensors[in.tensor].bytes();
    STOF_CHECK(bytes == want, "input '{}' takes {} bytes ({}{}), got {}", in.name, want, dtype_name(in.dtype),
               shape_str(in.shape), bytes);
    STOF_CHECK(data != nullptr || bytes == 0, "input '{}': no data", in.name);
    impl_->exec.upload(in.tensor, data);
}

void Runtime::run(bool graph) {
    impl_->exec.enqueue(graph);
    impl_->exec.synchronize();
}

void* Runtime::input_address(size_t index) const {
    STOF_CHECK(index < impl_->inputs.size(), "input index {} is out of range ({} inputs)", index, impl_->inputs.size());
    return impl_->exec.address(impl_->inputs[index].tensor);
}

void* Runtime::output_address(size_t index) const {
    STOF_CHECK(index < impl_->outputs.size(), "output index {} is out of range ({} outputs)", index, impl_->outputs.size());
    return impl_->exec.address(impl_->outputs[index].tensor);
}

void Runtime::enqueue(const void* const* inputs, void* const* outputs, bool graph, void* stream) {
    exec::Executor& ex = impl_->exec;
    ex.activate();
    for (size_t i = 0; inputs && i < impl_->inputs.size(); ++i) {
        const std::string why = inputs[i] ? caller_memory_problem(inputs[i], ex.device()) : "";
        STOF_CHECK(why.empty(), "input '{}': {}", impl_->inputs[i].name, why);
    }
    for (size_t i = 0; outputs && i < impl_->outputs.size(); ++i) {
        const std::string why = outputs[i] ? caller_memory_problem(outputs[i], ex.device()) : "";
        STOF_CHECK(why.empty(), "output '{}': {}", impl_->outputs[i].name, why);
    }
    const auto s = static_cast<cudaStream_t>(stream);
    const plan::Plan& p = ex.plan();
    ex.begin_on(s);
    for (size_t i = 0; inputs && i < impl_->inputs.size(); ++i) {
        void* own = ex.address(impl_->inputs[i].tensor);
        const uint64_t bytes = p.tensors[impl_->inputs[i].tensor].bytes();
        if (inputs[i] && inputs[i] != own && bytes)
            STOF_CUDA_CHECK(cudaMemcpyAsync(own, inputs[i], bytes, cudaMemcpyDefault, s));
    }
    ex.enqueue(graph, s);
    for (size_t i = 0; outputs && i < impl_->outputs.size(); ++i) {
        const void* own = ex.address(impl_->outputs[i].tensor);
        const uint64_t bytes = p.tensors[impl_->outputs[i].tensor].bytes();
        if (outputs[i] && outputs[i] != own && bytes)
            STOF_CUDA_CHECK(cudaMemcpyAsync(outputs[i], own, bytes, cudaMemcpyDefault, s));
    }
    ex.end_on(s);
}

void Runtime::run_traced(const std::function<void(size_t step)>& after_step) {
    for (size_t i = 0; i < impl_->exec.plan().steps.size(); ++i) {
        impl_->exec.run_step(i);
        after_step(i);
    }
}

Tensor Runtime::output(const std::string& name) const {
    const TensorInfo& out = Impl::find(impl_->outputs, name, "output");
    return read_tensor(out.tensor);
}

void Runtime::get_output(size_t index, void* data, size_t bytes) const {
    STOF_CHECK(index < impl_->outputs.size(), "output index {} is out of range ({} outputs)", index, impl_->outputs.size());
    const TensorInfo& out = impl_->outputs[index];
    const uint64_t want = plan().tensors[out.tensor].bytes();
    STOF_CHECK(bytes == want, "output '{}' has {} bytes ({}{}), the buffer {}", out.name, want, dtype_name(out.dtype),
               shape_str(out.shape), bytes);
    STOF_CHECK(data != nullptr || bytes == 0, "output '{}': no buffer", out.name);
    impl_->exec.download(out.tensor, data);
}

std::vector<double> Runtime::benchmark(int runs, int warmup, bool graph) {
    STOF_CHECK(runs >= 1 && warmup >= 0, "benchmark: {} runs after {} warm-ups", runs, warmup);
    exec::Executor& ex = impl_->exec;
    ex.activate();
    if (!impl_->start) STOF_CUDA_CHECK(cudaEventCreate(&impl_->start));
    if (!impl_->stop) STOF_CUDA_CHECK(cudaEventCreate(&impl_->stop));
    for (int i = 0; i < warmup; ++i) ex.enqueue(graph);
    ex.synchronize();
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        STOF_CUDA_CHECK(cudaEventRecord(impl_->start, ex.stream()));
        ex.enqueue(graph);
        STOF_CUDA_CHECK(cudaEventRecord(impl_->stop, ex.stream()));
        STOF_CUDA_CHECK(cudaEventSynchronize(impl_->stop));
        float t = 0;
        STOF_CUDA_CHECK(cudaEventElapsedTime(&t, impl_->start, impl_->stop));
        ms.push_back(t);
    }
    return ms;
}

std::vector<double> Runtime::profile(int runs, int warmup) {
    STOF_CHECK(runs >= 1 && warmup >= 0, "profile: {} runs after {} warm-ups", runs, warmup);
    exec::Executor& ex = impl_->exec;
    ex.activate();
    const size_t n = ex.plan().steps.size();
    std::vector<cudaEvent_t> events(n + 1, nullptr);
    std::vector<std::vector<double>> ms(n);
    try {
        for (cudaEvent_t& e : events) STOF_CUDA_CHECK(cudaEventCreate(&e));
        for (int i = 0; i < warmup; ++i) ex.enqueue(false);
        ex.begin_on(ex.stream());
        for (int r = 0; r < runs; ++r) {
            STOF_CUDA_CHECK(cudaEventRecord(events[0], ex.stream()));
            for (size_t i = 0; i < n; ++i) {
                ex.enqueue_step(i);
                STOF_CUDA_CHECK(cudaEventRecord(events[i + 1], ex.stream()));
            }
            STOF_CUDA_CHECK(cudaEventSynchronize(events[n]));
            for (size_t i = 0; i < n; ++i) {
                float t = 0;
                STOF_CUDA_CHECK(cudaEventElapsedTime(&t, events[i], events[i + 1]));
                ms[i].push_back(t);
            }
        }
    } catch (...) {
        for (cudaEvent_t e : events)
            if (e) cudaEventDestroy(e);
        throw;
    }
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    std::vector<double> med(n);
    for (size_t i = 0; i < n; ++i) {
        std::sort(ms[i].begin(), ms[i].end());
        med[i] = ms[i][ms[i].size() / 2];
    }
    return med;
}

Tensor Runtime::read_tensor(int32_t index) const {
    STOF_CHECK(index >= 0 && static_cast<size_t>(index) < plan().tensors.size(), "tensor index {} is out of range", index);
    const plan::TensorDesc& d = plan().tensors[index];
    Tensor t(d.dtype, d.shape);
    impl_->exec.download(index, t.bytes.data());
    return t;
}

void Runtime::write_tensor(int32_t index, const Tensor& t) {
    STOF_CHECK(index >= 0 && static_cast<size_t>(index) < plan().tensors.size(), "tensor index {} is out of range", index);
    const plan::TensorDesc& d = plan().tensors[index];
    STOF_CHECK(t.dtype == d.dtype && t.bytes.size() == d.bytes(), "tensor '{}': got {}, it is {}{}", d.name, t.describe(),
               dtype_name(d.dtype), shape_str(d.shape));
    impl_->exec.upload(index, t.bytes.data());
}

}  // namespace stof
