#include "stof/runtime.hpp"

#include "exec/executor.hpp"
#include "exec/padded_copy.hpp"
#include "plan/plan_reader.hpp"
#include "stof/cuda_check.hpp"
#include "stof/cuda_versions.hpp"
#include "stof/shape_ranges.hpp"

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

// A static plan runs on one executor. A ranged plan (stof/shape_ranges.hpp) keeps
// its buckets' plans and loads each onto an executor on first use. An input or output
// whose actual shape equals its bucket's is bound in place (plan::bind_bucket): it lives
// in the bucket's own buffer, as in a static plan. The others live in staging buffers at
// their actual shapes (sized for the largest), padded into the bucket's tensors before the
// steps and cut back out of them after, each direction one box copy launch
// (exec/padded_copy.hpp). Every ranged run goes through one stream (`stream`, or a
// caller's) ordered by `done`.
struct Runtime::Impl {
    int device = 0;
    std::vector<std::unique_ptr<exec::Executor>> execs;  // per bucket (a static plan: one)
    std::vector<plan::Plan> pending;                     // bucket plans not loaded yet
    plan::ShapeRanges ranges;
    std::vector<plan::Plan> shells;  // per bucket: its plan without weights (for plan())
    size_t current = 0;
    std::vector<int64_t> values;  // the variables' actual sizes
    std::vector<TensorInfo> inputs, outputs;
    plan::BucketBinding binding;  // of the current bucket at the actual shapes
    // The box copy tables of padding from and cutting to the staging buffers at the
    // current shapes, built on first use after select.
    std::vector<kernels::BoxCopyTable> staged_pad, staged_cut;
    bool staged_tables = false;
    std::vector<void*> in_stage, out_stage;
    cudaStream_t stream = nullptr;
    // The end of the last ranged run or copy, on stream done_on: recorded in `done` at once
    // on a caller's stream, and on `stream` (which lives as long as this) only when work on
    // another stream needs it (owed), so runs on `stream` alone record no event.
    cudaEvent_t done = nullptr;
    cudaStream_t done_on = nullptr;
    bool recorded = false, owed = false;
    cudaEvent_t start = nullptr, stop = nullptr;
    // The CUDA graph of the last graph run on the staging buffers with something to pad or
    // cut: padding, the bucket's steps and cutting, captured for one bucket at one shape
    // (captured again on a change). Runs with everything in place replay the bucket's own.
    cudaGraphExec_t graph = nullptr;
    size_t graph_bucket = 0;
    std::vector<int64_t> graph_values;

    Impl(plan::Plan p, int dev) : device(dev) {
        if (!p.ranged()) {
            execs.push_back(std::make_unique<exec::Executor>(std::move(p), dev));
            const plan::Plan& pl = execs[0]->plan();
            for (int32_t t : pl.inputs) inputs.push_back(info(pl, t));
            for (int32_t t : pl.outputs) outputs.push_back(info(pl, t));
            return;
        }
        plan::validate(p);
        ranges = p.ranges;
        pending = std::move(p.buckets);
        execs.resize(pending.size());
        for (const plan::Plan& b : pending) {
            plan::Plan shell = b;
            shell.weights.clear();
            shell.weights.shrink_to_fit();
            shells.push_back(std::move(shell));
        }
        for (const plan::ShapeVar& v : ranges.vars) values.push_back(v.min);
        current = pick();
        ex();  // the first bucket loads now: the device is checked as for a static plan
        STOF_CUDA_CHECK(cudaSetDevice(dev));
        try {
            STOF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
            STOF_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
            // Staging buffers: each input and output at its largest over the buckets.
            auto largest = [&](auto io) {
                std::vector<uint64_t> bytes((shells[0].*io).size(), 0);
                for (const plan::Plan& b : shells)
                    for (size_t i = 0; i < bytes.size(); ++i)
                        bytes[i] = std::max(bytes[i], b.tensors[static_cast<size_t>((b.*io)[i])].bytes());
                return bytes;
            };
            for (uint64_t n : largest(&plan::Plan::inputs)) in_stage.push_back(allocate(n));
            for (uint64_t n : largest(&plan::Plan::outputs)) out_stage.push_back(allocate(n));
        } catch (...) {
            release();
            throw;
        }
        select(current);
    }
    ~Impl() {
        release();
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
    }
    void release() noexcept {
        if (graph) cudaGraphExecDestroy(graph);
        graph = nullptr;
        for (void* b : in_stage) cudaFree(b);
        for (void* b : out_stage) cudaFree(b);
        in_stage.clear();
        out_stage.clear();
        if (done) cudaEventDestroy(done);
        if (stream) cudaStreamDestroy(stream);
        done = nullptr;
        stream = nullptr;
    }
    static void* allocate(uint64_t bytes) {
        void* p = nullptr;
        STOF_CUDA_CHECK(cudaMalloc(&p, std::max<uint64_t>(bytes, plan::kAlignment)));
        return p;
    }

