// stof_fused_gemm_bench: the fused GEMMs of kernels/gemm (every config) against what a plan
// runs without them: cuBLASLt's fastest of its first 8 heuristic candidates for the product,
// then a pass over it (16-byte loads and stores):
//   swiglu:M,N,K            the [M, 2N] product of a merged gate|up weight, then the SwiGLU
//                           gate into [M, N] (gemm_swiglu)
//   rotary:M,N,K,R,D,S      the [M, N] product of a merged Q/K/V weight, then the rotary
//                           embedding of its first R columns in heads of D, positions i % S
//                           (gemm_rotary; R = 0: the plain product against cuBLASLt alone)
// Random fp16 operands; each fused output checked against the unfused one before it is timed;
// CUDA-event medians of 7 × 20 launches after 5 warm-up launches. Default: LLaMA-1.1B's MLP
// at 4096, 16384 and 32768 rows and its Q/K/V projection at 4096 and 32768 rows.
#include "stof/kernels/gemm_rotary.hpp"
#include "stof/kernels/gemm_swiglu.hpp"

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

void fail(const std::string& what) {
    std::fprintf(stderr, "stof_fused_gemm_bench: %s\n", what.c_str());
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

// cos and sin of angle (i · 0.37 + d · 0.11) for element (i, d) of [rows, dim] tables.
__global__ void fill_angles(__half* cosv, __half* sinv, int64_t rows, int dim) {
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < rows * dim; i += int64_t{gridDim.x} * blockDim.x) {
        const float w = static_cast<float>(i / dim) * 0.37f + static_cast<float>(i % dim) * 0.11f;
        cosv[i] = __float2half(cosf(w));
        sinv[i] = __float2half(sinf(w));
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

// The first r columns of y [m, n] rotated into d [m, n] (rotate-half in heads of dim, position
// i % seq), 8 columns a thread; the other columns of d are left alone.
__global__ void rotary_pass(const __half* y, __half* d, int64_t m, int64_t n, int64_t r, int dim, int64_t seq,
                            const __half* cosv, const __half* sinv) {
    const int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x, per_row = r / 8;
    if (t >= m * per_row) return;
    const int64_t i = t / per_row, c = t % per_row * 8;
    const int e = static_cast<int>(c % dim), half = dim / 2;
    const bool first = e < half;
    alignas(16) __half x[8], u[8], cs[8], sn[8], out[8];
    *reinterpret_cast<uint4*>(x) = *reinterpret_cast<const uint4*>(y + i * n + c);
    *reinterpret_cast<uint4*>(u) = *reinterpret_cast<const uint4*>(y + i * n + c + (first ? half : -half));
    *reinterpret_cast<uint4*>(cs) = *reinterpret_cast<const uint4*>(cosv + i % seq * dim + e);
    *reinterpret_cast<uint4*>(sn) = *reinterpret_cast<const uint4*>(sinv + i % seq * dim + e);
    for (int j = 0; j < 8; ++j) {
        const float v = __half2float(u[j]) * __half2float(sn[j]);
        out[j] = __float2half(__half2float(x[j]) * __half2float(cs[j]) + (first ? -v : v));
    }
    *reinterpret_cast<uint4*>(d + i * n + c) = *reinterpret_cast<const uint4*>(out);
}

float median_us(const std::function<void()>& launch, cudaStream_t s) {
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
    size_t n = 0;
    explicit Buffer(size_t count) : n(count) { check(cudaMalloc(&p, n * sizeof(__half)), "cudaMalloc"); }
    ~Buffer() { cudaFree(p); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    std::vector<__half> host() const {
        std::vector<__half> h(n);
        check(cudaMemcpy(h.data(), p, n * sizeof(__half), cudaMemcpyDeviceToHost), "cudaMemcpy");
        return h;
    }
};

struct Env {
    cublasLtHandle_t lt = nullptr;
    void* workspace = nullptr;
    size_t workspace_bytes = size_t{32} << 20;
    cudaStream_t s = nullptr;
};

// Row-major y [m, n] = a [m, k] · b [k, n] by cuBLASLt (as column-major yᵀ = bᵀ · aᵀ), at the
// fastest of its first 8 heuristic candidates; run() enqueues it, us its time.
class LtGemm {
public:
    LtGemm(const Env& env, const Buffer& a, const Buffer& b, Buffer& y, int64_t m, int64_t n, int64_t k) : env_(env) {
        check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
        check(cublasLtMatrixLayoutCreate(&lb_, CUDA_R_16F, n, k, n), "cublasLtMatrixLayoutCreate");
        check(cublasLtMatrixLayoutCreate(&la_, CUDA_R_16F, k, m, k), "cublasLtMatrixLayoutCreate");
        check(cublasLtMatrixLayoutCreate(&ly_, CUDA_R_16F, n, m, n), "cublasLtMatrixLayoutCreate");
        cublasLtMatmulPreference_t pref;
        check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
        check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &env.workspace_bytes,
                                                   sizeof env.workspace_bytes),
              "cublasLtMatmulPreferenceSetAttribute");
        cublasLtMatmulHeuristicResult_t cand[8];
        int found = 0;
        check(cublasLtMatmulAlgoGetHeuristic(env.lt, op_, lb_, la_, ly_, ly_, pref, 8, cand, &found),
              "cublasLtMatmulAlgoGetHeuristic");
        check(cublasLtMatmulPreferenceDestroy(pref), "cublasLtMatmulPreferenceDestroy");
        if (found == 0) fail("cuBLASLt has no algorithm for this GEMM");
        a_ = a.p, b_ = b.p, y_ = y.p;
        for (int c = 0; c < found; ++c) {
            algo_ = cand[c].algo;
            if (const float t = median_us([&] { run(); }, env.s); t < us) us = t, best = c;
        }
        algo_ = cand[best].algo;
    }
    ~LtGemm() {
        cublasLtMatrixLayoutDestroy(lb_);
        cublasLtMatrixLayoutDestroy(la_);
        cublasLtMatrixLayoutDestroy(ly_);
        cublasLtMatmulDescDestroy(op_);
    }
    LtGemm(const LtGemm&) = delete;
    LtGemm& operator=(const LtGemm&) = delete;
    void run() const {
        const float alpha = 1, beta = 0;
        check(cublasLtMatmul(env_.lt, op_, &alpha, b_, lb_, a_, la_, &beta, y_, ly_, y_, ly_, &algo_, env_.workspace,
                             env_.workspace_bytes, env_.s),
              "cublasLtMatmul");
    }
    float us = INFINITY;
    int best = 0;

private:
    const Env& env_;
    cublasLtMatmulDesc_t op_ = nullptr;
    cublasLtMatrixLayout_t lb_ = nullptr, la_ = nullptr, ly_ = nullptr;
    cublasLtMatmulAlgo_t algo_{};
    const __half *a_ = nullptr, *b_ = nullptr;
    __half* y_ = nullptr;
};

// The largest |want − got| / (1 + |want|) (NaN: infinite).
double max_error(const std::vector<__half>& want, const std::vector<__half>& got) {
    double err = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        const double w = __half2float(want[i]), g = __half2float(got[i]), e = std::fabs(w - g) / (1 + std::fabs(w));
        if (!(e <= err)) err = std::isnan(e) ? INFINITY : e;
    }
    return err;
}

