// gelu_erf (stof/kernels/gelu_erf.hpp), the fp32 GELU of the fused GEMM's epilogue and
// launch_gelu, against the exact GELU in double: x/2 · erfc(−x/√2), which has no cancellation.
#include "catch.hpp"
#include "stof/kernels/gelu_erf.hpp"

#include <cmath>
#include <limits>

using stof::kernels::gelu_erf;

namespace {

double exact(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

TEST_CASE("gelu_erf is the exact GELU to 5e-6 relative on [-5.5, 5.5] and vanishes below", "[cpu][kernels]") {
    double worst = 0, worst_x = 0;
    for (int i = -1'100'000; i <= 1'100'000; ++i) {
        const float x = static_cast<float>(i) * 5e-6f;
        const double want = exact(x);
        const double rel = std::fabs(gelu_erf(x) - want) / std::fabs(want == 0 ? 1.0 : want);
        if (rel > worst) worst = rel, worst_x = x;
    }
    INFO("worst at x = " << worst_x);
    CHECK(worst <= 5e-6);
    // The fit ends at |x| = 5.5: above, Φ(x) = 1 to fp32; below, the result stays under 2e-8 · |x|.
    for (float x = 5.5f; x < 1e6f; x *= 1.01f) {
        INFO("x = " << x);
        CHECK(std::fabs(gelu_erf(x) - exact(x)) <= 5e-6 * exact(x));
        CHECK(gelu_erf(-x) <= 0.f);
        CHECK(-gelu_erf(-x) <= 2e-8 * x);
    }
    CHECK(gelu_erf(0.f) == 0.f);
    CHECK(gelu_erf(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(gelu_erf(std::numeric_limits<float>::quiet_NaN())));
}
