#include "stof/build_info.hpp"

#include "stof/version.hpp"

#include <fmt/format.h>

namespace stof {

std::string build_description(const char* tool) {
    return fmt::format("{} {} (commit {}, {} build)", tool, kVersion, git_commit(), kBuildType);
}

}  // namespace stof