// One table row per fused config: prepare(config) → the kernel (or nullptr and why), its
// output d poisoned, run once and checked against `want`, then timed.
void fused_rows(const Env& env, int configs,
                const std::function<std::unique_ptr<stof::kernels::FusedGemm>(int, std::string&)>& prepare, Buffer& d,
                const std::vector<__half>& want, double flop, double unfused_us) {
    for (int config = 0; config < configs; ++config) {
        std::string why;
        const std::unique_ptr<stof::kernels::FusedGemm> fused = prepare(config, why);
        if (!fused) {
            std::printf("| | fused, config %d | %s | | |\n", config, why.c_str());
            continue;
        }
        check(cudaMemsetAsync(d.p, 0xff, d.n * sizeof(__half), env.s), "cudaMemsetAsync");
        check(fused->run(env.s), "the fused GEMM");
        check(cudaStreamSynchronize(env.s), "cudaStreamSynchronize");
        const double err = max_error(want, d.host());
        if (!(err <= 1e-2))
            fail("config " + std::to_string(config) + " differs from the unfused result by " + std::to_string(err));
        const float us = median_us([&] { check(fused->run(env.s), "the fused GEMM"); }, env.s);
        std::printf("| | fused, config %d | %.1f | %.0f | %.2f× |\n", config, us, flop / us / 1e6, unfused_us / us);
    }
}

