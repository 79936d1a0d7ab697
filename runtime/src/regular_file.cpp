#include "stof/regular_file.hpp"

#include "stof/error.hpp"
#include "stof/memory_limit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stof {

RegularFile::RegularFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    STOF_CHECK(fd_ >= 0, "cannot open {} '{}': {}", what, path, errno == ENOENT ? "it does not exist" : std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        const bool dir = S_ISDIR(st.st_mode);
        ::close(fd_);
        fd_ = -1;
        STOF_FAIL("{} '{}' is not a regular file ({}); stofc reads only regular files", what, path,
                  dir ? "a directory" : "a FIFO, device or socket");
    }
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
    size_ = static_cast<uint64_t>(st.st_size);
}

RegularFile::~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
}

void RegularFile::read_into(void* dst, uint64_t offset, uint64_t length) const {
    STOF_CHECK(offset <= size_ && length <= size_ - offset, "{} '{}' is too short ({} bytes, needs {} at byte {})", what_,
               path_, size_, length, offset);
    auto* out = static_cast<char*>(dst);
    uint64_t done = 0;
    while (done < length) {
        const ssize_t got = ::pread(fd_, out + done, static_cast<size_t>(length - done), static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        STOF_CHECK(got > 0, "cannot read {} '{}' ({} of {} bytes read{}{})", what_, path_, done, length, got < 0 ? ": " : "",
                   got < 0 ? std::strerror(errno) : "");
        done += static_cast<uint64_t>(got);
    }
}

std::string RegularFile::read(uint64_t offset, uint64_t length) const {
    STOF_CHECK(offset <= size_ && length <= size_ - offset, "{} '{}' is too short ({} bytes, needs {} at byte {})", what_,
               path_, size_, length, offset);
    check_memory(length, fmt::format("reading {} '{}'", what_, path_));
    std::string bytes(static_cast<size_t>(length), '\0');
    read_into(bytes.data(), offset, length);
    return bytes;
}

std::string read_regular_file(const std::string& path, const std::string& what) { return RegularFile(path, what).read_all(); }

}  // namespace stof
