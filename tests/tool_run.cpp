#include "tool_run.hpp"

#include "test_util.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace stof::test {

namespace {

void apply_limits(const Limits& l) {
    const rlimit as{l.memory_bytes, l.memory_bytes};
    ::setrlimit(RLIMIT_AS, &as);
    if (l.file_bytes > 0) {
        const rlimit fs{l.file_bytes, l.file_bytes};
        ::setrlimit(RLIMIT_FSIZE, &fs);
        ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
    }
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Forks; the child runs `child` with stdout/stderr redirected to files and exits with its result.
ToolResult run_child(const std::function<int()>& child, const Limits& limits) {
    // Not fresh_dir: test processes run in parallel and share this folder; names are per process.
    static int counter = 0;
    const std::filesystem::path dir = std::filesystem::path(binary_dir()) / "test_tmp" / "tool_run";
    std::filesystem::create_directories(dir);
    const std::string base = (dir / (std::to_string(::getpid()) + "_" + std::to_string(counter++))).string();
    const std::string out_path = base + ".out", err_path = base + ".err";
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(o, 1);
        ::dup2(e, 2);
        ::close(o);
        ::close(e);
        ::setpgid(0, 0);
        apply_limits(limits);
        ::_exit(child());
    }
    ToolResult r;
    int status = 0;
    for (;;) {
        const pid_t w = ::waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r.seconds > limits.seconds) {
            r.timed_out = true;
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    std::filesystem::remove(out_path);
    std::filesystem::remove(err_path);
    return r;
}

}  // namespace

namespace {

ToolResult run_binary(const char* path, const std::vector<std::string>& args, const Limits& limits) {
    std::vector<std::string> argv{path};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_child(
        [&] {
            std::vector<char*> p;
            for (std::string& a : argv) p.push_back(a.data());
            p.push_back(nullptr);
            ::execv(p[0], p.data());
            return 127;
        },
        limits);
}

}  // namespace

ToolResult run_stofc(const std::vector<std::string>& args, const Limits& limits) {
    return run_binary(STOF_STOFC_PATH, args, limits);
}

ToolResult run_stof_run(const std::vector<std::string>& args, const Limits& limits) {
    return run_binary(STOF_RUN_PATH, args, limits);
}

ToolResult run_limited(const std::function<void()>& f, const Limits& limits) {
    return run_child(
        [&] {
            try {
                f();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "%s\n", e.what());
                std::fflush(stderr);
                return 1;
            }
            std::fflush(stdout);
            return 0;
        },
        limits);
}

std::string fresh_dir(const std::string& name) {
    const std::filesystem::path dir = std::filesystem::path(binary_dir()) / "test_tmp" / name;
    static std::vector<std::string> made;
    if (std::find(made.begin(), made.end(), name) == made.end()) {
        std::filesystem::remove_all(dir);
        made.push_back(name);
    }
    std::filesystem::create_directories(dir);
    return dir.string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace stof::test
