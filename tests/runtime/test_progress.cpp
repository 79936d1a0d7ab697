// stof::ProgressPhase: silent under a second, announced and timed past it.
#include "catch.hpp"
#include "stof/progress.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <sstream>
#include <thread>

TEST_CASE("progress: a phase over a second is announced and timed, a short one prints nothing", "[cpu][progress]") {
    std::ostringstream out;
    auto previous = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>("progress_test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    spdlog::set_default_logger(logger);
    { stof::ProgressPhase quick("quick work"); }
    {
        stof::ProgressPhase slow("slow work");
        std::this_thread::sleep_for(std::chrono::milliseconds(1300));
    }
    spdlog::set_default_logger(previous);
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("quick work") == std::string::npos);
    CHECK(text.find("slow work ...\n") != std::string::npos);
    CHECK(text.find("slow work: done in 1.") != std::string::npos);
}
