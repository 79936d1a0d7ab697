#include "stof/kernels/key_valid.hpp"

namespace stof::kernels {

namespace {

constexpr int kWarpsPerBlock = 8;

// One warp per output word: lane l tests keys 64w + l and 64w + 32 + l.
template <class T>
__global__ void key_valid_kernel(const T* __restrict__ mask, int32_t batch, int32_t seq, int32_t words_per_row,
                                 uint64_t* __restrict__ words) {
    const int64_t word = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (word >= static_cast<int64_t>(batch) * words_per_row) return;  // uniform per warp
    const int32_t lane = threadIdx.x % 32;
    const int64_t b = word / words_per_row;
    const int32_t j0 = static_cast<int32_t>(word % words_per_row) * 64 + lane;
    const T* row = mask + b * seq;
    const bool lo = j0 < seq && row[j0] != T(0);
    const bool hi = j0 + 32 < seq && row[j0 + 32] != T(0);
    const uint32_t lo_bits = __ballot_sync(0xffffffffu, lo);
    const uint32_t hi_bits = __ballot_sync(0xffffffffu, hi);
    if (lane == 0) words[word] = static_cast<uint64_t>(hi_bits) << 32 | lo_bits;
}

template <class T> cudaError_t launch(const void* mask, int32_t batch, int32_t seq, uint64_t* words, cudaStream_t stream) {
    const int32_t per_row = (seq + 63) / 64;
    const int64_t total = static_cast<int64_t>(batch) * per_row;
    const int64_t blocks = (total + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
    key_valid_kernel<T><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(static_cast<const T*>(mask), batch,
                                                                                           seq, per_row, words);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_key_valid(const void* mask, int32_t elem_bytes, int32_t batch, int32_t seq, uint64_t* words,
                             cudaStream_t stream) {
    if (!mask || !words || batch < 1 || seq < 1) return cudaErrorInvalidValue;
    switch (elem_bytes) {
        case 1: return launch<uint8_t>(mask, batch, seq, words, stream);
        case 2: return launch<uint16_t>(mask, batch, seq, words, stream);
        case 4: return launch<uint32_t>(mask, batch, seq, words, stream);
        case 8: return launch<uint64_t>(mask, batch, seq, words, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace stof::kernels
