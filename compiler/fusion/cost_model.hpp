// The offline cost model: a roofline estimate of each segment's time, for
// compiles without a GPU (--offline) and to rank candidates before measuring.
//   time = launch + max(bytes / (bandwidth · efficiency), flops / peak)
// bytes: every stored value a segment reads (once, at its own size) and writes, in
// the plan's storage types; flops: 2·M·N·K for GEMMs. Efficiency: the fraction of
// the HBM bandwidth a kernel family reaches (one element a thread, 16-byte
// accesses, row kernels), fitted to the H100's measurements.
#pragma once

#include "fusion/search.hpp"
#include "precision.hpp"

namespace stof::fusion {

struct DeviceModel {
    double bandwidth_gbs = 3000;    // HBM, GB/s
    double gemm_tflops = 600;       // dense fp16/bf16 GEMMs through cuBLASLt
    double launch_us = 2.5;         // a kernel's fixed cost inside a CUDA graph
    double scalar_efficiency = 0.55, vector_efficiency = 0.85, row_efficiency = 0.7;
};

class CostModel final : public Evaluator {
public:
    CostModel(Precision precision, DeviceModel device = {}) : precision_(precision), device_(device) {}
    Timing segment(const ir::Graph& g, const FusionPlan& p, const Segment& s) override;
    const char* source() const override { return "model"; }

    // Bytes segment s moves (reads of stored values and constants, writes of its outputs).
    int64_t bytes(const ir::Graph& g, const Segment& s) const;

private:
    Precision precision_;
    DeviceModel device_;
};

}  // namespace stof::fusion
