// stofc compile MODEL.onnx [-o PLAN]: import, run the passes, lower to kernels
// (NVRTC for the target GPU) and write one plan file.
#include "cli/cli_args.hpp"
#include "cli/commands.hpp"
#include "codegen/nvrtc.hpp"
#include "compile.hpp"
#include "onnx/import.hpp"
#include "plan/plan_writer.hpp"
#include "stof/error.hpp"

#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <map>

namespace stof::cli {

namespace {

struct CompileArgs {
    std::string model, output, precision = "fp32", arch, cache_dir, dump_after, attention_kernel = "auto";
    std::vector<std::string> shapes;
    std::vector<std::string> masks;
    bool offline = false;
    int jobs = 0;
};

// "sm_90" for the current GPU, or "" (with the reason) when there is none.
std::string device_arch(std::string* why) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
        return "";
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        *why = "cannot read the device properties";
        return "";
    }
    return fmt::format("sm_{}{}", prop.major, prop.minor);
}

void run_compile(const CompileArgs& a) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string arch = a.arch;
    if (!a.offline) {
        std::string why;
        const std::string dev = device_arch(&why);
        if (dev.empty()) {
            if (arch.empty()) arch = "sm_90";
            spdlog::warn("no GPU available ({}): compiling offline for {}", why, arch);
        } else {
            if (!arch.empty() && arch != dev) spdlog::warn("--arch {} differs from the GPU's {}; compiling for {}", arch, dev, arch);
            if (arch.empty()) arch = dev;
        }
    } else if (arch.empty()) {
        arch = "sm_90";
    }

    ir::Graph g = import_onnx_file(a.model);
    spdlog::info("imported {}: {} nodes, opset {}", a.model, g.nodes.size(), g.opset);
    CompileOptions opt;
    opt.pipeline.pass.input_shapes = parse_shapes(a.shapes);
    opt.pipeline.pass.masks = a.masks;
    opt.pipeline.dump_after = a.dump_after;
    opt.lower.precision = parse_precision(a.precision);
    opt.lower.arch = arch;
    opt.lower.cache_dir = a.cache_dir;
    opt.lower.jobs = a.jobs;
    opt.lower.attention_kernel = codegen::parse_attention_kernel_choice(a.attention_kernel);
    opt.lower.model = std::filesystem::path(a.model).filename().string();
    const plan::Plan p = compile_model(g, opt);
    // Default: <model stem>.plan in the current directory.
    const std::string output =
        a.output.empty() ? std::filesystem::path(a.model).stem().string() + ".plan" : a.output;
    plan::write_plan(p, output);

    std::map<std::string, int> kinds;
    for (const plan::Step& s : p.steps) ++kinds[s.label];
    std::string summary;
    for (const auto& [k, c] : kinds) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", c, k);
    fmt::print("wrote {} ({:.1f} MB): {} steps ({}), {} kernels, {} precision, {}, {:.1f} s\n", output,
               static_cast<double>(std::filesystem::file_size(output)) / 1e6, p.steps.size(), summary, p.kernels.size(), a.precision, arch,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

void add_compile_command(CLI::App& app) {
    auto args = std::make_shared<CompileArgs>();
    CLI::App* cmd = app.add_subcommand("compile", "Compile an ONNX model into a plan file");
    cmd->add_option("model", args->model, "ONNX model file")->required()->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", args->output, "Plan file to write (default: <model name>.plan in the current directory)");
    cmd->add_option("--shape", args->shapes, "Input shape NAME=DIMS (input_ids=2x128) or symbolic dimension DIM=N (batch=2) "
                                             "(repeatable; needed for every symbolic input dimension)");
    cmd->add_option("--mask", args->masks, kMaskHelp);
    cmd->add_option("--attention-kernel", args->attention_kernel,
                    "Sparse attention kernel: auto (the analytical selector), block-wise or row-wise")
        ->check(CLI::IsMember({"auto", "block-wise", "row-wise"}))
        ->capture_default_str();
    cmd->add_option("--precision", args->precision, "Storage precision of float tensors (computation is fp32)")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
        ->capture_default_str();
    cmd->add_option("--arch", args->arch, "Target GPU architecture, e.g. sm_80, sm_90 (default: the GPU present, else sm_90)");
    cmd->add_flag("--offline", args->offline, "Do not touch a GPU: compile for --arch (how CI builds plan artifacts)");
    cmd->add_option("--cache-dir", args->cache_dir,
                    "Kernel cache and generated sources (default: $STOF_CACHE_DIR or ~/.cache/stofc)");
    cmd->add_option("-j,--jobs", args->jobs, "Parallel NVRTC compilations (default: all cores)");
    cmd->add_option("--dump-after", args->dump_after,
                    "Print the IR after pass NAME, the fusion plan with 'partition', or everything with 'all'");
    cmd->callback([args] { run_compile(*args); });
}

}  // namespace stof::cli
