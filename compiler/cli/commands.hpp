// stofc subcommands: each registers its options on the app.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace stof::cli {

void add_compile_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_ir_command(CLI::App& app);
void add_mask_command(CLI::App& app);
void add_tune_worker_command(CLI::App& app);
// `version`, and the -V / --version flag.
void add_version_command(CLI::App& app);
std::string version_text();

}  // namespace stof::cli
