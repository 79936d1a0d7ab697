#include "tune/measure.hpp"

#include "plan/plan_writer.hpp"
#include "stof/error.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace stof::tune {

namespace fs = std::filesystem;
using nlohmann::json;

// The worker process and the pipes to it.
struct Measurer::Worker {
    pid_t pid = -1;
    int to = -1, from = -1;  // its stdin, its stdout
    std::string pending;     // bytes read past the last reply
    int restarts = 0;

    ~Worker() { stop(); }

    void start(const std::vector<std::string>& command) {
        int in[2], out[2];
        STOF_CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0, "tuning: cannot create pipes: {}",
                   std::strerror(errno));
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in[0], 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        std::vector<char*> argv;
        for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&fa);
        close(in[0]);
        close(out[1]);
        if (rc != 0) {
            close(in[1]);
            close(out[0]);
            pid = -1;
            STOF_FAIL("tuning: cannot start the measuring worker '{}': {}", command.front(), std::strerror(rc));
        }
        to = in[1];
        from = out[0];
        pending.clear();
    }

    // Kills the worker (if running) and reaps it; returns how it ended ("" when it was not running).
    std::string stop() {
        if (to >= 0) close(to);
        if (from >= 0) close(from);
        to = from = -1;
        if (pid < 0) return "";
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        pid = -1;
        if (WIFSIGNALED(status)) return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
        return fmt::format("exited with status {}", WEXITSTATUS(status));
    }

    // Sends one request and waits up to timeout_s for its reply line; throws stof::Error
    // (after killing the worker) when it dies or does not answer in time.
    json call(const json& req, double timeout_s) {
        const std::string line = req.dump() + "\n";
        for (size_t off = 0; off < line.size();) {
            const ssize_t n = write(to, line.data() + off, line.size() - off);
            if (n <= 0) STOF_FAIL("the measuring worker stopped ({})", stop());
            off += static_cast<size_t>(n);
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        for (;;) {
            const size_t nl = pending.find('\n');
            if (nl != std::string::npos) {
                const std::string reply = pending.substr(0, nl);
                pending.erase(0, nl + 1);
                return json::parse(reply);
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) {
                stop();
                STOF_FAIL("no answer within {:.0f} s (the worker was killed)", timeout_s);
            }
            pollfd p{from, POLLIN, 0};
            const int r = poll(&p, 1, static_cast<int>(left.count()));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) continue;
            char buf[4096];
            const ssize_t n = read(from, buf, sizeof buf);
            if (n <= 0) STOF_FAIL("the measuring worker stopped ({})", stop());
            pending.append(buf, static_cast<size_t>(n));
        }
    }
};

Measurer::Measurer(MeasureOptions opt) : worker_(std::make_unique<Worker>()), opt_(std::move(opt)) {
    if (opt_.worker.empty()) opt_.worker = {"/proc/self/exe", "tune-worker"};
    dir_ = opt_.work_dir;
    if (dir_.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "stofc-tune-XXXXXX").string();
        STOF_CHECK(mkdtemp(tmpl.data()) != nullptr, "tuning: cannot create a temporary directory: {}", std::strerror(errno));
        dir_ = tmpl;
        own_dir_ = true;
    }
}

Measurer::~Measurer() {
    worker_->stop();
    if (own_dir_) {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
}

int Measurer::restarts() const { return worker_->restarts; }

nlohmann::json Measurer::call(const nlohmann::json& req, double timeout_s) {
    if (worker_->pid < 0) {
        worker_->start(opt_.worker);
        if (started_) ++worker_->restarts;
        started_ = true;
    }
    return worker_->call(req, timeout_s);
}

const Measurer::Device& Measurer::device() {
    if (have_device_) return device_;
    json r;
    try {
        r = call({{"op", "device"}}, opt_.timeout_s);
    } catch (const Error& e) {
        STOF_FAIL("tuning needs a GPU: the measuring worker failed: {}", e.what());
    }
    STOF_CHECK(r.value("ok", false), "tuning needs a GPU: {}", r.value("error", std::string("no reply")));
    device_.name = r.at("name").get<std::string>();
    device_.sm_count = r.at("sm_count").get<int>();
    device_.cc_major = r.at("cc")[0].get<int>();
    device_.cc_minor = r.at("cc")[1].get<int>();
    device_.driver_version = r.at("driver").get<int>();
    device_.cublaslt_version = r.at("cublaslt").get<size_t>();
    have_device_ = true;
    return device_;
}

Measurement Measurer::measure(const plan::Plan& p, uint64_t seed, const OutputUse& outputs) {
    Measurement m;
    const fs::path plan_path = fs::path(dir_) / ("candidate" + std::to_string(counter_++) + ".plan");
    try {
        plan::write_plan(p, plan_path.string());
        json req = {
            {"op", "measure"}, {"plan", plan_path.string()}, {"seed", seed}, {"reps", opt_.reps}, {"warmup", opt_.warmup}};
        if (outputs.kind == OutputUse::keep) req["keep"] = outputs.key;
        if (outputs.kind == OutputUse::check) req["check"] = outputs.key;
        const json r = call(req, opt_.timeout_s);
        if (!r.value("ok", false)) {
            m.error = r.value("error", std::string("no reply"));
        } else {
            m.ok = true;
            m.median_us = r.at("median_us").get<double>();
            m.spread_us = r.at("spread_us").get<double>();
            m.reps = r.at("reps").get<int>();
            m.load_ms = r.value("load_ms", 0.0);
            m.checked = r.value("checked", false);
            m.mismatch = r.value("mismatch", std::string());
            m.check_ms = r.value("check_ms", 0.0);
        }
    } catch (const std::exception& e) {
        m.ok = false;
        m.error = e.what();
    }
    std::error_code ec;
    fs::remove(plan_path, ec);
    return m;
}

}  // namespace stof::tune
