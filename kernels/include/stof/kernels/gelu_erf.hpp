// The exact (erf) GELU in fp32 as the fused GEMM's epilogue and launch_gelu compute it:
//
//   GELU(x) = x · Φ(x),   Φ(x) = (1 + erf(x/√2)) / 2,   Φ(x) = 1 − Φ(−|x|) for x ≥ 0, Φ(−|x|) below.
//
// Φ(−u) = 2^(−u²/(2 ln 2) + h(u)): h is a degree-7 polynomial, a minimax fit of
// log2 Φ(−u) + u²/(2 ln 2) on u ∈ [0, 5.5] (held at 5.5 beyond). One exp2 and 14 instructions
// per element, against about 27 for x/2 · (1 + erff(x/√2)).
//
// Accuracy (fp32, tests/kernels/test_gelu_erf.cpp): within 5e-6 relative of the exact GELU
// for |x| ≤ 5.5, where x/2 · (1 + erff(x/√2)) in fp32 loses up to every digit to the
// cancellation in 1 + erf for x < −3; below −5.5, |result| ≤ 2e-8 · |x| (the exact GELU is
// smaller still); +∞ gives +∞, NaN gives NaN.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace stof::kernels {

__host__ __device__ __forceinline__ float exp2_fast(float p) {
#ifdef __CUDA_ARCH__
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(p));
    return r;
#else
    return std::exp2(p);
#endif
}

__host__ __device__ __forceinline__ float gelu_erf(float x) {
    const float u = fminf(fabsf(x), 5.5f);
    float h = -1.793279580e-06f;
    h = fmaf(h, u, 6.090060197e-05f);
    h = fmaf(h, u, -9.260001243e-04f);
    h = fmaf(h, u, 8.493638597e-03f);
    h = fmaf(h, u, -5.393758416e-02f);
    h = fmaf(h, u, 2.628667057e-01f);
    h = fmaf(h, u, -1.151246667e+00f);
    h = fmaf(h, u, -9.999954700e-01f);
    const float tail = exp2_fast(fmaf(x * x, -7.213475108e-01f, h));  // Φ(−|x|)
    return x * (x >= 0.f ? 1.f - tail : tail);
}

}  // namespace stof::kernels
