#include "gpu_tuning.hpp"

#include "compile.hpp"

#include <filesystem>

#include <unistd.h>

namespace stof::test {

namespace {

tune::GpuEvaluatorOptions evaluator_options(const std::string& cache_dir) {
    tune::GpuEvaluatorOptions o;
    o.lower.precision = Precision::fp16;
    o.lower.arch = "sm_90";
    o.lower.cache_dir = cache_dir;
    o.cache_dir = cache_dir;
    o.measure = worker_options();
    return o;
}

}  // namespace

tune::MeasureOptions worker_options() {
    tune::MeasureOptions o;
    o.worker = {STOF_STOFC_PATH, "tune-worker"};
    return o;
}

ScratchDir::ScratchDir(const std::string& name)
    : path_((std::filesystem::temp_directory_path() / ("stof-test-gpu-" + name + "-" + std::to_string(::getpid()))).string()) {
    std::filesystem::remove_all(path_);
}

ScratchDir::~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

GpuTuning::GpuTuning(const std::string& cache_dir) : options(evaluator_options(cache_dir)), evaluator(options) {}

plan::Plan GpuTuning::compile(ir::Graph& g) {
    CompileOptions opt;
    opt.lower = options.lower;
    opt.evaluator = &evaluator;
    return compile_model(g, opt);
}

}  // namespace stof::test
