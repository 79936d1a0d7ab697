// The GEMM + bias + exact GELU kernel (stof/kernels/gemm_gelu.hpp) and the GELU alone, against
// a double-precision reference on fresh random data, outputs poisoned first.
#include "catch.hpp"
#include "gpu_util.hpp"
#include "half_check.hpp"
#include "test_rng.hpp"
#include "stof/dtype.hpp"
#include "stof/kernels/gemm_gelu.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace stof;
using kernels::ElemType;
using test::check_close;
using test::from_bits;
using test::random_bits;

namespace {

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

TEST_CASE("gemm_gelu refuses what the kernel cannot run, naming why", "[cpu][kernels]") {
    alignas(16) static uint16_t buf[64];
    kernels::GemmGeluArgs a;
    a.m = 4, a.n = 8, a.k = 8;
    a.a = a.b = a.bias = buf;
    a.d = buf;
    CHECK_THAT(kernels::gemm_gelu_refusal(a, kernels::kGemmGeluConfigs), Catch::Matchers::ContainsSubstring("config 2"));
    a.n = 12;
    CHECK_THAT(kernels::gemm_gelu_refusal(a, 0), Catch::Matchers::ContainsSubstring("multiples of 8"));
    a.n = 8, a.m = 0;
    CHECK_THAT(kernels::gemm_gelu_refusal(a, 0), Catch::Matchers::ContainsSubstring("[1, 2^31)"));
    a.m = 4, a.bias = nullptr;
    CHECK_THAT(kernels::gemm_gelu_refusal(a, 0), Catch::Matchers::ContainsSubstring("null"));
    a.bias = buf + 1;
    CHECK_THAT(kernels::gemm_gelu_refusal(a, 0), Catch::Matchers::ContainsSubstring("16-byte aligned"));
    CHECK(kernels::launch_gelu(ElemType::f16, nullptr, 4, nullptr) == cudaErrorInvalidValue);
    CHECK(kernels::launch_gelu(ElemType::f16, buf, -1, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("gemm_gelu computes GELU(A·B + bias) in both types and configs, tails in m, n and k", "[gpu][kernels]") {
    STOF_REQUIRE_GPU();
    std::mt19937_64 rng = test::make_rng();
    struct Size {
        int64_t m, n, k;
    };
    for (const ElemType t : {ElemType::f16, ElemType::bf16})
        for (const Size z : {Size{1, 8, 8}, Size{300, 264, 200}, Size{1000, 520, 776}}) {
            INFO((t == ElemType::bf16 ? "bf16" : "f16") << " m=" << z.m << " n=" << z.n << " k=" << z.k);
            const std::vector<uint16_t> ha = random_bits(t, static_cast<size_t>(z.m * z.k), 1.0, rng);
            const std::vector<uint16_t> hb = random_bits(t, static_cast<size_t>(z.k * z.n), 2.0 / std::sqrt(z.k), rng);
            const std::vector<uint16_t> hbias = random_bits(t, static_cast<size_t>(z.n), 1.0, rng);
            std::vector<double> want(static_cast<size_t>(z.m * z.n));
            for (int64_t i = 0; i < z.m; ++i)
                for (int64_t j = 0; j < z.n; ++j) {
                    double acc = from_bits(t, hbias[static_cast<size_t>(j)]);
                    for (int64_t l = 0; l < z.k; ++l)
                        acc += from_bits(t, ha[static_cast<size_t>(i * z.k + l)]) *
                               from_bits(t, hb[static_cast<size_t>(l * z.n + j)]);
                    want[static_cast<size_t>(i * z.n + j)] = gelu(acc);
                }
            test::DeviceBuffer da(ha.size() * 2), db(hb.size() * 2), dbias(hbias.size() * 2), dd(want.size() * 2);
            test::upload(da, ha);
            test::upload(db, hb);
            test::upload(dbias, hbias);
            kernels::GemmGeluArgs a;
            a.type = t;
            a.m = z.m, a.n = z.n, a.k = z.k;
            a.a = da.ptr, a.b = db.ptr, a.bias = dbias.ptr, a.d = dd.ptr;
            for (int config = 0; config < kernels::kGemmGeluConfigs; ++config) {
                INFO("config " << config);
                const std::string refused = kernels::gemm_gelu_refusal(a, config);
                cudaDeviceProp prop{};
                CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
                if (prop.major != 9 || prop.minor != 0) {
                    CHECK_THAT(refused, Catch::Matchers::ContainsSubstring("compute capability"));
                    continue;
                }
                REQUIRE(refused.empty());
                std::string why;
                const std::unique_ptr<kernels::FusedGemm> k = kernels::prepare_gemm_gelu(a, config, nullptr, why);
                INFO(why);
                REQUIRE(k != nullptr);
                test::check_runs(*k, dd.ptr, t, want, 1e-3);
            }
        }
}

TEST_CASE("launch_gelu applies the exact GELU in place", "[gpu][kernels]") {
    STOF_REQUIRE_GPU();
    std::mt19937_64 rng = test::make_rng();
    for (const ElemType t : {ElemType::f16, ElemType::bf16}) {
        const std::vector<uint16_t> x = random_bits(t, 100003, 8.0, rng);
        std::vector<double> want(x.size());
        for (size_t i = 0; i < x.size(); ++i) want[i] = gelu(from_bits(t, x[i]));
        test::DeviceBuffer d(x.size() * 2);
        test::upload(d, x);
        CUDA_REQUIRE(kernels::launch_gelu(t, d.ptr, static_cast<int64_t>(x.size()), nullptr));
        CUDA_REQUIRE(cudaDeviceSynchronize());
        check_close(t, test::download<uint16_t>(d.ptr, x.size()), want, 1e-3);
    }
}
