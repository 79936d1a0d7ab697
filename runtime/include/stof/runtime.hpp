// stof::Runtime — runs a plan on one GPU.
//
// Opening a plan: read and validate it, load its kernels (the cubin when its
// arch matches the device, else the PTX), allocate the arena and the weights
// buffer (one allocation each), upload weights and masks once, and prepare
// every step (kernel argument arrays, cuBLASLt algorithms). A run executes the
// steps in order on one stream, either as plain launches or by replaying a
// CUDA graph captured on the first graph run; both give identical results.
//
// A plan for shape ranges (stofc compile --shape NAME=MIN..MAX) runs any shape in its
// ranges: inputs() and outputs() give the actual shapes, at first every variable's
// minimum; set_input_shape (or set_input with a tensor of another shape) changes them
// and picks the shape bucket that runs them (stof/shape_ranges.hpp). Inputs and outputs
// whose actual shape equals the bucket's are bound in place (no copy, as in a plan
// compiled for that shape); the others are padded with zeros into the bucket and cut back
// to the actual shapes on every run, one kernel launch each way; buckets are loaded onto
// the GPU on first use.
//
// Every failure throws stof::Error with a message (a machine without a GPU or
// driver: "no CUDA device: ..."); nothing aborts. A Runtime is not thread-safe:
// use one per thread, or serialise calls.
#pragma once

#include "stof/plan.hpp"
#include "stof/tensor.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace stof {

struct RuntimeOptions {
    int device = 0;  // CUDA device index
};

// A model input or output.
struct TensorInfo {
    std::string name;
    DType dtype = DType::undefined;
    Shape shape;
    int32_t tensor = -1;             // index into Plan::tensors
    int64_t int_lo = 1, int_hi = 0;  // inputs: valid integer range when lo <= hi
};

// Number of CUDA devices; throws "no CUDA device: <reason>" when there is none
// or no usable driver.
int cuda_device_count();

// The CUDA libraries in use: "CUDA runtime 13.0, driver 13.0, cuBLASLt 13.0.2"
// ("driver none" when no driver is installed).
std::string cuda_versions();

// Why `ptr` cannot be a caller's buffer of Runtime::enqueue on CUDA device
// `device` (it must be device memory of that device, managed or page-locked
// host memory); "" when it can.
std::string caller_memory_problem(const void* ptr, int device);

class Runtime {
public:
    // Reads the plan file at `path` (plan::read_plan) and prepares it.
    explicit Runtime(const std::string& path, const RuntimeOptions& options = {});
    // Prepares an in-memory plan (validated first). Plan::weights is released
    // after the upload.
    explicit Runtime(plan::Plan plan, const RuntimeOptions& options = {});
    ~Runtime();
    Runtime(Runtime&&) noexcept;
    Runtime& operator=(Runtime&&) noexcept;
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // The plan that runs: a ranged plan's current bucket (without its weights).
    const plan::Plan& plan() const;
    // A ranged plan's shape ranges, else null; the index of the bucket that runs the current shapes.
    const plan::ShapeRanges* ranges() const;
    size_t bucket() const;
    const std::vector<TensorInfo>& inputs() const;
    const std::vector<TensorInfo>& outputs() const;
    std::string device_name() const;  // "NVIDIA H100 80GB HBM3 (sm_90)"
    int device() const;               // the CUDA device index

    // Sets the actual shape of input `index` (a ranged plan; a static plan takes only its
    // own shape): the shape variables its dimensions follow take its sizes, which changes
    // the shapes of the other inputs and outputs that follow them. The inputs' contents
    // are then undefined until set again.
    void set_input_shape(size_t index, const Shape& shape);
    // Copies `t` into the input `name`; its dtype and shape must match exactly (a ranged
    // plan: a shape inside the ranges first sets the shape, as set_input_shape).
    void set_input(const std::string& name, const Tensor& t);
    // Copies `bytes` bytes of host memory into input `index` (bytes must equal its size).
    void set_input(size_t index, const void* data, size_t bytes);

    // Runs the plan and waits for it. graph = true replays a CUDA graph
    // (captured on the first such run).
    void run(bool graph = false);

    // Device address of input / output `index` in the plan's memory, valid
    // while the Runtime lives (writing / reading it directly needs no copy); a
    // ranged plan: its buffer at the actual shape, row-major, valid until the shapes
    // change (the bucket's own buffer when bound in place, else a staging buffer).
    void* input_address(size_t index) const;
    void* output_address(size_t index) const;
    // Enqueues one run on `stream` (a cudaStream_t of the plan's device; null:
    // the legacy default stream) and returns without waiting. `inputs` holds one
    // address per input (device, managed or page-locked host memory of the input's
    // dtype and size, row-major), copied into the plan's memory on the stream
    // first; a null array or entry: the plan's own buffer already holds it.
    // `outputs` likewise receives the outputs after the steps; null: left in the
    // plan's memory. The run first waits (on the GPU) for the previous run or
    // copy of this Runtime enqueued on another stream.
    void enqueue(const void* const* inputs, void* const* outputs, bool graph, void* stream);
    // Runs the steps one at a time, waiting for each, and calls after_step(i)
    // after step i (debugging: read_tensor sees each step's results).
    void run_traced(const std::function<void(size_t step)>& after_step);

    Tensor output(const std::string& name) const;
    void get_output(size_t index, void* data, size_t bytes) const;

    // Latency of `runs` runs after `warmup` runs, milliseconds per run, each
    // measured with CUDA events around one run.
    std::vector<double> benchmark(int runs, int warmup, bool graph);
    // Time of each step: per step, the median over `runs` plain runs (after
    // `warmup` runs) of the time between CUDA events recorded around it, in
    // milliseconds, in step order. Launch gaps count towards the next step.
    std::vector<double> profile(int runs, int warmup);

    // Any tensor of the plan by index (tests and tools: poisoning outputs,
    // reading intermediates). write_tensor takes t of the tensor's dtype and size.
    Tensor read_tensor(int32_t index) const;
    void write_tensor(int32_t index, const Tensor& t);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stof
