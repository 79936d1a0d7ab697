// A GEMM whose epilogue applies the rotary position embedding (rotate-half form, as LLaMA's)
// to the query and key columns of a merged Q/K/V projection. See kernels/gemm/README.md.
//
//   a    [m, k] row-major          b  [k, n] row-major          d  [m, ldd] row-major
//   x    = a · b (fp32 sums), h = head_dim / 2, p = i % cos_rows
//   d[i, c] = x[i, c] · cos[p, e] − x[i, c + h] · sin[p, e]   c < rot_cols, e = c % head_dim < h
//   d[i, c] = x[i, c] · cos[p, e] + x[i, c − h] · sin[p, e]   c < rot_cols, e ≥ h
//   d[i, c] = x[i, c]                                         rot_cols ≤ c < n
// cos and sin [cos_rows, head_dim] row-major (one row per position; cos_rows = the sequence
// length when every batch has positions 0.., m for a row of its own each); a, b, d, cos and
// sin of one type (fp16 or bf16); the rotation in fp32, d rounded once.
#pragma once

#include "stof/kernels/elem_type.hpp"
#include "stof/kernels/fused_gemm.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace stof::kernels {

struct GemmRotaryArgs {
    ElemType type = ElemType::f16;
    int64_t m = 0, n = 0, k = 0;
    int64_t ldd = 0;       // d's row pitch in elements (>= n)
    int64_t rot_cols = 0;  // columns [0, rot_cols) rotated, in heads of head_dim
    int head_dim = 64;
    int64_t cos_rows = 0;
    const void* a = nullptr;
    const void* b = nullptr;
    const void* cos = nullptr;
    const void* sin = nullptr;
    void* d = nullptr;
};

// The tile configurations:
//   0  128 x 128 tiles, one consumer warpgroup a tile (ping-pong), walked in bands of 4 tiles
//   1  the same in clusters of 2 x 1 tiles
inline constexpr int kGemmRotaryConfigs = 2;

// Why the fused kernel cannot run `a` with `config` on the current device ("" when it can):
// a device other than compute capability 9.0, m, n or k outside [1, 2^31), n, k or ldd not a
// multiple of 8, ldd < n, head_dim not 64 or 128, rot_cols not a multiple of head_dim in
// [0, n], cos_rows < 1, a pointer null or not 16-byte aligned, a config outside
// [0, kGemmRotaryConfigs).
std::string gemm_rotary_refusal(const GemmRotaryArgs& a, int config);
// The kernel prepared for `a` once (as prepare_gemm_swiglu). nullptr, with `why` set, when
// refused or when the preparation fails.
std::unique_ptr<FusedGemm> prepare_gemm_rotary(const GemmRotaryArgs& a, int config, cudaStream_t stream, std::string& why);

}  // namespace stof::kernels
