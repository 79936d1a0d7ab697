#include "stof/log.hpp"

#include "stof/cli_util.hpp"
#include "stof/error.hpp"

#include <spdlog/sinks/ansicolor_sink.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace stof {

namespace {

// Log lines carry names from files: printed escaped, like error messages.
class PrintableSink final : public spdlog::sinks::ansicolor_stderr_sink_mt {
public:
    void log(const spdlog::details::log_msg& msg) override {
        const std::string text = cli::printable(std::string(msg.payload.data(), msg.payload.size()), true);
        spdlog::details::log_msg escaped = msg;
        escaped.payload = spdlog::string_view_t(text.data(), text.size());
        spdlog::sinks::ansicolor_stderr_sink_mt::log(escaped);
    }
};

}  // namespace

void init_logging(int verbosity) {
    auto logger = std::make_shared<spdlog::logger>("stof", std::make_shared<PrintableSink>());
    logger->set_pattern("%^%l%$: %v");
    spdlog::set_default_logger(logger);
    spdlog::level::level_enum level = verbosity >= 2   ? spdlog::level::trace
                                      : verbosity == 1 ? spdlog::level::debug
                                                       : spdlog::level::info;
    if (const char* env = std::getenv("STOF_LOG")) {
        const std::string s = env;
        const spdlog::level::level_enum parsed = spdlog::level::from_str(s);
        STOF_CHECK(parsed != spdlog::level::off || s == "off",
                   "STOF_LOG={} is not a log level (trace, debug, info, warn, error, off)", s);
        level = parsed;
    }
    spdlog::set_level(level);
}

}  // namespace stof
