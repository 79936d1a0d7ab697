// 16-bit test data for the fused GEMM kernels and the check of their outputs against a
// double-precision reference.
#pragma once

#include "catch.hpp"
#include "gpu_util.hpp"
#include "stof/dtype.hpp"
#include "stof/kernels/elem_type.hpp"
#include "stof/kernels/fused_gemm.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace stof::test {

inline uint16_t to_bits(kernels::ElemType t, float v) { return t == kernels::ElemType::bf16 ? f32_to_bf16(v) : f32_to_f16(v); }
inline double from_bits(kernels::ElemType t, uint16_t b) {
    return t == kernels::ElemType::bf16 ? bf16_to_f32(b) : f16_to_f32(b);
}

// n values uniform in [-scale, scale], rounded to t.
inline std::vector<uint16_t> random_bits(kernels::ElemType t, size_t n, double scale, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-scale, scale);
    std::vector<uint16_t> v(n);
    for (uint16_t& x : v) x = to_bits(t, static_cast<float>(u(rng)));
    return v;
}

// Every element of `got` finite and within the output type's rounding (plus fp32 summation
// error, and `atol`) of `want`; the error's norm within a fraction of the reference's.
inline void check_close(kernels::ElemType t, const std::vector<uint16_t>& got, const std::vector<double>& want, double atol) {
    const bool bf16 = t == kernels::ElemType::bf16;
    const double rel = bf16 ? 1.6e-2 : 2e-3;  // a few of the type's half-ulps
    size_t bad = 0, first = 0;
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double g = from_bits(t, got[i]);
        const bool ok = std::isfinite(g) && std::fabs(g - want[i]) <= rel * std::fabs(want[i]) + atol;
        if (!ok && bad++ == 0) first = i;
        if (std::isfinite(g)) err2 += (g - want[i]) * (g - want[i]);
        ref2 += want[i] * want[i];
    }
    INFO("first bad element " << first << ": " << from_bits(t, got[first]) << " against " << want[first]);
    CHECK(bad == 0);
    CHECK(std::sqrt(err2) <= (bf16 ? 4e-3 : 5e-4) * std::sqrt(ref2));
}

// Twice through the prepared kernel `k` (its staging and workspace reused), `d` (want.size()
// elements of t) poisoned with NaN before each run, then checked as check_close does.
inline void check_runs(const kernels::FusedGemm& k, void* d, kernels::ElemType t, const std::vector<double>& want, double atol) {
    for (int run = 0; run < 2; ++run) {
        INFO("run " << run);
        CUDA_REQUIRE(cudaMemset(d, 0xff, want.size() * 2));
        CUDA_REQUIRE(k.run(nullptr));
        CUDA_REQUIRE(cudaDeviceSynchronize());
        check_close(t, download<uint16_t>(d, want.size()), want, atol);
    }
}

}  // namespace stof::test
