#include "tune/output_check.hpp"

#include <fmt/format.h>

#include <cmath>

namespace stof::tune {

double output_tolerance(DType t) { return t == DType::f16 || t == DType::bf16 ? 1e-2 : 1e-4; }

std::string check_outputs(const std::vector<Tensor>& candidate, const std::vector<Tensor>& reference) {
    if (candidate.size() != reference.size())
        return fmt::format("{} outputs, the reference has {}", candidate.size(), reference.size());
    for (size_t o = 0; o < candidate.size(); ++o) {
        const Tensor &a = candidate[o], &b = reference[o];
        if (a.dtype != b.dtype || a.shape != b.shape)
            return fmt::format("output {}: {} against {}", o, a.describe(), b.describe());
        double diff = 0, norm = 0;
        for (int64_t i = 0; i < a.numel(); ++i) {
            const double x = a.get_f64(i), y = b.get_f64(i);
            if (!std::isfinite(x) || !std::isfinite(y)) {
                if (!(std::isnan(x) && std::isnan(y)) && x != y)
                    return fmt::format("output {}: element {} is {} where the reference has {}", o, i, x, y);
                continue;
            }
            diff += (x - y) * (x - y);
            norm += y * y;
        }
        const double tol = output_tolerance(a.dtype);
        if (std::sqrt(diff) > tol * std::sqrt(norm) && diff > 0)
            return fmt::format("output {}: relative error {:.2e} > {:.0e}", o, std::sqrt(diff / std::max(norm, 1e-300)), tol);
    }
    return "";
}

}  // namespace stof::tune
