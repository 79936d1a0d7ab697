// Writing a file so that readers see the old file or the whole new one, never a
// part, and no partial file is left behind by a failed write (full disk, quota).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stof {

// Writes `bytes` to `path`: into an unnamed file in path's directory (O_TMPFILE;
// where the file system has none, a named temporary removed on failure) that is
// then renamed over `path`. A stof::Error naming `what` and the reason on failure.
void write_file_atomically(const std::string& path, const std::string& bytes, const std::string& what);
// The same for the concatenation of `parts`, written one after the other.
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts, const std::string& what);

}  // namespace stof
