// The offline cost model: a roofline estimate of each segment's time, for
// compiles without a GPU (--offline) and to rank candidates before measuring.
//   time = launch + max(bytes / (bandwidth · efficiency), flops / peak)
// bytes: every stored value a segment reads (once, at its own size) and writes, in
// the plan's storage types; flops: 2·M·N·K for GEMMs. Efficiency: the fraction of
// the HBM bandwidth a kernel family reaches (one element a thread, 16-byte
// accesses, row kernels), fitted to the H100's measurements, or to a tuning cache's
// records for the target GPU, whose own times win where they exist. A GEMM on a fused
// kernel of kernels/gemm (fused_gemm_epilogue) has no estimate: it is chosen
// only from a measurement (its time is infinite without a record).
#pragma once

#include "fusion/search.hpp"
#include "precision.hpp"

#include <map>
#include <string>

namespace stof::fusion {

struct DeviceModel {
    double bandwidth_gbs = 3000;  // HBM, GB/s
    double gemm_tflops = 600;     // dense fp16/bf16 GEMMs through cuBLASLt
    double launch_us = 2.5;       // a kernel's fixed cost inside a CUDA graph
    double scalar_efficiency = 0.55, vector_efficiency = 0.85, row_efficiency = 0.7;
};

// A time measured on the target GPU (a tuning cache record, tune/tune_cache.hpp).
struct MeasuredTime {
    double us = 0;
    int64_t bytes = 0;
    std::string kind;  // segment kind name
};

class CostModel final : public Evaluator {
public:
    CostModel(Precision precision, DeviceModel device = {}) : precision_(precision), device_(device) {}
    // Times measured on the target GPU, by segment_key: they win over the estimate, and the
    // model's efficiencies are fitted to the elementwise and row-norm ones among them.
    void use_measurements(std::map<std::string, MeasuredTime> measured);
    Timing segment(const ir::Graph& g, const FusionPlan& p, const Segment& s) override;
    const char* source() const override { return "model"; }
    std::string source_of(const ir::Graph& g, const Segment& s) const override;
    const DeviceModel& device() const { return device_; }

    // Bytes segment s moves (reads of stored values and constants, writes of its outputs).
    int64_t bytes(const ir::Graph& g, const Segment& s) const;

private:
    Precision precision_;
    DeviceModel device_;
    std::map<std::string, MeasuredTime> measured_;
};

}  // namespace stof::fusion
