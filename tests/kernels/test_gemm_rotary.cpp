// The GEMM + rotary embedding kernel (stof/kernels/gemm_rotary.hpp) against a double-precision
// reference on fresh random data, outputs poisoned first.
#include "catch.hpp"
#include "gpu_util.hpp"
#include "half_check.hpp"
#include "test_rng.hpp"
#include "stof/kernels/gemm_rotary.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using namespace stof;
using kernels::ElemType;
using test::from_bits;
using test::random_bits;

TEST_CASE("gemm_rotary refuses what the kernel cannot run, naming why", "[cpu][kernels]") {
    alignas(16) static uint16_t buf[1024];
    kernels::GemmRotaryArgs a;
    a.m = 4, a.n = 128, a.k = 8, a.ldd = 128, a.rot_cols = 64, a.head_dim = 64, a.cos_rows = 4;
    a.a = a.b = a.cos = a.sin = buf;
    a.d = buf;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, kernels::kGemmRotaryConfigs), Catch::Matchers::ContainsSubstring("config 2"));
    a.head_dim = 96;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("not 64 or 128"));
    a.head_dim = 64, a.rot_cols = 96;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("multiple of head_dim"));
    a.rot_cols = 192;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("multiple of head_dim"));
    a.rot_cols = 64, a.ldd = 120;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("smaller than n"));
    a.ldd = 128, a.cos_rows = 0;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("cos_rows"));
    a.cos_rows = 4, a.sin = nullptr;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("null"));
    a.sin = buf + 1;
    CHECK_THAT(kernels::gemm_rotary_refusal(a, 0), Catch::Matchers::ContainsSubstring("16-byte aligned"));
}

