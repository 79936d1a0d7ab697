// Weights at the plan's precision (to_plan_precision): fp32 weights go to fp16 with finite
// values clamped to ±65504 (infinities and NaN kept) and to bf16 rounded to nearest even,
// large tensors on several cores; the result equals the element-wise conversion of the same
// values given as fp64 (the generic path), and the clamped values are counted.
#include "catch.hpp"
#include "precision.hpp"
#include "stof/dtype.hpp"
#include "test_rng.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace stof;

namespace {

// n random fp32 values spanning fp16's range and beyond, with the special values at random places.
Tensor weights(int64_t n, std::mt19937_64& rng) {
    Tensor t(DType::f32, {n});
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_int_distribution<int> exponent(-30, 20);
    float* x = t.data<float>();
    for (int64_t i = 0; i < n; ++i) x[i] = std::ldexp(normal(rng), exponent(rng));
    const float special[] = {65504.f,
                             -65504.f,
                             65520.f,
                             -65520.f,
                             1e30f,
                             -1e30f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(),
                             0.f,
                             -0.f,
                             5.96e-8f,
                             1e-9f};
    std::uniform_int_distribution<int64_t> at(0, n - 1);
    for (float v : special)
        for (int k = 0; k < 4; ++k) x[at(rng)] = v;
    return t;
}

}  // namespace

TEST_CASE("plan precision: fp32 weights to fp16 and bf16 match the element-wise conversion", "[cpu][codegen]") {
    auto rng = test::make_rng();
    const int64_t n = GENERATE(int64_t{1}, int64_t{1000}, int64_t{(1 << 20) * 2 + 13});  // the last on several cores
    const Tensor w = weights(n, rng);
    const Tensor w64 = cast(w, DType::f64);  // the same values through the generic path
    for (Precision p : {Precision::fp16, Precision::bf16}) {
        INFO(precision_name(p) << ", " << n << " elements");
        int64_t clamped = -1, clamped64 = -1;
        const Tensor fast = to_plan_precision(w, p, &clamped), generic = to_plan_precision(w64, p, &clamped64);
        REQUIRE(fast.dtype == float_dtype(p));
        REQUIRE(fast.shape == w.shape);
        REQUIRE(generic.dtype == fast.dtype);
        const uint16_t* a = fast.data<uint16_t>();
        const uint16_t* b = generic.data<uint16_t>();
        const float* x = w.data<float>();
        int64_t mismatches = 0;
        for (int64_t i = 0; i < n; ++i) {
            uint16_t want;
            if (p == Precision::bf16) want = f32_to_bf16(x[i]);
            else want = f32_to_f16(std::isfinite(x[i]) ? std::fmin(std::fmax(x[i], -65504.f), 65504.f) : x[i]);
            mismatches += a[i] != want || b[i] != want;
        }
        CHECK(mismatches == 0);
        // The finite values beyond ±65504 are counted (none for bf16, whose range is fp32's).
        int64_t beyond = 0;
        for (int64_t i = 0; i < n; ++i) beyond += std::isfinite(x[i]) && std::fabs(x[i]) > 65504.f;
        CHECK(clamped == (p == Precision::fp16 ? beyond : 0));
        CHECK(clamped64 == clamped);
        if (p == Precision::fp16) {  // no finite weight becomes infinite; infinities and NaN stay
            int64_t bad = 0;
            for (int64_t i = 0; i < n; ++i) {
                const float back = f16_to_f32(a[i]);
                bad += std::isfinite(x[i]) ? !std::isfinite(back) : std::isnan(x[i]) != std::isnan(back);
            }
            CHECK(bad == 0);
        }
    }
}
