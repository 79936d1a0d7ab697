// stofc subcommands: each registers its options on the app.
#pragma once

#include <CLI/CLI.hpp>

namespace stof::cli {

void add_compile_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_ir_command(CLI::App& app);
void add_mask_command(CLI::App& app);
void add_tune_worker_command(CLI::App& app);

}  // namespace stof::cli
