#include "stof/plan_format.hpp"

#include <zlib.h>

namespace stof::plan {

uint32_t checksum(const void* data, size_t size, uint32_t crc) {
    return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

}  // namespace stof::plan
