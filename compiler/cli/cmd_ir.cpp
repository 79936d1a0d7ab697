// stofc ir MODEL [--shape NAME=DIMS]... : print the IR after the pipeline, or
// the fusion plan with --dump-after partition.
#include "cli/cli_args.hpp"
#include "cli/commands.hpp"
#include "shape_ranges.hpp"
#include "fusion/cost_model.hpp"
#include "fusion/fusion_plan.hpp"
#include "onnx/import.hpp"
#include "pipeline.hpp"

#include <spdlog/spdlog.h>

namespace stof::cli {

namespace {
struct IrArgs {
    std::string model, dump_after, precision = "fp32";
    std::vector<std::string> shapes;
    std::vector<std::string> masks;
};
}  // namespace

void add_ir_command(CLI::App& app) {
    auto args = std::make_shared<IrArgs>();
    CLI::App* cmd = app.add_subcommand("ir", "Print a model's IR after the compiler passes");
    cmd->add_option("model", args->model, "ONNX model file")->required()->check(CLI::ExistingFile);
    cmd->add_option("--shape", args->shapes,
                    "Input shape NAME=DIMS (input_ids=2x128) or symbolic dimension DIM=N (batch=2) (repeatable)");
    cmd->add_option("--mask", args->masks, kMaskHelp);
    cmd->add_option("--precision", args->precision,
                    "Plan precision the passes prepare for (decides which attention blocks stay on the sparse kernels)")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16"}))
        ->capture_default_str();
    cmd->add_option("--dump-after", args->dump_after,
                    "Print the IR after pass NAME, the fusion plan (which ops form each kernel) with 'partition', or "
                    "everything with 'all'");
    add_max_memory_option(cmd);
    cmd->callback([args] {
        ir::Graph g = import_onnx_file(args->model);
        PipelineOptions opt;
        opt.pass.input_shapes = parse_shapes(args->shapes);
        if (args->shapes.empty()) {
            auto [defaults, named] = default_shapes(g);
            if (!named.empty()) spdlog::warn("the model has symbolic dimensions and no --shape was given: using {}", named);
            opt.pass.input_shapes = std::move(defaults);
        }
        opt.pass.masks = args->masks;
        opt.pass.plan_precision = parse_precision(args->precision);
        opt.dump_after = args->dump_after;
        run_pipeline(g, opt);
        if (args->dump_after.empty()) fmt::print("{}", ir::to_text(g));
        if (args->dump_after == "all" || args->dump_after == kPartitionStage) {
            fusion::CostModel model(*opt.pass.plan_precision);
            fmt::print("{}\n", fusion::to_text(g, fusion::search(g, model, {}).plan));
        }
        spdlog::info("{} nodes: {}", g.nodes.size(), ir::op_histogram(g));
    });
}

}  // namespace stof::cli
