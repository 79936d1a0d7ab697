// The GPU side of the [gpu][tune] tests: the measuring worker of this build, a
// scratch folder for the kernel and tuning caches, and a GPU evaluator (fp16, sm_90)
// over that folder through which a graph is compiled.
#pragma once

#include "ir/graph.hpp"
#include "stof/plan.hpp"
#include "tune/gpu_evaluator.hpp"
#include "tune/measure.hpp"

#include <string>

namespace stof::test {

// Measuring through `stofc tune-worker` of this build.
tune::MeasureOptions worker_options();

// The folder stof-test-gpu-<name>-<pid> of the system's temporary directory: emptied
// when made, removed with everything in it when destroyed.
class ScratchDir {
public:
    explicit ScratchDir(const std::string& name);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A GpuEvaluator at fp16 for sm_90 measuring through worker_options(), its kernel
// cache and tuning cache both in cache_dir; compile(g) is compile_model with it
// choosing the fusion.
struct GpuTuning {
    explicit GpuTuning(const std::string& cache_dir);
    plan::Plan compile(ir::Graph& g);

    const tune::GpuEvaluatorOptions options;
    tune::GpuEvaluator evaluator;
};

}  // namespace stof::test