void bench_swiglu(const Env& env, int64_t m, int64_t n, int64_t k) {
    Buffer a(m * k), b(k * 2 * n), y(m * 2 * n), d(m * n), ref(m * n);
    fill<<<1024, 256, 0, env.s>>>(a.p, a.n, 1, 2.f);
    fill<<<1024, 256, 0, env.s>>>(b.p, b.n, 2, 3.4f / std::sqrt(static_cast<float>(k)));
    check(cudaGetLastError(), "fill");
    const LtGemm gemm(env, a, b, y, m, 2 * n, k);
    const size_t count8 = static_cast<size_t>(m * n / 8);
    const unsigned blocks = static_cast<unsigned>((count8 + 255) / 256);
    auto pass = [&] {
        swiglu_pass<<<blocks, 256, 0, env.s>>>(y.p, ref.p, count8);
        check(cudaGetLastError(), "swiglu_pass");
    };
    gemm.run();
    const float pass_us = median_us(pass, env.s);
    check(cudaStreamSynchronize(env.s), "cudaStreamSynchronize");
    const double flop = 4.0 * m * n * k, unfused = gemm.us + pass_us;
    std::printf("| SwiGLU %ld × %ld × %ld | cuBLASLt (candidate %d) + pass | %.1f + %.1f = %.1f | %.0f | 1.00× |\n", long(m),
                long(2 * n), long(k), gemm.best, gemm.us, pass_us, unfused, flop / gemm.us / 1e6);
    stof::kernels::GemmSwigluArgs args{stof::kernels::ElemType::f16, m, n, k, a.p, b.p, d.p};
    fused_rows(
        env, stof::kernels::kGemmSwigluConfigs,
        [&](int config, std::string& why) { return stof::kernels::prepare_gemm_swiglu(args, config, env.s, why); }, d,
        ref.host(), flop, unfused);
}

