// The executor: one validated plan loaded onto one device, its steps prepared
// once, run on its own stream or a caller's (plain launches or a CUDA graph
// captured once). Runs share the plan's memory, so work enqueued on one stream
// first waits (on the GPU) for the previous run or copy enqueued on another.
//
// Device memory: the arena (Plan::arena_bytes, one allocation, zeroed once),
// the weights buffer (uploaded once), the masks' arrays (one allocation) and,
// when the plan has gemm steps, a cuBLASLt workspace of kWorkspaceBytes.
#pragma once

#include "exec/gemm.hpp"
#include "stof/kernels/attention.hpp"
#include "stof/kernels/mask_convert.hpp"
#include "stof/plan.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace stof::exec {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

class Executor {
public:
    // Validates the plan and loads it onto `device`. Throws stof::Error. A plan with
    // placeholder weights (Plan::placeholders) is refused unless `placeholders`: then its
    // placeholder tensors are allocated but not written, for the caller to fill (the
    // tuning worker, tune/measure.hpp).
    Executor(plan::Plan plan, int device, bool placeholders = false);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    const plan::Plan& plan() const { return plan_; }
    std::string device_name() const { return device_name_; }
    int device() const { return device_; }
    cudaStream_t stream() const { return stream_; }

    // Makes this executor's device current for the calling thread.
    void activate() const;

    // Device address of tensor t.
    void* address(int32_t t) const;

    // Enqueues one run of every step on the executor's stream, or on `stream`
    // (no synchronisation). graph: replay the CUDA graph, capturing it first if needed.
    void enqueue(bool graph);
    void enqueue(bool graph, cudaStream_t stream);
    void synchronize() const;
    // Enqueues every step on `stream` with no ordering against other streams: for a
    // caller capturing `stream` into a CUDA graph of its own.
    void enqueue_captured(cudaStream_t stream);
    // Runs step i alone and waits for it (tracing; never inside a graph).
    void run_step(size_t i);
    // Enqueues step i alone on the executor's stream (no synchronisation; profiling).
    void enqueue_step(size_t i);

    // Orders work on `stream` after everything enqueued so far on any stream
    // (begin), and records the end of work enqueued on `stream` (end).
    void begin_on(cudaStream_t stream) const;
    void end_on(cudaStream_t stream) const;

    // Whole-tensor copies between host memory and tensor t (synchronous).
    void upload(int32_t t, const void* host);
    void download(int32_t t, void* host) const;

private:
    struct Launch {
        CUfunction fn = nullptr;
        uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
        uint32_t shared_bytes = 0;
        std::vector<uint64_t> storage;  // one 8-byte slot per argument
        std::vector<void*> params;      // &storage[i]
    };
    struct KeyValid {
        const void* mask = nullptr;
        int32_t elem_bytes = 0, batch = 0, seq = 0, fold = 1;
        uint64_t* words = nullptr;
    };
    // A run-time mask: its device buffers and the conversion that fills them.
    struct MaskConvert {
        kernels::DenseMaskInput in;  // data set per step
        int32_t tile_m = 0, tile_n = 0;
        kernels::SparseMaskBuffers out;
        void* workspace = nullptr;
        size_t workspace_bytes = 0;
    };
    struct Copy {
        const void* src = nullptr;
        void* dst = nullptr;
        size_t bytes = 0;
    };
    struct Prepared {
        plan::StepKind kind = plan::StepKind::launch;
        Launch launch;
        std::unique_ptr<PreparedGemm> gemm;
        // The kernel problems of an attention step: one, or those of its fold
        // (kernels::folded_attention_problems), built and checked once at load.
        std::vector<kernels::AttentionArgs> attention;
        kernels::AttentionKernel attention_kernel = kernels::AttentionKernel::block_wise;
        KeyValid key_valid;
        Copy copy;
        MaskConvert mask_convert;
    };

    void load_modules();
    void allocate();
    void upload_masks();
    void prepare_steps();
    void enqueue_steps(cudaStream_t stream);
    void enqueue_step(size_t i, cudaStream_t stream);
    void capture();
    void release() noexcept;

    plan::Plan plan_;
    int device_ = 0;
    int cc_major_ = 0, cc_minor_ = 0;
    std::string device_name_;
    cudaStream_t stream_ = nullptr;
    cudaEvent_t last_done_ = nullptr;             // recorded by end_on
    mutable cudaStream_t last_stream_ = nullptr;  // the stream it was recorded on
    mutable bool last_recorded_ = false;
    std::vector<CUmodule> modules_;
    std::vector<CUfunction> functions_;  // per kernel
    void* arena_ = nullptr;
    void* weights_ = nullptr;
    void* masks_ = nullptr;
    std::vector<kernels::SparseMaskView> mask_views_;  // per mask
    std::vector<MaskConvert> runtime_masks_;           // per mask (used for run-time ones)
    std::vector<void*> runtime_mask_memory_;
    cublasLtHandle_t lt_ = nullptr;
    void* workspace_ = nullptr;
    void* work_queues_ = nullptr;      // two zeroed 32-bit words per attention step (AttentionArgs::work_queue)
    void* split_workspace_ = nullptr;  // AttentionArgs::split_workspace of every attention step; where a mask has long rows
    std::vector<Prepared> steps_;
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t graph_exec_ = nullptr;
};

}  // namespace stof::exec
