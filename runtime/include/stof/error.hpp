// stof::Error — the one error type of stofc and its runtime.
//
// Every failure the user can cause (bad model, bad flag, bad file, missing GPU)
// is reported by throwing stof::Error with an actionable message; the CLIs
// catch it at main, print one line and exit non-zero. The source location is
// kept for `-v` output and bug reports, not shown by default.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace stof {

class Error : public std::runtime_error {
public:
    Error(std::string message, const char* file, int line) : std::runtime_error(std::move(message)), file_(file), line_(line) {}

    const char* file() const { return file_; }
    int line() const { return line_; }
    std::string where() const { return fmt::format("{}:{}", file_, line_); }

private:
    const char* file_;
    int line_;
};

}  // namespace stof

// STOF_FAIL("input '{}' is missing", name): throw stof::Error with a formatted message.
#define STOF_FAIL(...) throw ::stof::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

// STOF_CHECK(cond, "message {}", args...): throw stof::Error unless cond holds.
#define STOF_CHECK(cond, ...)                \
    do {                                     \
        if (!(cond)) STOF_FAIL(__VA_ARGS__); \
    } while (0)