    bool ranged() const { return !shells.empty(); }
    size_t pick() const { return plan::pick_bucket(ranges, values); }

    const plan::Plan& plan() const { return ranged() ? shells[current] : execs[0]->plan(); }

    // The executor of the current bucket, loaded on first use.
    exec::Executor& ex() {
        if (!execs[current]) {
            execs[current] = std::make_unique<exec::Executor>(std::move(pending[current]), device);
            pending[current] = plan::Plan{};
        }
        return *execs[current];
    }

    // Makes bucket b current and the inputs' and outputs' shapes those of `values`.
    void select(size_t b) {
        current = b;
        const plan::Plan& pl = shells[b];
        inputs.clear();
        outputs.clear();
        for (size_t i = 0; i < pl.inputs.size(); ++i) {
            TensorInfo in = info(pl, pl.inputs[i]);
            in.shape = plan::bound_shape(in.shape, ranges.input_dims[i], values);
            inputs.push_back(std::move(in));
        }
        for (size_t i = 0; i < pl.outputs.size(); ++i) {
            TensorInfo out = info(pl, pl.outputs[i]);
            out.shape = plan::bound_shape(out.shape, ranges.output_dims[i], values);
            outputs.push_back(std::move(out));
        }
        std::vector<Shape> in_shapes, out_shapes;
        for (const TensorInfo& t : inputs) in_shapes.push_back(t.shape);
        for (const TensorInfo& t : outputs) out_shapes.push_back(t.shape);
        binding = plan::bind_bucket(pl, in_shapes, out_shapes);
        staged_tables = false;
    }

    // Where input / output i lives at the current shapes: the bucket's own buffer when
    // bound in place (the bucket is loaded), else its staging buffer.
    void* in_buffer(size_t i) {
        if (!binding.input_in_place[i]) return in_stage[i];
        exec::Executor& e = ex();
        return e.address(e.plan().inputs[i]);
    }
    void* out_buffer(size_t i) {
        if (!binding.output_in_place[i]) return out_stage[i];
        exec::Executor& e = ex();
        return e.address(e.plan().outputs[i]);
    }

    void set_shape(size_t index, const Shape& shape) {
        STOF_CHECK(index < inputs.size(), "input index {} is out of range ({} inputs)", index, inputs.size());
        if (!ranged()) {
            STOF_CHECK(shape == inputs[index].shape,
                       "input '{}': shape {}; the plan takes only {} (compile it with --shape {}=MIN..MAX for a range)",
                       inputs[index].name, shape_str(shape), shape_str(inputs[index].shape), inputs[index].name);
            return;
        }
        const plan::Plan& pl = shells[current];
        const Shape& bucket_shape = pl.tensors[static_cast<size_t>(pl.inputs[index])].shape;
        std::vector<int64_t> next = values;
        plan::bind_input_shape(ranges, index, inputs[index].name, bucket_shape, shape, next);
        values = std::move(next);
        select(pick());
    }

