// A GEMM whose epilogue is the SwiGLU gate of a gated feed-forward block (LLaMA's MLP), over
// gate and up weights whose columns alternate. See kernels/gemm/README.md.
//
//   a  [m, k] row-major (k contiguous)      b  [k, 2n] row-major: column 2j is the gate's
//   d  [m, n] row-major                     column j, column 2j + 1 the up projection's
//   g = Σ_l a[i, l] · b[l, 2j],  u = Σ_l a[i, l] · b[l, 2j + 1]
//   d[i, j] = silu(g) · u,  silu(g) = g / (1 + e^(−g))
// a, b and d of one type (fp16 or bf16); products summed in fp32, the gate in fp32, d
// rounded once. interleave_gate_up puts a [k, n] gate and a [k, n] up weight in that order.
#pragma once

#include "stof/kernels/elem_type.hpp"
#include "stof/kernels/fused_gemm.hpp"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

namespace stof::kernels {

struct GemmSwigluArgs {
    ElemType type = ElemType::f16;
    int64_t m = 0, n = 0, k = 0;  // n: d's columns (b has 2n)
    const void* a = nullptr;
    const void* b = nullptr;
    void* d = nullptr;
};

// The tile configurations (a plan's GemmStep::algo for these steps):
//   0  128 x 128 tiles of b's columns (64 of d's), one consumer warpgroup a tile (ping-pong),
//      walked in bands of 4 tiles
//   1  the same in clusters of 2 x 1 tiles (b's tile loaded once for both)
inline constexpr int kGemmSwigluConfigs = 2;

// Why the fused kernel cannot run `a` with `config` on the current device ("" when it can):
// a device other than compute capability 9.0, m, 2n or k outside [1, 2^31), n or k not a
// multiple of 8, a pointer not 16-byte aligned, a config outside [0, kGemmSwigluConfigs).
std::string gemm_swiglu_refusal(const GemmSwigluArgs& a, int config);
// The kernel prepared for `a` once (its tensor maps built for these pointers and sizes, a
// workspace of its own where it needs one, initialised on `stream`, synchronised before
// returning). nullptr, with `why` set, when refused or when the preparation fails.
std::unique_ptr<FusedGemm> prepare_gemm_swiglu(const GemmSwigluArgs& a, int config, cudaStream_t stream, std::string& why);

// out [k, 2n] = gate [k, n] and up [k, n] with their columns alternating (out[:, 2j] = gate[:, j],
// out[:, 2j + 1] = up[:, j]); gate's and up's rows `ld` elements apart (n when each is a
// matrix of its own, 2n for the halves of one [k, 2n] matrix), out's 2n; elements of
// `elem_bytes` bytes, host memory.
inline void interleave_gate_up(const void* gate, const void* up, int64_t ld, void* out, int64_t k, int64_t n, int elem_bytes) {
    const auto* g = static_cast<const unsigned char*>(gate);
    const auto* u = static_cast<const unsigned char*>(up);
    auto* o = static_cast<unsigned char*>(out);
    const auto es = static_cast<size_t>(elem_bytes);
    for (int64_t r = 0; r < k; ++r)
        for (int64_t j = 0; j < n; ++j) {
            const size_t src = static_cast<size_t>(r * ld + j) * es, dst = static_cast<size_t>(r * 2 * n + 2 * j) * es;
            std::memcpy(o + dst, g + src, es);
            std::memcpy(o + dst + es, u + src, es);
        }
}

}  // namespace stof::kernels
