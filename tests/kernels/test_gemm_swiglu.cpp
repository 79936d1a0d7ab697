// The GEMM + SwiGLU kernel (stof/kernels/gemm_swiglu.hpp) against a double-precision
// reference on fresh random data, outputs poisoned first; the weight layout it reads.
#include "catch.hpp"
#include "gpu_util.hpp"
#include "half_check.hpp"
#include "test_rng.hpp"
#include "stof/dtype.hpp"
#include "stof/kernels/gemm_swiglu.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace stof;
using kernels::ElemType;
using test::from_bits;
using test::random_bits;

TEST_CASE("interleave_gate_up alternates the gate's and the up projection's columns", "[cpu][kernels]") {
    const std::vector<uint16_t> gate = {1, 2, 3, 4, 5, 6}, up = {11, 12, 13, 14, 15, 16};  // [2, 3] each
    std::vector<uint16_t> out(12, 0);
    kernels::interleave_gate_up(gate.data(), up.data(), 3, out.data(), 2, 3, 2);
    CHECK(out == std::vector<uint16_t>{1, 11, 2, 12, 3, 13, 4, 14, 5, 15, 6, 16});
    // The two halves of one [2, 6] matrix: rows 6 apart.
    const std::vector<uint16_t> both = {1, 2, 3, 11, 12, 13, 4, 5, 6, 14, 15, 16};
    std::vector<uint16_t> out2(12, 0);
    kernels::interleave_gate_up(both.data(), both.data() + 3, 6, out2.data(), 2, 3, 2);
    CHECK(out2 == out);
}

TEST_CASE("gemm_swiglu refuses what the kernel cannot run, naming why", "[cpu][kernels]") {
    alignas(16) static uint16_t buf[64];
    kernels::GemmSwigluArgs a;
    a.m = 4, a.n = 8, a.k = 8;
    a.a = a.b = buf;
    a.d = buf;
    CHECK_THAT(kernels::gemm_swiglu_refusal(a, kernels::kGemmSwigluConfigs), Catch::Matchers::ContainsSubstring("config 2"));
    a.n = 12;
    CHECK_THAT(kernels::gemm_swiglu_refusal(a, 0), Catch::Matchers::ContainsSubstring("multiples of 8"));
    a.n = 8, a.m = 0;
    CHECK_THAT(kernels::gemm_swiglu_refusal(a, 0), Catch::Matchers::ContainsSubstring("[1, 2^31)"));
    a.m = 4, a.d = nullptr;
    CHECK_THAT(kernels::gemm_swiglu_refusal(a, 0), Catch::Matchers::ContainsSubstring("null"));
    a.d = buf + 1;
    CHECK_THAT(kernels::gemm_swiglu_refusal(a, 0), Catch::Matchers::ContainsSubstring("16-byte aligned"));
}

TEST_CASE("gemm_swiglu computes silu(A·Bg) · A·Bu in both types, tails in m, n and k", "[gpu][kernels]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    std::mt19937_64 rng = test::make_rng();
    struct Size {
        int64_t m, n, k;
    };
    for (const ElemType t : {ElemType::f16, ElemType::bf16})
        for (const Size z : {Size{1, 8, 8}, Size{300, 136, 200}, Size{1000, 520, 776}, Size{257, 1024, 2048}}) {
            INFO((t == ElemType::bf16 ? "bf16" : "f16") << " m=" << z.m << " n=" << z.n << " k=" << z.k);
            const std::vector<uint16_t> ha = random_bits(t, static_cast<size_t>(z.m * z.k), 1.0, rng);
            const std::vector<uint16_t> hg = random_bits(t, static_cast<size_t>(z.k * z.n), 3.0 / std::sqrt(z.k), rng);
            const std::vector<uint16_t> hu = random_bits(t, static_cast<size_t>(z.k * z.n), 3.0 / std::sqrt(z.k), rng);
            std::vector<uint16_t> hb(hg.size() * 2);
            kernels::interleave_gate_up(hg.data(), hu.data(), z.n, hb.data(), z.k, z.n, 2);
            std::vector<double> want(static_cast<size_t>(z.m * z.n));
            for (int64_t i = 0; i < z.m; ++i)
                for (int64_t j = 0; j < z.n; ++j) {
                    double g = 0, u = 0;
                    for (int64_t l = 0; l < z.k; ++l) {
                        const double x = from_bits(t, ha[static_cast<size_t>(i * z.k + l)]);
                        g += x * from_bits(t, hg[static_cast<size_t>(l * z.n + j)]);
                        u += x * from_bits(t, hu[static_cast<size_t>(l * z.n + j)]);
                    }
                    want[static_cast<size_t>(i * z.n + j)] = g / (1.0 + std::exp(-g)) * u;
                }
            test::DeviceBuffer da(ha.size() * 2), db(hb.size() * 2), dd(want.size() * 2);
            test::upload(da, ha);
            test::upload(db, hb);
            kernels::GemmSwigluArgs a;
            a.type = t;
            a.m = z.m, a.n = z.n, a.k = z.k;
            a.a = da.ptr, a.b = db.ptr, a.d = dd.ptr;
            const std::string refused = kernels::gemm_swiglu_refusal(a, 0);
            if (prop.major != 9 || prop.minor != 0) {
                CHECK_THAT(refused, Catch::Matchers::ContainsSubstring("compute capability"));
                continue;
            }
            REQUIRE(refused.empty());
            for (int config = 0; config < kernels::kGemmSwigluConfigs; ++config) {
                INFO("config " << config);
                std::string why;
                const std::unique_ptr<kernels::FusedGemm> k = kernels::prepare_gemm_swiglu(a, config, nullptr, why);
                INFO(why);
                REQUIRE(k != nullptr);
                test::check_runs(*k, dd.ptr, t, want, 2e-3);
            }
        }
}