    uint64_t bytes(const TensorInfo& t) const { return static_cast<uint64_t>(numel(t.shape)) * dtype_size(t.dtype); }

    // Orders work on stream s after the previous ranged run or copy, on whichever stream.
    void begin(cudaStream_t s) {
        STOF_CUDA_CHECK(cudaSetDevice(device));
        if (s == done_on) return;
        if (owed) {
            STOF_CUDA_CHECK(cudaEventRecord(done, stream));
            owed = false;
            recorded = true;
        }
        if (recorded) STOF_CUDA_CHECK(cudaStreamWaitEvent(s, done, 0));
    }
    void end(cudaStream_t s) {
        done_on = s;
        owed = s == stream;
        if (owed) return;
        STOF_CUDA_CHECK(cudaEventRecord(done, s));
        recorded = true;
    }

    // One ranged run on s. Inputs and outputs bound in place are the bucket's own buffers
    // (a caller's buffer is copied in and out, as for a static plan); the others are padded
    // into the bucket from the caller's buffer where given, else from staging, and cut back
    // likewise: one box copy launch each way. A graph run on the staging buffers with
    // something to pad or cut replays one graph of the padding, the steps and the cutting;
    // other graph runs replay the bucket's own graph.
    void enqueue_ranged(const void* const* in, void* const* out, bool use_graph, cudaStream_t s) {
        exec::Executor& e = ex();
        bool staged = true;
        for (size_t i = 0; in && i < inputs.size(); ++i) staged = staged && !in[i];
        for (size_t i = 0; out && i < outputs.size(); ++i) staged = staged && !out[i];
        if (use_graph && staged && !binding.all_in_place()) {
            if (!graph || graph_bucket != current || graph_values != values) capture(e);
            begin(s);
            STOF_CUDA_CHECK(cudaGraphLaunch(graph, s));
            end(s);
            return;
        }
        const plan::Plan& pl = e.plan();
        begin(s);
        for (size_t i = 0; in && i < inputs.size(); ++i) {
            void* own = e.address(pl.inputs[i]);
            if (binding.input_in_place[i] && in[i] && in[i] != own && bytes(inputs[i]))
                STOF_CUDA_CHECK(cudaMemcpyAsync(own, in[i], bytes(inputs[i]), cudaMemcpyDefault, s));
        }
        pad_inputs(e, in, s);
        e.enqueue(use_graph, s);
        cut_outputs(e, out, s);
        for (size_t i = 0; out && i < outputs.size(); ++i) {
            const void* own = e.address(pl.outputs[i]);
            if (binding.output_in_place[i] && out[i] && out[i] != own && bytes(outputs[i]))
                STOF_CUDA_CHECK(cudaMemcpyAsync(out[i], own, bytes(outputs[i]), cudaMemcpyDefault, s));
        }
        end(s);
    }
    // The inputs not bound in place padded into the bucket (from the caller's buffer where
    // `in` gives one, else staging): one launch, none when every input is in place.
    void pad_inputs(exec::Executor& e, const void* const* in, cudaStream_t s) {
        bool staged = true;
        for (size_t i = 0; in && i < inputs.size(); ++i) staged = staged && (binding.input_in_place[i] || !in[i]);
        if (!staged) return exec::enqueue_box_copies(pad_copies(e, in), s);
        build_staged_tables(e);
        exec::enqueue_box_copy_tables(staged_pad, s);
    }
    // The outputs not bound in place cut out of the bucket (to the caller's buffer where
    // `out` gives one, else staging): one launch, none when every output is in place.
    void cut_outputs(exec::Executor& e, void* const* out, cudaStream_t s) {
        bool staged = true;
        for (size_t i = 0; out && i < outputs.size(); ++i) staged = staged && (binding.output_in_place[i] || !out[i]);
        if (!staged) return exec::enqueue_box_copies(cut_copies(e, out), s);
        build_staged_tables(e);
        exec::enqueue_box_copy_tables(staged_cut, s);
    }
    void build_staged_tables(exec::Executor& e) {
        if (staged_tables) return;
        staged_pad = exec::box_copy_tables(pad_copies(e, nullptr));
        staged_cut = exec::box_copy_tables(cut_copies(e, nullptr));
        staged_tables = true;
    }
    std::vector<exec::BoxCopy> pad_copies(exec::Executor& e, const void* const* in) const {
        const plan::Plan& pl = e.plan();
        std::vector<exec::BoxCopy> copies;
        for (size_t i = 0; i < inputs.size(); ++i) {
            if (binding.input_in_place[i]) continue;
            const plan::TensorDesc& d = pl.tensors[static_cast<size_t>(pl.inputs[i])];
            copies.push_back(exec::BoxCopy{in && in[i] ? in[i] : in_stage[i], inputs[i].shape, e.address(pl.inputs[i]), d.shape,
                                           dtype_size(d.dtype)});
        }
        return copies;
    }
    std::vector<exec::BoxCopy> cut_copies(exec::Executor& e, void* const* out) const {
        const plan::Plan& pl = e.plan();
        std::vector<exec::BoxCopy> copies;
        for (size_t i = 0; i < outputs.size(); ++i) {
            if (binding.output_in_place[i]) continue;
            const plan::TensorDesc& d = pl.tensors[static_cast<size_t>(pl.outputs[i])];
            copies.push_back(exec::BoxCopy{e.address(pl.outputs[i]), d.shape, out && out[i] ? out[i] : out_stage[i],
                                           outputs[i].shape, dtype_size(d.dtype)});
        }
        return copies;
    }
    // Captures padding, steps and cutting on `stream` (idle: every ranged run is ordered
    // through `done`, so waiting for it first leaves nothing pending).
    void capture(exec::Executor& e) {
        begin(stream);
        sync();
        if (graph) cudaGraphExecDestroy(graph);
        graph = nullptr;
        cudaGraph_t g = nullptr;
        STOF_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        try {
            pad_inputs(e, nullptr, stream);
            e.enqueue_captured(stream);
            cut_outputs(e, nullptr, stream);
        } catch (...) {
            cudaGraph_t partial = nullptr;
            cudaStreamEndCapture(stream, &partial);
            if (partial) cudaGraphDestroy(partial);
            cudaGetLastError();
            throw;
        }
        STOF_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
        const cudaError_t err = cudaGraphInstantiate(&graph, g, 0);
        cudaGraphDestroy(g);
        STOF_CUDA_CHECK(err);
        graph_bucket = current;
        graph_values = values;
    }

