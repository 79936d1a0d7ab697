// What this build of stofc is: version, commit and build type, for `--version`.
#pragma once

#include <string>

namespace stof {

// The checkout's commit at build time ("77398c2d0f1e", "-dirty" appended when
// the tree had changes), or "unknown" outside a git checkout.
const char* git_commit();

// "TOOL 0.1.0 (commit 77398c2d0f1e, RelWithDebInfo build)".
std::string build_description(const char* tool);

}  // namespace stof
