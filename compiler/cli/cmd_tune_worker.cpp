// stofc tune-worker: the measuring process the tuner starts (tune/measure.hpp);
// not for direct use, hidden from --help.
#include "cli/commands.hpp"
#include "tune/measure.hpp"

namespace stof::cli {

void add_tune_worker_command(CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("tune-worker", "");
    cmd->group("");
    cmd->callback([] { tune::run_tune_worker(); });
}

}  // namespace stof::cli
