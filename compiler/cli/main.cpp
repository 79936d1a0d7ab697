// stofc: the stofc compiler's command-line tool.
#include "cli/commands.hpp"
#include "stof/cli_util.hpp"
#include "stof/error.hpp"
#include "stof/log.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>

int main(int argc, char** argv) {
    CLI::App app{"stofc: ahead-of-time compiler for sparse Transformer inference on NVIDIA GPUs"};
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity,
                 "More log output (-v debug, -vv trace), before or after the command; or set "
                 "STOF_LOG");
    app.require_subcommand(1);
    app.fallthrough();  // -v after the command name too
    stof::cli::add_compile_command(app);
    stof::cli::add_eval_command(app);
    stof::cli::add_inspect_command(app);
    stof::cli::add_ir_command(app);
    stof::cli::add_mask_command(app);
    stof::cli::add_tune_worker_command(app);
    stof::cli::add_version_command(app);
    app.parse_complete_callback([&] { stof::init_logging(verbosity); });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : stof::cli::kExitUsage;
    } catch (const stof::Error& e) {
        spdlog::debug("raised at {}", e.where());
        std::fprintf(stderr, "stofc: error: %s\n", stof::cli::printable(e.what(), true).c_str());
        return stof::cli::kExitError;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stofc: internal error: %s\n", stof::cli::printable(e.what(), true).c_str());
        return stof::cli::kExitInternal;
    }
    return 0;
}
