// stof_gemm_swiglu_bench: the fused GEMM + SwiGLU (kernels/gemm, every config) against what a
// plan runs without it: cuBLASLt's fastest of its first 8 heuristic candidates for the [m, 2n]
// product, then a SwiGLU pass over it (16-byte loads and stores: one read of the product, one
// write of d). Random fp16 operands; each fused output checked against cuBLASLt + the pass
// before it is timed; CUDA-event medians of 7 × 20 launches after 5 warm-up launches.
//
//   stof_gemm_swiglu_bench [M,N,K ...]   (N: d's columns; default LLaMA-1.1B's MLP at 4096,
//                                         16384 and 32768 rows)
#include "stof/kernels/gemm_swiglu.hpp"

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void fail(const std::string& what) {
    std::fprintf(stderr, "stof_gemm_swiglu_bench: %s\n", what.c_str());
    std::exit(1);
}
void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) fail(std::string(what) + ": cuBLASLt status " + std::to_string(static_cast<int>(s)));
}

// p[i] uniform in [-scale/2, scale/2) from a hash of i and seed.
__global__ void fill(__half* p, size_t n, uint32_t seed, float scale) {
    for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
        uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        p[i] = __float2half(((h & 0xffffu) / 65535.f - 0.5f) * scale);
    }
}

// d [m, n] from y [m, 2n] whose columns alternate gate, up: 8 outputs a thread.
__global__ void swiglu_pass(const __half* y, __half* d, size_t count8) {
    const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
    if (i >= count8) return;
    const uint4 in[2] = {reinterpret_cast<const uint4*>(y)[2 * i], reinterpret_cast<const uint4*>(y)[2 * i + 1]};
    const auto* pairs = reinterpret_cast<const __half2*>(in);
    alignas(16) __half out[8];
    for (int j = 0; j < 8; ++j) {
        const float2 f = __half22float2(pairs[j]);
        out[j] = __float2half(f.x * f.y / (1.f + __expf(-f.x)));
    }
    reinterpret_cast<uint4*>(d)[i] = *reinterpret_cast<const uint4*>(out);
}