TEST_CASE("gemm_rotary rotates the query and key columns of a·b, in both types, with tails", "[gpu][kernels]") {
    STOF_REQUIRE_GPU();
    cudaDeviceProp prop{};
    CUDA_REQUIRE(cudaGetDeviceProperties(&prop, 0));
    std::mt19937_64 rng = test::make_rng();
    struct Case {
        int64_t m, n, k, ldd, rot_cols;
        int head_dim;
        int64_t cos_rows;
    };
    // LLaMA-like (rotated heads, then unrotated V heads), a period of positions shorter than m
    // (batches), tails in m, n and k, a row pitch beyond n, nothing rotated, everything rotated.
    const std::vector<Case> cases = {{300, 384, 200, 384, 256, 64, 100},
                                     {129, 264, 72, 272, 128, 64, 129},
                                     {64, 512, 136, 520, 384, 128, 7},
                                     {1, 128, 8, 128, 0, 64, 1},
                                     {257, 256, 264, 256, 256, 128, 257}};
    for (const ElemType t : {ElemType::f16, ElemType::bf16})
        for (const Case& z : cases) {
            INFO((t == ElemType::bf16 ? "bf16" : "f16")
                 << " m=" << z.m << " n=" << z.n << " k=" << z.k << " ldd=" << z.ldd << " rot_cols=" << z.rot_cols
                 << " head_dim=" << z.head_dim << " cos_rows=" << z.cos_rows);
            const std::vector<uint16_t> ha = random_bits(t, static_cast<size_t>(z.m * z.k), 1.0, rng);
            const std::vector<uint16_t> hb = random_bits(t, static_cast<size_t>(z.k * z.n), 3.0 / std::sqrt(z.k), rng);
            // cos and sin of angles of the positions, as a model's tables hold them.
            std::vector<uint16_t> hcos(static_cast<size_t>(z.cos_rows * z.head_dim)), hsin(hcos.size());
            std::uniform_real_distribution<double> angle(-3.2, 3.2);
            for (size_t i = 0; i < hcos.size(); ++i) {
                const double w = angle(rng);
                hcos[i] = test::to_bits(t, static_cast<float>(std::cos(w)));
                hsin[i] = test::to_bits(t, static_cast<float>(std::sin(w)));
            }
            std::vector<double> x(static_cast<size_t>(z.m * z.n)), want(x.size());
            for (int64_t i = 0; i < z.m; ++i)
                for (int64_t c = 0; c < z.n; ++c) {
                    double s = 0;
                    for (int64_t l = 0; l < z.k; ++l)
                        s += from_bits(t, ha[static_cast<size_t>(i * z.k + l)]) *
                             from_bits(t, hb[static_cast<size_t>(l * z.n + c)]);
                    x[static_cast<size_t>(i * z.n + c)] = s;
                }
            const int64_t half = z.head_dim / 2;
            for (int64_t i = 0; i < z.m; ++i)
                for (int64_t c = 0; c < z.n; ++c) {
                    const size_t at = static_cast<size_t>(i * z.n + c);
                    if (c >= z.rot_cols) {
                        want[at] = x[at];
                        continue;
                    }
                    const int64_t e = c % z.head_dim;
                    const size_t p = static_cast<size_t>(i % z.cos_rows * z.head_dim + e);
                    const double partner = e < half ? -x[at + static_cast<size_t>(half)] : x[at - static_cast<size_t>(half)];
                    want[at] = x[at] * from_bits(t, hcos[p]) + partner * from_bits(t, hsin[p]);
                }
            test::DeviceBuffer da(ha.size() * 2), db(hb.size() * 2), dcos(hcos.size() * 2), dsin(hsin.size() * 2),
                dd(static_cast<size_t>(z.m * z.ldd) * 2);
            test::upload(da, ha);
            test::upload(db, hb);
            test::upload(dcos, hcos);
            test::upload(dsin, hsin);
            kernels::GemmRotaryArgs a;
            a.type = t;
            a.m = z.m, a.n = z.n, a.k = z.k, a.ldd = z.ldd, a.rot_cols = z.rot_cols, a.head_dim = z.head_dim;
            a.cos_rows = z.cos_rows;
            a.a = da.ptr, a.b = db.ptr, a.cos = dcos.ptr, a.sin = dsin.ptr, a.d = dd.ptr;
            for (int config = 0; config < kernels::kGemmRotaryConfigs; ++config) {
                INFO("config " << config);
                const std::string refused = kernels::gemm_rotary_refusal(a, config);
                if (prop.major != 9 || prop.minor != 0) {
                    CHECK_THAT(refused, Catch::Matchers::ContainsSubstring("compute capability"));
                    continue;
                }
                REQUIRE(refused.empty());
                std::string why;
                const std::unique_ptr<kernels::FusedGemm> k = kernels::prepare_gemm_rotary(a, config, nullptr, why);
                INFO(why);
                REQUIRE(k != nullptr);
                // Twice through the prepared kernel, d poisoned (NaN) before each run; the columns
                // past n keep the poison.
                for (int run = 0; run < 2; ++run) {
                    INFO("run " << run);
                    CUDA_REQUIRE(cudaMemset(dd.ptr, 0xff, static_cast<size_t>(z.m * z.ldd) * 2));
                    CUDA_REQUIRE(k->run(nullptr));
                    CUDA_REQUIRE(cudaDeviceSynchronize());
                    const std::vector<uint16_t> got = test::download<uint16_t>(dd.ptr, static_cast<size_t>(z.m * z.ldd));
                    std::vector<uint16_t> rows(want.size());
                    size_t untouched = 0;
                    for (int64_t i = 0; i < z.m; ++i)
                        for (int64_t c = 0; c < z.ldd; ++c) {
                            const uint16_t v = got[static_cast<size_t>(i * z.ldd + c)];
                            if (c < z.n) rows[static_cast<size_t>(i * z.n + c)] = v;
                            else untouched += v == 0xffff;
                        }
                    CHECK(untouched == static_cast<size_t>(z.m * (z.ldd - z.n)));
                    test::check_close(t, rows, want, 2e-3);
                }
            }
        }
}
