// RegularFile: a file opened for reading only when it is a regular file.
//
// Every file stofc and stof-run read (models, external data, .npy inputs and
// masks, plans, kernel-cache entries) goes through it: it opens without
// blocking and refuses FIFOs, devices, sockets and directories, so `/dev/zero`
// or a pipe can neither hang a read nor feed it without end; its size is known
// before anything is read, so callers check a header and the size first.
#pragma once

#include <cstdint>
#include <string>

namespace stof {

class RegularFile {
public:
    // Opens `path`; a stof::Error naming `what` ("model file", ".npy file") when it is
    // missing, unreadable or not a regular file.
    RegularFile(const std::string& path, const std::string& what);
    ~RegularFile();
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;

    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }

    // Bytes [offset, offset + length), which must lie inside the file; the length is
    // checked against the memory limit before the buffer is allocated.
    std::string read(uint64_t offset, uint64_t length) const;
    // Reads into dst[0, length) from `offset`.
    void read_into(void* dst, uint64_t offset, uint64_t length) const;
    // The whole file.
    std::string read_all() const { return read(0, size_); }

private:
    std::string path_, what_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// The whole regular file at `path` (RegularFile(path, what).read_all()).
std::string read_regular_file(const std::string& path, const std::string& what);

}  // namespace stof
