// stofc compile MODEL.onnx [-o PLAN]: import, run the passes, lower to kernels
// (NVRTC for the target GPU) and write one plan file.
#include "cli/cli_args.hpp"
#include "cli/commands.hpp"
#include "codegen/nvrtc.hpp"
#include "compile.hpp"
#include "fusion/cost_model.hpp"
#include "onnx/import.hpp"
#include "plan/plan_writer.hpp"
#include "shape_ranges.hpp"
#include "stof/error.hpp"
#include "stof/progress.hpp"
#include "stof/shape_ranges.hpp"
#include "stof/version.hpp"
#include "tune/gpu_evaluator.hpp"
#include "tune/progress.hpp"

#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <map>

namespace stof::cli {

namespace {

struct CompileArgs {
    std::string model, output, precision = "fp32", arch, cache_dir, dump_after, attention_kernel = "auto", tune;
    double tune_budget = 0;
    int tune_sweep = 0;
    std::vector<std::string> shapes;
    std::vector<std::string> masks;
    bool offline = false;
    int jobs = 0;
    int shape_buckets = 1;
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

// A tuning cache's records, as the cost model takes them.
std::map<std::string, fusion::MeasuredTime> measured_times(const tune::TuneCache& cache) {
    std::map<std::string, fusion::MeasuredTime> out;
    for (const auto& [key, r] : cache.records()) out[key] = {r.us, r.bytes, r.kind};
    return out;
}

void run_compile(const CompileArgs& a) {
    const auto t0 = std::chrono::steady_clock::now();
    STOF_CHECK(a.tune_sweep >= 0, "--tune-sweep {}: give the number of segments to sweep (1 or more)", a.tune_sweep);
    STOF_CHECK(a.tune_sweep == 0 || a.tune == "full",
               "--tune-sweep needs --tune full (it measures the full search's stage 2); the tuning here is {}",
               a.tune.empty() ? std::string("the default (--tune fast with a GPU, off without)") : "--tune " + a.tune);
    std::string arch = a.arch;
    // Tuning measures on the GPU present, so it needs one and plans for it.
    std::string no_tuning;
    if (!a.offline) {
        std::string why;
        const std::string dev = device_arch(&why);
        if (dev.empty()) {
            if (arch.empty()) arch = "sm_90";
            spdlog::warn("no GPU available ({}): compiling offline for {}", why, arch);
            no_tuning = "there is no GPU (" + why + ")";
        } else {
            if (!arch.empty() && arch != dev) {
                spdlog::warn("--arch {} differs from the GPU's {}; compiling for {}", arch, dev, arch);
                no_tuning = fmt::format("--arch {} is not the GPU's {}", arch, dev);
            }
            if (arch.empty()) arch = dev;
        }
    } else {
        if (arch.empty()) arch = "sm_90";
        no_tuning = "--offline";
    }
    const std::string tune = a.tune.empty() ? (no_tuning.empty() ? "fast" : "off") : a.tune;
    STOF_CHECK(tune == "off" || no_tuning.empty(), "--tune {} needs the GPU the plan is for, but {}", tune, no_tuning);
    STOF_CHECK(a.tune_budget >= 0, "--tune-budget must be a positive number of seconds");

    // Default: <model stem>.plan in the current directory; never the model itself.
    const std::string output = a.output.empty() ? std::filesystem::path(a.model).stem().string() + ".plan" : a.output;
    check_output_file(output, "-o");
    std::error_code ec;
    STOF_CHECK(!std::filesystem::equivalent(output, a.model, ec), "-o {} names the input model {}: the plan would overwrite it",
               output, a.model);

    ShapeArgs shapes = parse_shape_args(a.shapes);
    shapes.per_doubling = a.shape_buckets;
    STOF_CHECK(a.shape_buckets >= 1 && a.shape_buckets <= plan::kMaxBucketsPerDoubling, "--shape-buckets {}: take 1..{}",
               a.shape_buckets, plan::kMaxBucketsPerDoubling);
    ir::Graph g = import_onnx_file(a.model);
    size_t weight_bytes = 0;
    for (const ir::Value& v : g.values)
        if (v.data) weight_bytes += v.data->bytes.size();
    spdlog::info("imported {}: {} nodes, opset {}, {:.1f} MB of constants", a.model, g.nodes.size(), g.opset,
                 static_cast<double>(weight_bytes) / 1e6);
    CompileOptions opt;
    opt.pipeline.pass.input_shapes = shapes.fixed;
    if (a.shapes.empty()) {
        auto [defaults, named] = default_shapes(g);
        if (!named.empty())
            spdlog::warn(
                "the model has symbolic dimensions and no --shape was given: compiling for {} (give --shape DIM=N, "
                "or DIM=MIN..MAX for a range)",
                named);
        opt.pipeline.pass.input_shapes = std::move(defaults);
    }
    opt.pipeline.pass.masks = a.masks;
    opt.pipeline.dump_after = a.dump_after;
    opt.lower.precision = parse_precision(a.precision);
    opt.lower.arch = arch;
    opt.lower.cache_dir = a.cache_dir;
    opt.lower.jobs = a.jobs;
    opt.lower.attention_kernel = codegen::parse_attention_kernel_choice(a.attention_kernel);
    opt.lower.model = std::filesystem::path(a.model).filename().string();
    std::unique_ptr<tune::GpuEvaluator> gpu;
    std::unique_ptr<tune::ProgressLine> progress;
    std::unique_ptr<fusion::CostModel> model;
    if (tune != "off") {
        const bool full = tune == "full";
        opt.search.budget_s = a.tune_budget > 0 ? a.tune_budget : full ? 600 : 60;
        opt.search.stage2_first = full ? 8 : 4;
        opt.search.stage2_batch = full ? 32 : 12;
        opt.search.stage2_max_rounds = full ? 12 : 3;
        opt.search.time_stage1 = full;
        opt.search.sweep = a.tune_sweep;
        tune::GpuEvaluatorOptions eo;
        eo.lower = opt.lower;
        eo.cache_dir = a.cache_dir.empty() ? codegen::default_cache_dir() : a.cache_dir;
        gpu = std::make_unique<tune::GpuEvaluator>(std::move(eo));
        progress = std::make_unique<tune::ProgressLine>(stderr, opt.search.budget_s);
        opt.search.on_progress = [&](const fusion::SearchProgress& sp) { (*progress)(sp); };
        opt.evaluator = gpu.get();
        // The final check also times the plan --tune off would make with the tuning cache as
        // it is then (every segment the search measured included), and keeps the fastest.
        opt.search.cost_model_plan = [&gpu, precision = opt.lower.precision, arch](const ir::Graph& g) {
            fusion::CostModel cost_model(precision);
            cost_model.use_measurements(measured_times(gpu->cache()));
            fusion::SearchOptions o;
            o.sites.fused_gemm = fusion::fused_gemm_target(arch, precision);
            return fusion::search(g, cost_model, o);
        };
        spdlog::info("tuning ({}) on {}, budget {:.0f} s for all of it (the stages leave the final check its time)", tune,
                     gpu->identity().gpu, opt.search.budget_s);
    } else {
        // The cost model, with the tuning cache's records for the target GPU where there are some.
        tune::CacheIdentity id;
        id.nvrtc = codegen::nvrtc_version();
        id.stofc = kVersion;
        id.templates = fmt::format("{:016x}", codegen::templates_hash());
        id.kernels = tune::kernels_digest();
        const tune::TuneCache cache = tune::TuneCache::for_arch(
            a.cache_dir.empty() ? codegen::default_cache_dir() : a.cache_dir, id, arch);
        model = std::make_unique<fusion::CostModel>(opt.lower.precision);
        model->use_measurements(measured_times(cache));
        opt.evaluator = model.get();
        spdlog::info(
            "fusion decided by the cost model ({}){}", no_tuning.empty() ? "--tune off" : no_tuning,
            cache.records().empty() ? "" : fmt::format(", with {} times measured on {} GPUs", cache.records().size(), arch));
    }
    const plan::Plan p = shapes.ranged.empty() ? compile_model(g, opt) : compile_ranged(g, shapes, opt);
    if (gpu) {
        progress->finish();
        gpu->save_cache();
        const tune::EvaluatorStats& st = gpu->stats();
        spdlog::info(
            "tuning: {} measured, {} from the tuning cache, {} rejected (wrong output), {} failed; lowering {:.1f} s, "
            "measuring {:.1f} s (loading plans {:.1f} s), checking outputs {:.1f} s, whole plans {:.1f} s",
            st.measured, st.from_cache, st.rejected, st.failed, st.lowering_s, st.measuring_s, st.loading_s, st.checking_s,
            st.whole_plans_s);
    }
    {
        ProgressPhase phase(fmt::format("writing {}", output));
        plan::write_plan(p, output);
    }

    // The steps of the plan, or of its largest bucket.
    const plan::Plan& body = p.ranged() ? p.buckets.back() : p;
    std::map<std::string, int> kinds;
    for (const plan::Step& s : body.steps) ++kinds[s.label];
    std::string summary;
    for (const auto& [k, c] : kinds) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", c, k);
    const std::string buckets = p.ranged() ? fmt::format("{} shape buckets ({}); the largest: ", p.buckets.size(),
                                                         plan::describe_ranges(p.ranges))
                                           : "";
    fmt::print("wrote {} ({:.1f} MB): {}{} steps ({}), {} kernels, {} precision, {}, {:.1f} s\n", output,
               static_cast<double>(std::filesystem::file_size(output)) / 1e6, buckets, body.steps.size(), summary,
               body.kernels.size(), a.precision, arch,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

void add_compile_command(CLI::App& app) {
    auto args = std::make_shared<CompileArgs>();
    CLI::App* cmd = app.add_subcommand("compile", "Compile an ONNX model into a plan file");
    cmd->add_option("model", args->model, "ONNX model file")->required()->check(CLI::ExistingFile);
    cmd->add_option("-o,--output", args->output, "Plan file to write (default: <model name>.plan in the current directory)");
    cmd->add_option("--shape", args->shapes,
                    "Input shape NAME=DIMS (input_ids=2x128) or symbolic dimension DIM=N (batch=2); a size MIN..MAX "
                    "(seq=128..1024, input_ids=1..8x128..4096) makes a plan for the whole range, one shape bucket per "
                    "power of two (at most 32 buckets). Repeatable; without any --shape, symbolic dimensions get batch 1, "
                    "others 128");
    cmd->add_option("--shape-buckets", args->shape_buckets,
                    "Shape buckets per doubling of each --shape range: 1 (the powers of two), 2 (also 1.5x), 4 (steps of "
                    "1.25x), ... up to 16: more buckets pad less, and make a larger plan")
        ->capture_default_str();
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
    cmd->add_option("--tune", args->tune,
                    "Fusion search and kernel parameters: measured on the GPU (fast, full) or from the cost model (off) "
                    "(default: fast with a GPU, off with --offline or none)")
        ->check(CLI::IsMember({"off", "fast", "full"}));
    cmd->add_option("--tune-budget", args->tune_budget,
                    "Seconds all of tuning may take, its whole-plan timings included: the stages stop early enough to "
                    "leave the final check's two whole-plan timings (the searched plan, the cost-model plan) each the time the "
                    "initial plan's timing took (default: fast 60, full 600)");
    cmd->add_option("--tune-sweep", args->tune_sweep,
                    "With --tune full: after stage 2, time every configuration of the N segments that take the most "
                    "time (occurrences x time) and report stage 2's choice against the fastest (the plan keeps stage 2's; "
                    "not bounded by --tune-budget)")
        ->type_name("N");
    cmd->add_option("--dump-after", args->dump_after,
                    "Print the IR after pass NAME, the fusion plan with 'partition', or everything with 'all'");
    add_max_memory_option(cmd);
    cmd->callback([args] { run_compile(*args); });
}

}  // namespace stof::cli
