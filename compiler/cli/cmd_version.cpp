// stofc version (also stofc -V / --version): the build and the CUDA libraries in use.
#include "cli/commands.hpp"
#include "codegen/nvrtc.hpp"
#include "stof/build_info.hpp"
#include "stof/cuda_versions.hpp"

#include <fmt/format.h>

namespace stof::cli {

std::string version_text() {
    return fmt::format("{}\n{}, NVRTC {}", build_description("stofc"), cuda_runtime_versions(), codegen::nvrtc_version());
}

void add_version_command(CLI::App& app) {
    app.set_version_flag("-V,--version", [] { return version_text(); });
    CLI::App* cmd = app.add_subcommand("version", "Print the version, commit and CUDA library versions");
    cmd->callback([] { fmt::print("{}\n", version_text()); });
}

}  // namespace stof::cli
