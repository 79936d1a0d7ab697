#include "exec/padded_copy.hpp"

#include "stof/cuda_check.hpp"
#include "stof/error.hpp"

namespace stof::exec {

namespace {

// Copies the box `small` between a dense tensor of shape `small` and one of shape
// `big` (to_big: small -> big). Below the last dimension where the shapes differ,
// rows are contiguous in both; one 2-D copy per index of the dimensions before it.
void copy_box(char* big_ptr, const Shape& big, char* small_ptr, const Shape& small, size_t elem, bool to_big,
              cudaStream_t stream) {
    STOF_CHECK(big.size() == small.size(), "padded copy: rank {} vs {}", small.size(), big.size());
    const size_t n = big.size();
    size_t k = n;  // the last differing dimension
    for (size_t d = 0; d < n; ++d) {
        STOF_CHECK(small[d] <= big[d], "padded copy: shape {} does not fit in {}", shape_str(small), shape_str(big));
        if (small[d] != big[d]) k = d;
    }
    const size_t total = static_cast<size_t>(numel(small)) * elem;
    if (total == 0) return;
    if (k == n) {
        if (to_big) STOF_CUDA_CHECK(cudaMemcpyAsync(big_ptr, small_ptr, total, cudaMemcpyDefault, stream));
        else STOF_CUDA_CHECK(cudaMemcpyAsync(small_ptr, big_ptr, total, cudaMemcpyDefault, stream));
        return;
    }
    size_t inner = elem;  // bytes of one index of dimension k (equal in both shapes)
    for (size_t d = k + 1; d < n; ++d) inner *= static_cast<size_t>(small[d]);
    const size_t width = static_cast<size_t>(small[k]) * inner;
    const size_t big_pitch = static_cast<size_t>(big[k]) * inner;
    // Rows: the indices of dimensions [0, k); the last of them (k - 1) is the 2-D copy's height.
    const size_t height = k ? static_cast<size_t>(small[k - 1]) : 1;
    size_t outer = 1;
    for (size_t d = 0; d + 1 < k; ++d) outer *= static_cast<size_t>(small[d]);
    std::vector<int64_t> idx(k ? k - 1 : 0, 0);
    for (size_t o = 0; o < outer; ++o) {
        // Row offsets of index idx (dimensions [0, k-1)) in both layouts.
        size_t big_off = 0, small_off = 0;
        for (size_t d = 0; d < idx.size(); ++d) {
            big_off = big_off * static_cast<size_t>(big[d]) + static_cast<size_t>(idx[d]);
            small_off = small_off * static_cast<size_t>(small[d]) + static_cast<size_t>(idx[d]);
        }
        const size_t big_rows = k ? static_cast<size_t>(big[k - 1]) : 1;
        char* b = big_ptr + big_off * big_rows * big_pitch;
        char* s = small_ptr + small_off * height * width;
        if (to_big) STOF_CUDA_CHECK(cudaMemcpy2DAsync(b, big_pitch, s, width, width, height, cudaMemcpyDefault, stream));
        else STOF_CUDA_CHECK(cudaMemcpy2DAsync(s, width, b, big_pitch, width, height, cudaMemcpyDefault, stream));
        for (size_t d = idx.size(); d-- > 0;) {
            if (++idx[d] < small[d]) break;
            idx[d] = 0;
        }
    }
}

}  // namespace

void pad_into_bucket(void* dst, const Shape& bucket, const void* src, const Shape& actual, size_t elem_bytes,
                     cudaStream_t stream) {
    if (bucket != actual) STOF_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<size_t>(numel(bucket)) * elem_bytes, stream));
    copy_box(static_cast<char*>(dst), bucket, const_cast<char*>(static_cast<const char*>(src)), actual, elem_bytes, true,
             stream);
}

void cut_from_bucket(void* dst, const Shape& actual, const void* src, const Shape& bucket, size_t elem_bytes,
                     cudaStream_t stream) {
    copy_box(const_cast<char*>(static_cast<const char*>(src)), bucket, static_cast<char*>(dst), actual, elem_bytes, false,
             stream);
}

}  // namespace stof::exec
