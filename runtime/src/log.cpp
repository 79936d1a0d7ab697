#include "stof/log.hpp"

#include "stof/error.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

namespace stof {

void init_logging(int verbosity) {
    auto logger = spdlog::stderr_color_mt("stof");
    logger->set_pattern("%^%l%$: %v");
    spdlog::set_default_logger(logger);
    spdlog::level::level_enum level = verbosity >= 2 ? spdlog::level::trace
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
