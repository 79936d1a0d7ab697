#include "stof/memory_limit.hpp"

#include "stof/error.hpp"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>

namespace stof {

namespace {
std::atomic<uint64_t>& limit_store() {
    static std::atomic<uint64_t> limit{physical_memory()};
    return limit;
}
}  // namespace

uint64_t physical_memory() {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return uint64_t{16} << 30;  // unknown: 16 GiB
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

uint64_t memory_limit() { return limit_store().load(std::memory_order_relaxed); }

void set_memory_limit(uint64_t bytes) { limit_store().store(bytes, std::memory_order_relaxed); }

void check_memory(uint64_t bytes, const std::string& what, const std::string& detail) {
    const uint64_t limit = memory_limit();
    STOF_CHECK(bytes <= limit, "{} needs {}{}, more than the memory limit of {} ({})", what, format_bytes(bytes),
               detail.empty() ? "" : " (" + detail + ")", format_bytes(limit),
               limit == physical_memory() ? "the physical memory; --max-memory raises it" : "set by --max-memory");
}

std::string format_bytes(uint64_t bytes) {
    const auto b = static_cast<double>(bytes);
    if (b >= 1e12) return fmt::format("{:.1f} TB", b / 1e12);
    if (b >= 1e9) return fmt::format("{:.1f} GB", b / 1e9);
    if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
    if (b >= 1e3) return fmt::format("{:.1f} KB", b / 1e3);
    return fmt::format("{} B", bytes);
}

uint64_t parse_memory_size(const std::string& text, const std::string& flag) {
    size_t used = 0;
    double v = -1;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::string unit = text.substr(used);
    double scale = 0;
    if (unit.empty() || unit == "B") scale = 1;
    else if (unit == "K" || unit == "KB") scale = 1e3;
    else if (unit == "M" || unit == "MB") scale = 1e6;
    else if (unit == "G" || unit == "GB") scale = 1e9;
    else if (unit == "T" || unit == "TB") scale = 1e12;
    else if (unit == "KiB") scale = 1024.0;
    else if (unit == "MiB") scale = 1024.0 * 1024;
    else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
    else if (unit == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
    STOF_CHECK(used > 0 && scale > 0 && std::isfinite(v) && v > 0 && v * scale < 1.8e19,
               "{} '{}': expected a positive size like 16G, 512M or 1.5GiB", flag, text);
    return static_cast<uint64_t>(v * scale);
}

}  // namespace stof
