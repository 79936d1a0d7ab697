#include "stof/kernels/box_copy.hpp"

#include <algorithm>

namespace stof::kernels {

namespace {

constexpr int kThreads = 256;
// Blocks per entry at most; each thread strides over the rest of its entry's units.
constexpr int64_t kMaxBlocksPerEntry = 1024;

int64_t units(const int64_t* dims, int32_t rank) {
    int64_t n = 1;
    for (int32_t d = 0; d < rank; ++d) n *= dims[d];
    return n;
}

// Entry e with units of type U: thread i of the entry's blocks writes dst units i,
// i + stride, ...; a unit reads src at the same coordinate when it lies inside src_dims
// (box_copy_source).
template <class U> __device__ void copy_entry(const BoxCopyEntry& e) {
    static_assert(sizeof(U) == 1 || sizeof(U) == 2 || sizeof(U) == 4 || sizeof(U) == 8 || sizeof(U) == 16,
                  "a unit is 1, 2, 4, 8 or 16 bytes");
    static_assert(alignof(U) == sizeof(U), "a unit is naturally aligned (unit_bytes-aligned pointers)");
    const U* __restrict__ src = static_cast<const U*>(e.src);
    U* __restrict__ dst = static_cast<U*>(e.dst);
    int64_t total = 1;
    for (int32_t d = 0; d < e.rank; ++d) total *= e.dst_dims[d];
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t from = box_copy_source(e, i);
        U v{};  // zero: the padding
        if (from >= 0) v = src[from];
        dst[i] = v;
    }
}

// Grid: x over the units of the largest entry, y = the entry.
__global__ void __launch_bounds__(kThreads) box_copy_kernel(const __grid_constant__ BoxCopyTable table) {
    const BoxCopyEntry& e = table.entries[blockIdx.y];
    switch (e.unit_bytes) {  // uniform per block
        case 1: copy_entry<uint8_t>(e); break;
        case 2: copy_entry<uint16_t>(e); break;
        case 4: copy_entry<uint32_t>(e); break;
        case 8: copy_entry<uint2>(e); break;
        case 16: copy_entry<uint4>(e); break;
        default: break;  // refused by check_box_copy
    }
}

}  // namespace

const char* check_box_copy(const BoxCopyTable& table) {
    if (table.count < 1 || table.count > kBoxCopyMaxEntries) return "the entry count is not 1..kBoxCopyMaxEntries";
    for (int32_t k = 0; k < table.count; ++k) {
        const BoxCopyEntry& e = table.entries[k];
        if (e.rank < 1 || e.rank > kBoxCopyMaxRank) return "an entry's rank is not 1..kBoxCopyMaxRank";
        const int32_t u = e.unit_bytes;
        if (u != 1 && u != 2 && u != 4 && u != 8 && u != 16) return "an entry's unit is not 1, 2, 4, 8 or 16 bytes";
        for (int32_t d = 0; d < e.rank; ++d)
            if (e.src_dims[d] < 0 || e.dst_dims[d] < 0) return "an entry has a negative dimension";
        if (units(e.dst_dims, e.rank) == 0) continue;
        if (!e.dst || (!e.src && units(e.src_dims, e.rank) > 0)) return "an entry has a null pointer";
        if (reinterpret_cast<uintptr_t>(e.src) % u || reinterpret_cast<uintptr_t>(e.dst) % u)  // null: aligned
            return "an entry's pointer is not aligned to its unit";
    }
    return "";
}

cudaError_t launch_box_copy(const BoxCopyTable& table, cudaStream_t stream) {
    if (*check_box_copy(table)) return cudaErrorInvalidValue;
    int64_t most = 0;
    for (int32_t k = 0; k < table.count; ++k) most = std::max(most, units(table.entries[k].dst_dims, table.entries[k].rank));
    if (most == 0) return cudaSuccess;
    const int64_t blocks = std::min((most + kThreads - 1) / kThreads, kMaxBlocksPerEntry);
    box_copy_kernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(table.count)), kThreads, 0, stream>>>(table);
    return cudaGetLastError();
}

}  // namespace stof::kernels
