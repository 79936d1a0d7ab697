#include "stof/atomic_write.hpp"

#include "stof/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace stof {

namespace {

// Writes all of `parts` to fd in order; errno of the failure, or 0.
int write_all(int fd, const std::vector<std::string_view>& parts) {
    for (const std::string_view bytes : parts) {
        size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return n < 0 ? errno : ENOSPC;
            done += static_cast<size_t>(n);
        }
    }
    return 0;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes, const std::string& what) {
    write_file_atomically(path, std::vector<std::string_view>{bytes}, what);
}

void write_file_atomically(const std::string& path, const std::vector<std::string_view>& parts, const std::string& what) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const std::string dir = target.has_parent_path() ? target.parent_path().string() : std::string(".");
    const std::string named = fmt::format("{}.tmp{}", path, ::getpid());

    // An unnamed file first: killed or failing at any point before the rename, it leaves nothing.
    int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    const bool unnamed = fd >= 0;
    if (!unnamed) fd = ::open(named.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    STOF_CHECK(fd >= 0, "cannot write {} '{}': {}", what, path, std::strerror(errno));
    int err = write_all(fd, parts);
    if (err == 0 && unnamed) {
        const std::string proc = fmt::format("/proc/self/fd/{}", fd);
        ::unlink(named.c_str());
        if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) != 0) err = errno;
    }
    if (::close(fd) != 0 && err == 0) err = errno;
    if (err == 0 && std::rename(named.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
        ::unlink(named.c_str());
        STOF_FAIL("cannot write {} '{}': {}", what, path, std::strerror(err));
    }
}

}  // namespace stof