    void sync() { STOF_CUDA_CHECK(cudaStreamSynchronize(stream)); }

    void upload_stage(size_t i, const void* host) {
        void* dst = in_buffer(i);
        begin(stream);
        if (bytes(inputs[i])) STOF_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes(inputs[i]), cudaMemcpyDefault, stream));
        end(stream);
        sync();
    }
    void download_stage(size_t i, void* host) {
        const void* src = out_buffer(i);
        begin(stream);
        if (bytes(outputs[i])) STOF_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes(outputs[i]), cudaMemcpyDefault, stream));
        end(stream);
        sync();
    }

    static TensorInfo info(const plan::Plan& p, int32_t t) {
        const plan::TensorDesc& d = p.tensors[t];
        return TensorInfo{d.name, d.dtype, d.shape, t, d.int_lo, d.int_hi};
    }

    static size_t find(const std::vector<TensorInfo>& list, const std::string& name, const char* what) {
        for (size_t i = 0; i < list.size(); ++i)
            if (list[i].name == name) return i;
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

const plan::Plan& Runtime::plan() const { return impl_->plan(); }
const std::vector<TensorInfo>& Runtime::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Runtime::outputs() const { return impl_->outputs; }
std::string Runtime::device_name() const { return impl_->ex().device_name(); }
int Runtime::device() const { return impl_->device; }

const plan::ShapeRanges* Runtime::ranges() const { return impl_->ranged() ? &impl_->ranges : nullptr; }
size_t Runtime::bucket() const { return impl_->current; }

void Runtime::set_input_shape(size_t index, const Shape& shape) { impl_->set_shape(index, shape); }

void Runtime::set_input(const std::string& name, const Tensor& t) {
    const size_t i = Impl::find(impl_->inputs, name, "input");
    if (impl_->ranged() && t.shape != impl_->inputs[i].shape) impl_->set_shape(i, t.shape);
    const TensorInfo& in = impl_->inputs[i];
    STOF_CHECK(t.dtype == in.dtype && t.shape == in.shape, "input '{}': got {}, the plan takes {}{}", name, t.describe(),
               dtype_name(in.dtype), shape_str(in.shape));
    if (impl_->ranged()) impl_->upload_stage(i, t.bytes.data());
    else impl_->ex().upload(in.tensor, t.bytes.data());
}

void Runtime::set_input(size_t index, const void* data, size_t bytes) {
    STOF_CHECK(index < impl_->inputs.size(), "input index {} is out of range ({} inputs)", index, impl_->inputs.size());
    const TensorInfo& in = impl_->inputs[index];
    const uint64_t want = impl_->bytes(in);
    STOF_CHECK(bytes == want, "input '{}' takes {} bytes ({}{}), got {}", in.name, want, dtype_name(in.dtype),
               shape_str(in.shape), bytes);
    STOF_CHECK(data != nullptr || bytes == 0, "input '{}': no data", in.name);
    if (impl_->ranged()) impl_->upload_stage(index, data);
    else impl_->ex().upload(in.tensor, data);
}

void Runtime::run(bool graph) {
    if (impl_->ranged()) {
        impl_->enqueue_ranged(nullptr, nullptr, graph, impl_->stream);
        impl_->sync();
        return;
    }
    impl_->ex().enqueue(graph);
    impl_->ex().synchronize();
}

void* Runtime::input_address(size_t index) const {
    STOF_CHECK(index < impl_->inputs.size(), "input index {} is out of range ({} inputs)", index, impl_->inputs.size());
    if (impl_->ranged()) return impl_->in_buffer(index);
    return impl_->ex().address(impl_->inputs[index].tensor);
}

void* Runtime::output_address(size_t index) const {
    STOF_CHECK(index < impl_->outputs.size(), "output index {} is out of range ({} outputs)", index, impl_->outputs.size());
    if (impl_->ranged()) return impl_->out_buffer(index);
    return impl_->ex().address(impl_->outputs[index].tensor);
}

void Runtime::enqueue(const void* const* inputs, void* const* outputs, bool graph, void* stream) {
    STOF_CUDA_CHECK(cudaSetDevice(impl_->device));
    for (size_t i = 0; inputs && i < impl_->inputs.size(); ++i) {
        const std::string why = inputs[i] ? caller_memory_problem(inputs[i], impl_->device) : "";
        STOF_CHECK(why.empty(), "input '{}': {}", impl_->inputs[i].name, why);
    }
    for (size_t i = 0; outputs && i < impl_->outputs.size(); ++i) {
        const std::string why = outputs[i] ? caller_memory_problem(outputs[i], impl_->device) : "";
        STOF_CHECK(why.empty(), "output '{}': {}", impl_->outputs[i].name, why);
    }
    const auto s = static_cast<cudaStream_t>(stream);
    if (impl_->ranged()) {
        impl_->enqueue_ranged(inputs, outputs, graph, s);
        return;
    }
    exec::Executor& ex = impl_->ex();
    ex.activate();
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
    exec::Executor& ex = impl_->ex();
    const plan::Plan& p = ex.plan();
    if (impl_->ranged()) {
        // Inputs padded into the bucket first, outputs cut back after the last step.
        impl_->begin(ex.stream());
        impl_->pad_inputs(ex, nullptr, ex.stream());
        impl_->end(ex.stream());
        ex.synchronize();
    }
    for (size_t i = 0; i < p.steps.size(); ++i) {
        ex.run_step(i);
        after_step(i);
    }
    if (impl_->ranged()) {
        impl_->begin(ex.stream());
        impl_->cut_outputs(ex, nullptr, ex.stream());
        impl_->end(ex.stream());
        ex.synchronize();
    }
}

Tensor Runtime::output(const std::string& name) const {
    const size_t i = Impl::find(impl_->outputs, name, "output");
    if (!impl_->ranged()) return read_tensor(impl_->outputs[i].tensor);
    const TensorInfo& out = impl_->outputs[i];
    Tensor t(out.dtype, out.shape);
    impl_->download_stage(i, t.bytes.data());
    return t;
}

void Runtime::get_output(size_t index, void* data, size_t bytes) const {
    STOF_CHECK(index < impl_->outputs.size(), "output index {} is out of range ({} outputs)", index, impl_->outputs.size());
    const TensorInfo& out = impl_->outputs[index];
    const uint64_t want = impl_->bytes(out);
    STOF_CHECK(bytes == want, "output '{}' has {} bytes ({}{}), the buffer {}", out.name, want, dtype_name(out.dtype),
               shape_str(out.shape), bytes);
    STOF_CHECK(data != nullptr || bytes == 0, "output '{}': no buffer", out.name);
    if (impl_->ranged()) impl_->download_stage(index, data);
    else impl_->ex().download(out.tensor, data);
}

std::vector<double> Runtime::benchmark(int runs, int warmup, bool graph) {
    STOF_CHECK(runs >= 1 && warmup >= 0, "benchmark: {} runs after {} warm-ups", runs, warmup);
    exec::Executor& ex = impl_->ex();
    ex.activate();
    // A ranged plan's runs include padding the inputs and cutting the outputs back.
    const cudaStream_t s = impl_->ranged() ? impl_->stream : ex.stream();
    auto once = [&] {
        if (impl_->ranged()) impl_->enqueue_ranged(nullptr, nullptr, graph, s);
        else ex.enqueue(graph);
    };
    if (!impl_->start) STOF_CUDA_CHECK(cudaEventCreate(&impl_->start));
    if (!impl_->stop) STOF_CUDA_CHECK(cudaEventCreate(&impl_->stop));
    for (int i = 0; i < warmup; ++i) once();
    STOF_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        STOF_CUDA_CHECK(cudaEventRecord(impl_->start, s));
        once();
        STOF_CUDA_CHECK(cudaEventRecord(impl_->stop, s));
        STOF_CUDA_CHECK(cudaEventSynchronize(impl_->stop));
        float t = 0;
        STOF_CUDA_CHECK(cudaEventElapsedTime(&t, impl_->start, impl_->stop));
        ms.push_back(t);
    }
    return ms;
}

std::vector<double> Runtime::profile(int runs, int warmup) {
    STOF_CHECK(runs >= 1 && warmup >= 0, "profile: {} runs after {} warm-ups", runs, warmup);
    exec::Executor& ex = impl_->ex();
    ex.activate();
    if (impl_->ranged()) {  // the inputs padded into the bucket
        impl_->enqueue_ranged(nullptr, nullptr, false, impl_->stream);
        impl_->sync();
    }
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
    impl_->ex().download(index, t.bytes.data());
    return t;
}

void Runtime::write_tensor(int32_t index, const Tensor& t) {
    STOF_CHECK(index >= 0 && static_cast<size_t>(index) < plan().tensors.size(), "tensor index {} is out of range", index);
    const plan::TensorDesc& d = plan().tensors[index];
    STOF_CHECK(t.dtype == d.dtype && t.bytes.size() == d.bytes(), "tensor '{}': got {}, it is {}{}", d.name, t.describe(),
               dtype_name(d.dtype), shape_str(d.shape));
    impl_->ex().upload(index, t.bytes.data());
}

}  // namespace stof
