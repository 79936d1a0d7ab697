#include "stof/kernels/key_valid.hpp"

namespace stof::kernels {

namespace {

constexpr int kWarpsPerBlock = 8;

// One warp per output word [r, b, w] of the seq / fold keys of residue r: lane l tests
// folded keys 64w + l and 64w + 32 + l, i.e. keys (64w + l) * fold + r and (64w + 32 + l) * fold + r.
template <class T>
__global__ void key_valid_kernel(const T* __restrict__ mask, int32_t batch, int32_t seq, int32_t fold, int32_t words_per_row,
                                 uint64_t* __restrict__ words) {
    const int64_t word = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (word >= static_cast<int64_t>(fold) * batch * words_per_row) return;  // uniform per warp
    const int32_t lane = threadIdx.x % 32, folded_seq = seq / fold;
    const int64_t row_index = word / words_per_row;  // r * batch + b
    const int32_t r = static_cast<int32_t>(row_index / batch);
    const int64_t b = row_index % batch;
    const int32_t j0 = static_cast<int32_t>(word % words_per_row) * 64 + lane;
    const T* row = mask + b * seq + r;
    const bool lo = j0 < folded_seq && row[static_cast<int64_t>(j0) * fold] != T(0);
    const bool hi = j0 + 32 < folded_seq && row[static_cast<int64_t>(j0 + 32) * fold] != T(0);
    const uint32_t lo_bits = __ballot_sync(0xffffffffu, lo);
    const uint32_t hi_bits = __ballot_sync(0xffffffffu, hi);
    if (lane == 0) words[word] = static_cast<uint64_t>(hi_bits) << 32 | lo_bits;
}

template <class T>
cudaError_t launch(const void* mask, int32_t batch, int32_t seq, int32_t fold, uint64_t* words, cudaStream_t stream) {
    const int32_t per_row = (seq / fold + 63) / 64;
    const int64_t total = static_cast<int64_t>(fold) * batch * per_row;
    const int64_t blocks = (total + kWarpsPerBlock - 1) / kWarpsPerBlock;
    if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
    key_valid_kernel<T><<<static_cast<unsigned>(blocks), kWarpsPerBlock * 32, 0, stream>>>(static_cast<const T*>(mask), batch,
                                                                                           seq, fold, per_row, words);
    return cudaGetLastError();
}

}  // namespace

cudaError_t launch_key_valid(const void* mask, int32_t elem_bytes, int32_t batch, int32_t seq, uint64_t* words,
                             cudaStream_t stream, int32_t fold) {
    if (!mask || !words || batch < 1 || seq < 1 || fold < 1 || seq % fold != 0) return cudaErrorInvalidValue;
    switch (elem_bytes) {
        case 1: return launch<uint8_t>(mask, batch, seq, fold, words, stream);
        case 2: return launch<uint16_t>(mask, batch, seq, fold, words, stream);
        case 4: return launch<uint32_t>(mask, batch, seq, fold, words, stream);
        case 8: return launch<uint64_t>(mask, batch, seq, fold, words, stream);
        default: return cudaErrorInvalidValue;
    }
}

}  // namespace stof::kernels
