// The head dims and element types the sparse attention kernels are built for:
// the one list. kernels/attention/CMakeLists.txt reads these two macros and
// generates the kernel instances from them; the launch dispatch and argument
// check (attention.cpp), the kernels' static_asserts, the compiler (which
// attention blocks run on the kernels) and the tests read them here.
// Plain C++ (no CUDA headers): host and device code include it.
#pragma once

#include <cstddef>
#include <string>

#define STOF_ATTENTION_HEAD_DIMS(X) X(32) X(64) X(80) X(96) X(128)
#define STOF_ATTENTION_ELEM_TYPES(X) X(f16) X(bf16)

namespace stof::kernels {

inline constexpr int kAttentionHeadDims[] = {
#define STOF_HEAD_DIM_ITEM(D) D,
    STOF_ATTENTION_HEAD_DIMS(STOF_HEAD_DIM_ITEM)
#undef STOF_HEAD_DIM_ITEM
};

// Whether the kernels are built for head dim D (for static_asserts).
template <int D>
inline constexpr bool kIsAttentionHeadDim =
#define STOF_HEAD_DIM_IS(X) D == X ||
    STOF_ATTENTION_HEAD_DIMS(STOF_HEAD_DIM_IS) false;
#undef STOF_HEAD_DIM_IS

inline constexpr bool is_attention_head_dim(long long d) {
    for (int x : kAttentionHeadDims)
        if (x == d) return true;
    return false;
}

// The head dim of the Hopper kernel's instance (kernels/attention/block_wise_sm90.cuh) that runs
// head dim d, one of kAttentionHeadDims: 64 for d up to 64, 128 for d up to 128 (its tensor maps
// read the columns past d as zeros and store none of them); 0 for any other d.
inline constexpr int sm90_instance_head_dim(long long d) {
    return !is_attention_head_dim(d) || d > 128 ? 0 : d <= 64 ? 64 : 128;
}

// "32, 64, 80, 96 or 128", for messages.
inline std::string attention_head_dims_text() {
    std::string r;
    const size_t n = sizeof(kAttentionHeadDims) / sizeof(kAttentionHeadDims[0]);
    for (size_t i = 0; i < n; ++i) r += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::to_string(kAttentionHeadDims[i]);
    return r;
}

// f.template operator()<D>() for head dim d, which must be one of kAttentionHeadDims.
template <class F> decltype(auto) with_attention_head_dim(int d, F&& f) {
    switch (d) {
#define STOF_HEAD_DIM_CASE(D) \
    case D: return f.template operator()<D>();
        STOF_ATTENTION_HEAD_DIMS(STOF_HEAD_DIM_CASE)
#undef STOF_HEAD_DIM_CASE
    }
    return f.template operator()<kAttentionHeadDims[sizeof(kAttentionHeadDims) / sizeof(kAttentionHeadDims[0]) - 1]>();
}

}  // namespace stof::kernels
