// stofc eval MODEL --input NAME=FILE.npy ... : run a model on the CPU reference
// interpreter, write outputs, and compare them with expected files.
#include "cli/cli_args.hpp"
#include "cli/commands.hpp"
#include "onnx/import.hpp"
#include "pipeline.hpp"
#include "stof/compare.hpp"
#include "stof/error.hpp"
#include "stof/npy.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

namespace stof::cli {

namespace {

struct EvalArgs {
    std::string model;
    std::vector<std::string> inputs, expects, shapes, masks;
    std::string inputs_dir, expect_dir, output_dir, dump_after, dump_dir;
    double rtol = 1e-3, atol = 1e-4;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_eval(const EvalArgs& a) {
    check_tolerances(a.rtol, a.atol);
    if (!a.output_dir.empty()) make_output_dir(a.output_dir, "--output-dir");
    if (!a.dump_dir.empty()) make_output_dir(a.dump_dir, "--dump-dir");
    auto t0 = std::chrono::steady_clock::now();
    ir::Graph g = import_onnx_file(a.model);
    spdlog::info("imported {}: {} nodes, opset {} ({:.2f} s)", a.model, g.nodes.size(), g.opset, seconds_since(t0));

    const TensorMap feeds = load_inputs(g, a.inputs, a.inputs_dir);
    PipelineOptions opt;
    opt.pass.input_shapes = parse_shapes(a.shapes);
    opt.pass.masks = a.masks;
    for (const auto& [name, t] : feeds) {
        auto it = opt.pass.input_shapes.find(name);
        STOF_CHECK(it == opt.pass.input_shapes.end() || it->second == t.shape,
                   "--shape {}={} disagrees with the input file's shape {}", name, shape_str(it->second), shape_str(t.shape));
        opt.pass.input_shapes[name] = t.shape;
    }
    opt.dump_after = a.dump_after;
    run_pipeline(g, opt);
    spdlog::info("compiled to {} nodes: {}", g.nodes.size(), ir::op_histogram(g));

    t0 = std::chrono::steady_clock::now();
    const TensorMap outputs = interpret(g, feeds);
    spdlog::info("evaluated in {:.2f} s", seconds_since(t0));

    if (!a.dump_dir.empty()) {
        // Every node output, named as in the plan's tensors (stof-run --dump-dir).
        ir::Graph all = g;
        all.outputs.clear();
        for (const ir::Node& n : g.nodes)
            for (ir::ValueId v : n.outputs)
                if (v != ir::kNoValue) all.outputs.push_back(v);
        for (const auto& [name, t] : interpret(all, feeds))
            write_npy((std::filesystem::path(a.dump_dir) / (tensor_file_name(name) + ".npy")).string(), t);
        spdlog::info("wrote every intermediate value to {}", a.dump_dir);
    }

    if (!a.output_dir.empty()) {
        for (const auto& [name, t] : outputs) {
            const std::string path = (std::filesystem::path(a.output_dir) / (tensor_file_name(name) + ".npy")).string();
            write_npy(path, t);
            spdlog::info("wrote {} {}", path, t.describe());
        }
    }

    const TensorMap expected = load_expected(g, a.expects, a.expect_dir);
    int failures = 0;
    for (const auto& [name, t] : outputs) {
        auto it = expected.find(name);
        if (it == expected.end()) {
            if (a.output_dir.empty()) fmt::print("{}: {}\n", name, t.describe());
            continue;
        }
        const Comparison c = compare(t, it->second, a.rtol, a.atol);
        fmt::print("{} {}: {}\n", c.ok ? "match   " : "MISMATCH", name, describe(c, it->second, a.rtol, a.atol));
        failures += !c.ok;
    }
    STOF_CHECK(failures == 0, "{} of {} compared outputs do not match", failures, expected.size());
}

}  // namespace

void add_eval_command(CLI::App& app) {
    auto args = std::make_shared<EvalArgs>();
    CLI::App* cmd = app.add_subcommand("eval", "Run a model on the CPU reference interpreter (fp32)");
    cmd->add_option("model", args->model, "ONNX model file")->required()->check(CLI::ExistingFile);
    cmd->add_option("--input,-i", args->inputs, "Input tensor, NAME=FILE.npy (repeatable)");
    cmd->add_option("--dump-dir", args->dump_dir, "Write every intermediate value to DIR/<name>.npy");
    cmd->add_option("--inputs-dir", args->inputs_dir, "Directory with <input>.npy for inputs not given by --input");
    cmd->add_option("--shape", args->shapes,
                    "Input shape NAME=DIMS (input_ids=2x128) or symbolic dimension DIM=N (batch=2) (must match the files)");
    cmd->add_option("--mask", args->masks, kMaskHelp);
    cmd->add_option("--output-dir,-o", args->output_dir, "Write every output to DIR/<output>.npy");
    cmd->add_option("--expect", args->expects, "Expected output NAME=FILE.npy (repeatable)");
    cmd->add_option("--expect-dir", args->expect_dir, "Directory with expected <output>.npy files");
    cmd->add_option("--rtol", args->rtol, "Relative tolerance for --expect")->capture_default_str();
    cmd->add_option("--atol", args->atol, "Absolute tolerance for --expect")->capture_default_str();
    cmd->add_option("--dump-after", args->dump_after, "Print the IR after pass NAME, or after every pass with 'all'");
    add_max_memory_option(cmd);
    cmd->callback([args] { run_eval(*args); });
}

}  // namespace stof::cli
