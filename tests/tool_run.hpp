// Runs stofc (or a function) in a child process under limits, for the tests of
// hostile inputs: a refusal must be one clear line and an exit code in 1..123,
// within `seconds` and `memory_bytes` of address space.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stof::test {

struct Limits {
    double seconds = 30;                        // wall clock; the child is killed after it
    uint64_t memory_bytes = uint64_t{4} << 30;  // RLIMIT_AS
    uint64_t file_bytes = 0;                    // RLIMIT_FSIZE when nonzero (a full disk)
};

struct ToolResult {
    int rc = -1;  // exit status, or 128 + signal
    bool timed_out = false;
    double seconds = 0;
    std::string out, err;  // stdout, stderr
};

// Runs the stofc binary of this build with `args`.
ToolResult run_stofc(const std::vector<std::string>& args, const Limits& limits = {});
// Runs the stof-run binary of this build with `args`.
ToolResult run_stof_run(const std::vector<std::string>& args, const Limits& limits = {});

// Runs f() in a forked child under `limits`; rc 0 when it returned, 1 when it threw (the
// message in err), 128 + signal when it crashed or was killed.
ToolResult run_limited(const std::function<void()>& f, const Limits& limits = {});

// A fresh empty directory under the build's test_tmp/ named after `name`.
std::string fresh_dir(const std::string& name);
void write_bytes(const std::string& path, const std::string& bytes);

}  // namespace stof::test