template <class F> float median_us(F launch, cudaStream_t s) {
    cudaEvent_t a, b;
    check(cudaEventCreate(&a), "cudaEventCreate");
    check(cudaEventCreate(&b), "cudaEventCreate");
    for (int i = 0; i < 5; ++i) launch();
    std::vector<float> t;
    for (int r = 0; r < 7; ++r) {
        check(cudaEventRecord(a, s), "cudaEventRecord");
        for (int i = 0; i < 20; ++i) launch();
        check(cudaEventRecord(b, s), "cudaEventRecord");
        check(cudaEventSynchronize(b), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
        t.push_back(ms * 1000.f / 20);
    }
    check(cudaEventDestroy(a), "cudaEventDestroy");
    check(cudaEventDestroy(b), "cudaEventDestroy");
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Buffer {
    __half* p = nullptr;
    explicit Buffer(size_t n) { check(cudaMalloc(&p, n * sizeof(__half)), "cudaMalloc"); }
    ~Buffer() { cudaFree(p); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

void bench(int64_t m, int64_t n, int64_t k, cublasLtHandle_t lt, void* workspace, size_t workspace_bytes, cudaStream_t s) {
    Buffer a(m * k), b(k * 2 * n), y(m * 2 * n), d(m * n), ref(m * n);
    fill<<<1024, 256, 0, s>>>(a.p, m * k, 1, 2.f);
    fill<<<1024, 256, 0, s>>>(b.p, k * 2 * n, 2, 3.4f / std::sqrt(static_cast<float>(k)));
    check(cudaGetLastError(), "fill");
    // Row-major y [m, 2n] = a [m, k] · b [k, 2n] as column-major yᵀ = bᵀ · aᵀ.
    cublasLtMatmulDesc_t op;
    check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    cublasLtMatrixLayout_t lb, la, ly;
    check(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, 2 * n, k, 2 * n), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, k, m, k), "cublasLtMatrixLayoutCreate");
    check(cublasLtMatrixLayoutCreate(&ly, CUDA_R_16F, 2 * n, m, 2 * n), "cublasLtMatrixLayoutCreate");
    cublasLtMatmulPreference_t pref;
    check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                               sizeof workspace_bytes),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t cand[8];
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt, op, lb, la, ly, ly, pref, 8, cand, &found), "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) fail("cuBLASLt has no algorithm for this GEMM");
    const float alpha = 1, beta = 0;
    auto gemm = [&](int c) {
        check(cublasLtMatmul(lt, op, &alpha, b.p, lb, a.p, la, &beta, y.p, ly, y.p, ly, &cand[c].algo, workspace,
                             workspace_bytes, s),
              "cublasLtMatmul");
    };
    float gemm_us = INFINITY;
    int best = 0;
    for (int c = 0; c < found; ++c)
        if (const float t = median_us([&] { gemm(c); }, s); t < gemm_us) gemm_us = t, best = c;
    const size_t count8 = static_cast<size_t>(m * n / 8);
    const unsigned blocks = static_cast<unsigned>((count8 + 255) / 256);
    auto pass = [&] {
        swiglu_pass<<<blocks, 256, 0, s>>>(y.p, ref.p, count8);
        check(cudaGetLastError(), "swiglu_pass");
    };
    gemm(best);
    const float pass_us = median_us(pass, s);
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    std::vector<__half> want(static_cast<size_t>(m * n)), got(want.size());
    check(cudaMemcpy(want.data(), ref.p, want.size() * sizeof(__half), cudaMemcpyDeviceToHost), "cudaMemcpy");
    const double flop = 4.0 * m * n * k, unfused = gemm_us + pass_us;
    std::printf("| %ld × %ld × %ld | cuBLASLt (candidate %d) + pass | %.1f + %.1f = %.1f | %.0f | 1.00× |\n", long(m),
                long(2 * n), long(k), best, gemm_us, pass_us, unfused, flop / gemm_us / 1e6);
    for (int config = 0; config < stof::kernels::kGemmSwigluConfigs; ++config) {
        stof::kernels::GemmSwigluArgs args{stof::kernels::ElemType::f16, m, n, k, a.p, b.p, d.p};
        std::string why;
        const auto fused = stof::kernels::prepare_gemm_swiglu(args, config, s, why);
        if (!fused) {
            std::printf("| | fused, config %d | %s | | |\n", config, why.c_str());
            continue;
        }
        check(cudaMemsetAsync(d.p, 0xff, static_cast<size_t>(m * n) * sizeof(__half), s), "cudaMemsetAsync");
        check(fused->run(s), "gemm_swiglu");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        check(cudaMemcpy(got.data(), d.p, got.size() * sizeof(__half), cudaMemcpyDeviceToHost), "cudaMemcpy");
        double err = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            const double w = __half2float(want[i]), g = __half2float(got[i]), e = std::fabs(w - g) / (1 + std::fabs(w));
            if (!(e <= err)) err = e;  // NaN included
        }
        if (!(err <= 1e-2))
            fail("config " + std::to_string(config) + " differs from cuBLASLt + the pass by " + std::to_string(err));
        const float us = median_us([&] { check(fused->run(s), "gemm_swiglu"); }, s);
        std::printf("| | fused, config %d | %.1f | %.0f | %.2f× |\n", config, us, flop / us / 1e6, unfused / us);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(ly);
    cublasLtMatmulDescDestroy(op);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::array<int64_t, 3>> shapes;
    for (int i = 1; i < argc; ++i) {
        long m = 0, n = 0, k = 0;
        char end = 0;
        if (std::sscanf(argv[i], "%ld,%ld,%ld%c", &m, &n, &k, &end) != 3 || m < 1 || n < 8 || k < 8 || n % 8 || k % 8)
            fail(std::string("'") + argv[i] + "' is not M,N,K (N and K multiples of 8)");
        shapes.push_back({m, n, k});
    }
    if (shapes.empty()) shapes = {{4096, 5632, 2048}, {16384, 5632, 2048}, {32768, 5632, 2048}};
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "no GPU");
    cudaStream_t s;
    check(cudaStreamCreate(&s), "cudaStreamCreate");
    cublasLtHandle_t lt;
    check(cublasLtCreate(&lt), "cublasLtCreate");
    const size_t workspace_bytes = size_t{32} << 20;
    void* workspace = nullptr;
    check(cudaMalloc(&workspace, workspace_bytes), "cudaMalloc");
    std::printf("%s, fp16, µs (CUDA-event medians), TFLOP/s of the [m, 2n] product\n\n", prop.name);
    std::printf("| m × 2n × k | kernel | µs | TFLOP/s | vs unfused |\n|---|---|---|---|---|\n");
    for (const auto& [m, n, k] : shapes) bench(m, n, k, lt, workspace, workspace_bytes, s);
    cudaFree(workspace);
    cublasLtDestroy(lt);
    return 0;
}
