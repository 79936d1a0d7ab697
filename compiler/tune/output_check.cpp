#include "tune/output_check.hpp"

#include "parallel.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace stof::tune {

double output_tolerance(DType t) { return t == DType::f16 || t == DType::bf16 ? 1e-2 : 1e-4; }

namespace {

// Every f16 bit pattern as a float.
const float* f16_table() {
    static const std::vector<float> table = [] {
        std::vector<float> t(65536);
        for (uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(static_cast<uint16_t>(h));
        return t;
    }();
    return table.data();
}

// f(load): load(x, i) is element i of tensor x (of t's dtype) as a double; one dispatch on
// the dtype for a whole tensor.
template <class F> auto with_loader(DType t, const F& f) {
    switch (t) {
        case DType::f32: return f([](const Tensor& x, int64_t i) { return static_cast<double>(x.data<float>()[i]); });
        case DType::f16: {
            const float* table = f16_table();
            return f([table](const Tensor& x, int64_t i) { return static_cast<double>(table[x.data<uint16_t>()[i]]); });
        }
        case DType::bf16:
            return f([](const Tensor& x, int64_t i) {
                const uint32_t bits = static_cast<uint32_t>(x.data<uint16_t>()[i]) << 16;
                float v;
                std::memcpy(&v, &bits, 4);
                return static_cast<double>(v);
            });
        default: return f([](const Tensor& x, int64_t i) { return x.get_f64(i); });
    }
}

}  // namespace

std::string check_outputs(const std::vector<Tensor>& candidate, const std::vector<Tensor>& reference) {
    if (candidate.size() != reference.size())
        return fmt::format("{} outputs, the reference has {}", candidate.size(), reference.size());
    for (size_t o = 0; o < candidate.size(); ++o) {
        const Tensor &a = candidate[o], &b = reference[o];
        if (a.dtype != b.dtype || a.shape != b.shape)
            return fmt::format("output {}: {} against {}", o, a.describe(), b.describe());
        // Per chunk: squared differences, squared reference, the first non-finite mismatch (or -1).
        const int64_t n = a.numel();
        const size_t chunks = chunk_count(n);
        std::vector<double> diffs(chunks, 0), norms(chunks, 0);
        std::vector<int64_t> bad(chunks, -1);
        with_loader(a.dtype, [&](const auto& load) {
            parallel_chunks(n, [&](size_t k, int64_t begin, int64_t end) {
                double d = 0, r = 0;  // in registers: neighbouring chunks' sums share cache lines
                for (int64_t i = begin; i < end; ++i) {
                    const double x = load(a, i), y = load(b, i);
                    if (!std::isfinite(x) || !std::isfinite(y)) {
                        if (!(std::isnan(x) && std::isnan(y)) && x != y) {
                            bad[k] = i;
                            return;
                        }
                        continue;
                    }
                    d += (x - y) * (x - y);
                    r += y * y;
                }
                diffs[k] = d;
                norms[k] = r;
            });
        });
        double diff = 0, norm = 0;
        for (size_t k = 0; k < chunks; ++k) {
            if (bad[k] >= 0)
                return fmt::format("output {}: element {} is {} where the reference has {}", o, bad[k], a.get_f64(bad[k]),
                                   b.get_f64(bad[k]));
            diff += diffs[k];
            norm += norms[k];
        }
        const double tol = output_tolerance(a.dtype);
        if (std::sqrt(diff) > tol * std::sqrt(norm) && diff > 0)
            return fmt::format("output {}: relative error {:.2e} > {:.0e}", o, std::sqrt(diff / std::max(norm, 1e-300)), tol);
    }
    return "";
}

}  // namespace stof::tune
