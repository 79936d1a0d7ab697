#include "stof/progress.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace stof {

struct ProgressPhase::State {
    std::string name;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false, announced = false;
    std::thread watcher;
};

namespace {
constexpr auto kFirst = std::chrono::seconds(1);
constexpr auto kEvery = std::chrono::seconds(5);
}  // namespace

ProgressPhase::ProgressPhase(std::string name) : state_(std::make_shared<State>()) {
    state_->name = std::move(name);
    if (!spdlog::should_log(spdlog::level::info)) return;
    try {
        state_->watcher = std::thread([s = state_] {
            std::unique_lock<std::mutex> lock(s->mutex);
            auto next = s->start + kFirst;
            while (!s->cv.wait_until(lock, next, [&] { return s->done; })) {
                const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s->start).count();
                if (!s->announced) spdlog::info("{} ...", s->name);
                else spdlog::info("{}: {:.0f} s", s->name, t);
                s->announced = true;
                next += kEvery;
            }
        });
    } catch (const std::system_error&) {
        // No thread: the phase stays silent.
    }
}

ProgressPhase::~ProgressPhase() {
    if (!state_->watcher.joinable()) return;
    {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->done = true;
    }
    state_->cv.notify_all();
    state_->watcher.join();
    if (state_->announced)
        spdlog::info("{}: done in {:.1f} s", state_->name,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - state_->start).count());
}

}  // namespace stof