void bench_rotary(const Env& env, int64_t m, int64_t n, int64_t k, int64_t r, int dim, int64_t seq) {
    Buffer a(m * k), b(k * n), y(m * n), d(m * n), cosv(seq * dim), sinv(seq * dim);
    fill<<<1024, 256, 0, env.s>>>(a.p, a.n, 3, 2.f);
    fill<<<1024, 256, 0, env.s>>>(b.p, b.n, 4, 3.4f / std::sqrt(static_cast<float>(k)));
    fill_angles<<<1024, 256, 0, env.s>>>(cosv.p, sinv.p, seq, dim);
    check(cudaGetLastError(), "fill");
    const LtGemm gemm(env, a, b, y, m, n, k);
    const int64_t threads = m * (r / 8);
    const unsigned blocks = static_cast<unsigned>((threads + 255) / 256);
    auto pass = [&] {
        if (blocks == 0) return;  // nothing rotated: the plain product
        rotary_pass<<<blocks, 256, 0, env.s>>>(y.p, d.p, m, n, r, dim, seq, cosv.p, sinv.p);
        check(cudaGetLastError(), "rotary_pass");
    };
    // The unfused result: y, its first r columns rotated.
    gemm.run();
    check(cudaMemcpyAsync(d.p, y.p, d.n * sizeof(__half), cudaMemcpyDeviceToDevice, env.s), "cudaMemcpyAsync");
    pass();
    check(cudaStreamSynchronize(env.s), "cudaStreamSynchronize");
    const std::vector<__half> want = d.host();
    const float pass_us = r > 0 ? median_us(pass, env.s) : 0.f;
    const double flop = 2.0 * m * n * k, unfused = gemm.us + pass_us;
    std::printf(
        "| rotary %ld × %ld × %ld (%ld rotated, heads of %d) | cuBLASLt (candidate %d) + pass | %.1f + %.1f = %.1f | "
        "%.0f | 1.00× |\n",
        long(m), long(n), long(k), long(r), dim, gemm.best, gemm.us, pass_us, unfused, flop / gemm.us / 1e6);
    stof::kernels::GemmRotaryArgs args;
    args.type = stof::kernels::ElemType::f16;
    args.m = m, args.n = n, args.k = k, args.ldd = n, args.rot_cols = r, args.head_dim = dim, args.cos_rows = seq;
    args.a = a.p, args.b = b.p, args.cos = cosv.p, args.sin = sinv.p, args.d = d.p;
    fused_rows(
        env, stof::kernels::kGemmRotaryConfigs,
        [&](int config, std::string& why) { return stof::kernels::prepare_gemm_rotary(args, config, env.s, why); }, d, want,
        flop, unfused);
}

}  // namespace

// A case of the command line: kind 's' (swiglu: m, n, k) or 'r' (rotary: m, n, k, r, dim, seq).
struct Case {
    char kind = 0;
    long m = 0, n = 0, k = 0, r = 0, dim = 0, seq = 0;
};

Case parse(const std::string& c) {
    Case x;
    char end = 0;
    const auto sizes_ok = [&] { return x.m >= 1 && x.n >= 8 && x.k >= 8 && x.n % 8 == 0 && x.k % 8 == 0; };
    if (std::sscanf(c.c_str(), "swiglu:%ld,%ld,%ld%c", &x.m, &x.n, &x.k, &end) == 3 && sizes_ok()) x.kind = 's';
    else if (std::sscanf(c.c_str(), "rotary:%ld,%ld,%ld,%ld,%ld,%ld%c", &x.m, &x.n, &x.k, &x.r, &x.dim, &x.seq, &end) == 6 &&
             sizes_ok() && (x.dim == 64 || x.dim == 128) && x.r >= 0 && x.r <= x.n && x.r % x.dim == 0 && x.seq >= 1)
        x.kind = 'r';
    else
        fail("'" + c +
             "' is neither swiglu:M,N,K nor rotary:M,N,K,R,D,S (N, K multiples of 8; D 64 or 128; R a multiple of D up to N)");
    return x;
}

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty())
        args = {"swiglu:4096,5632,2048", "swiglu:16384,5632,2048", "swiglu:32768,5632,2048",
                "rotary:4096,2560,2048,2304,64,4096", "rotary:32768,2560,2048,2304,64,2048"};
    std::vector<Case> cases;
    for (const std::string& a : args) cases.push_back(parse(a));
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "no GPU");
    Env env;
    check(cudaStreamCreate(&env.s), "cudaStreamCreate");
    check(cublasLtCreate(&env.lt), "cublasLtCreate");
    check(cudaMalloc(&env.workspace, env.workspace_bytes), "cudaMalloc");
    std::printf("%s, fp16, µs (CUDA-event medians), TFLOP/s of the product\n\n", prop.name);
    std::printf("| GEMM m × n × k | kernel | µs | TFLOP/s | vs unfused |\n|---|---|---|---|---|\n");
    for (const Case& c : cases) {
        if (c.kind == 's') bench_swiglu(env, c.m, c.n, c.k);
        else bench_rotary(env, c.m, c.n, c.k, c.r, static_cast<int>(c.dim), c.seq);
    }
    check(cudaFree(env.workspace), "cudaFree");
    check(cublasLtDestroy(env.lt), "cublasLtDestroy");
    return 0;
}
