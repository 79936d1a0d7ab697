#include "stof/compare.hpp"

#include "stof/error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace stof {

void check_tolerances(double rtol, double atol) {
    STOF_CHECK(std::isfinite(rtol) && rtol >= 0 && std::isfinite(atol) && atol >= 0,
               "tolerances must be finite and >= 0, got --rtol {} --atol {}", rtol, atol);
}

Comparison compare(const Tensor& a, const Tensor& e, double rtol, double atol) {
    check_tolerances(rtol, atol);
    Comparison c;
    if (a.shape != e.shape) {
        c.reason = fmt::format("shape {} differs from the expected {}", shape_str(a.shape), shape_str(e.shape));
        return c;
    }
    if (is_float(a.dtype) != is_float(e.dtype) && !(a.dtype == DType::boolean && e.dtype == DType::boolean)) {
        c.reason = fmt::format("element type {} cannot be compared with the expected {}", dtype_name(a.dtype),
                               dtype_name(e.dtype));
        return c;
    }
    double worst_excess = -1;
    for (int64_t i = 0; i < a.numel(); ++i) {
        const double x = a.get_f64(i), y = e.get_f64(i);
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) && std::isnan(y)) continue;
            ++c.mismatches;
            c.max_abs = INFINITY;
            if (worst_excess < INFINITY) {
                worst_excess = INFINITY;
                c.worst = i;
            }
            continue;
        }
        const double diff = x == y ? 0.0 : std::fabs(x - y);
        c.max_abs = std::max(c.max_abs, diff);
        if (y != 0) c.max_rel = std::max(c.max_rel, diff / std::fabs(y));
        const double excess = diff - (atol + rtol * std::fabs(y));
        if (excess > 0) {
            ++c.mismatches;
            if (excess > worst_excess) {
                worst_excess = excess;
                c.worst = i;
            }
        }
    }
    c.ok = c.mismatches == 0;
    return c;
}

std::string describe(const Comparison& c, const Tensor& e, double rtol, double atol) {
    if (!c.reason.empty()) return c.reason;
    std::string s = fmt::format("max abs {:.3g}, max rel {:.3g}, {} of {} outside rtol={:g} atol={:g}", c.max_abs, c.max_rel,
                                c.mismatches, e.numel(), rtol, atol);
    if (c.worst >= 0) s += fmt::format(" (worst at flat index {}, expected {:g})", c.worst, e.get_f64(c.worst));
    return s;
}

}  // namespace stof
