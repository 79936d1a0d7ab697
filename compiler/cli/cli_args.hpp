// Parsing helpers shared by the stofc subcommands.
#pragma once

#include "interp/interpreter.hpp"
#include "ir/graph.hpp"
#include "stof/cli_util.hpp"

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

namespace stof::cli {

// "2x128" or "2,128" → {2, 128}.
Shape parse_dims(const std::string& text, const std::string& context);

// Help text of --mask (compile, eval, ir).
inline constexpr const char* kMaskHelp =
    "Attention mask SPEC for every attention, or LAYERS=SPEC for attention layers N or N-M (0-5=sliding:64); "
    "repeatable (the LAYERS=SPEC covering a layer are intersected, else the SPECs are); intersected with the mask the "
    "model computes (forms: see stofc mask --help)";

// --max-memory SIZE on `cmd`: sets the memory limit (stof/memory_limit.hpp) while parsing.
void add_max_memory_option(CLI::App* cmd);

// --shape NAME=DIMS arguments → map.
std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& args);

// Tensors from --input NAME=FILE arguments plus, for graph inputs not named
// there, DIR/<name>.npy from `dir` (when not empty).
TensorMap load_inputs(const ir::Graph& g, const std::vector<std::string>& args, const std::string& dir);

// Expected outputs from --expect NAME=FILE and DIR/<name>.npy for each output.
TensorMap load_expected(const ir::Graph& g, const std::vector<std::string>& args, const std::string& dir);

}  // namespace stof::cli
