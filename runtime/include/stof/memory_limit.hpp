// The memory limit: the most host memory one stofc or stof-run process plans to
// use. Every large allocation whose size comes from a file or a flag (tensors,
// .npy data, whole-file reads, the up-front estimates of compile and eval) is
// checked against it first, so a request beyond it is refused with the figure
// instead of ending in std::bad_alloc. Default: the machine's physical memory.
#pragma once

#include <cstdint>
#include <string>

namespace stof {

uint64_t memory_limit();
void set_memory_limit(uint64_t bytes);
// The machine's physical memory in bytes (the default limit).
uint64_t physical_memory();

// A stof::Error "<what> needs <bytes> (<detail>), more than the memory limit of <limit> ..."
// when bytes > memory_limit().
void check_memory(uint64_t bytes, const std::string& what, const std::string& detail = "");

// "1.5 GB", "320 MB", "12 KB", "100 B" (decimal units).
std::string format_bytes(uint64_t bytes);

// "16G", "512M", "1.5G", "300000000" (bytes; K, M, G, T are decimal, KiB/MiB/GiB/TiB binary) →
// bytes; a stof::Error naming `flag` otherwise.
uint64_t parse_memory_size(const std::string& text, const std::string& flag);

}  // namespace stof
