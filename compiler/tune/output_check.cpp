#include "tune/output_check.hpp"

#include "parallel.hpp"
#include "stof/error.hpp"

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

// Element i of an array of C++ type E as a double.
template <class E> double load_as(const void* p, int64_t i) { return static_cast<double>(static_cast<const E*>(p)[i]); }

// f(load): load(p, i) is element i of the array p of dtype t as a double; one dispatch on
// the dtype for a whole piece.
template <class F> auto with_loader(DType t, const F& f) {
    switch (t) {
        case DType::f16: {
            const float* table = f16_table();
            return f(
                [table](const void* p, int64_t i) { return static_cast<double>(table[static_cast<const uint16_t*>(p)[i]]); });
        }
        case DType::bf16:
            return f([](const void* p, int64_t i) {
                const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16;
                float v;
                std::memcpy(&v, &bits, 4);
                return static_cast<double>(v);
            });
        case DType::f64: return f(load_as<double>);
        case DType::i64: return f(load_as<int64_t>);
        case DType::i32: return f(load_as<int32_t>);
        case DType::i8: return f(load_as<int8_t>);
        case DType::u8: return f(load_as<uint8_t>);
        case DType::boolean: return f([](const void* p, int64_t i) { return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0; });
        case DType::f32: return f(load_as<float>);
        case DType::undefined: break;
    }
    STOF_FAIL("output comparison: element type is undefined");
}

}  // namespace

std::string layout_mismatch(size_t o, DType dtype, const Shape& shape, const Tensor& reference) {
    if (dtype == reference.dtype && shape == reference.shape) return "";
    return fmt::format("output {}: {}{} against {}", o, dtype_name(dtype), shape_str(shape), reference.describe());
}

void OutputComparison::add(const void* elements, int64_t count) {
    const int64_t total = ref_.numel();
    STOF_CHECK(count >= 0 && next_ + count <= total && (count % kCompareBlock == 0 || next_ + count == total),
               "output comparison: {} elements at {} of {} (pieces are multiples of {} elements)", count, next_, total,
               kCompareBlock);
    if (bad_ >= 0 || count == 0) {
        next_ += count;
        return;
    }
    const size_t blocks = static_cast<size_t>((count + kCompareBlock - 1) / kCompareBlock);
    // Per block: squared differences, squared reference, the first non-finite mismatch (or -1).
    std::vector<double> diffs(blocks, 0), norms(blocks, 0), bad_values(blocks, 0);
    std::vector<int64_t> bad(blocks, -1);
    const uint8_t* ref = ref_.bytes.data() + next_ * static_cast<int64_t>(dtype_size(ref_.dtype));
    with_loader(ref_.dtype, [&](const auto& load) {
        parallel_for(blocks, [&](size_t k) {
            const int64_t begin = static_cast<int64_t>(k) * kCompareBlock, end = std::min(count, begin + kCompareBlock);
            double d = 0, r = 0;  // in registers: neighbouring blocks' sums share cache lines
            for (int64_t i = begin; i < end; ++i) {
                const double x = load(elements, i), y = load(ref, i);
                if (!std::isfinite(x) || !std::isfinite(y)) {
                    if (!(std::isnan(x) && std::isnan(y)) && x != y) {
                        bad[k] = i;
                        bad_values[k] = x;
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
    for (size_t k = 0; k < blocks; ++k) {
        if (bad[k] >= 0) {
            bad_ = next_ + bad[k];
            bad_value_ = bad_values[k];
            break;
        }
        diff_ += diffs[k];
        norm_ += norms[k];
    }
    next_ += count;
}

std::string OutputComparison::verdict(size_t o) const {
    STOF_CHECK(next_ == ref_.numel(), "output comparison: {} of {} elements arrived", next_, ref_.numel());
    if (bad_ >= 0)
        return fmt::format("output {}: element {} is {} where the reference has {}", o, bad_, bad_value_, ref_.get_f64(bad_));
    const double tol = output_tolerance(ref_.dtype);
    if (std::sqrt(diff_) > tol * std::sqrt(norm_) && diff_ > 0)
        return fmt::format("output {}: relative error {:.2e} > {:.0e}", o, std::sqrt(diff_ / std::max(norm_, 1e-300)), tol);
    return "";
}

std::string check_outputs(const std::vector<CandidateOutput>& candidate, const std::vector<Tensor>& reference) {
    if (candidate.size() != reference.size())
        return fmt::format("{} outputs, the reference has {}", candidate.size(), reference.size());
    for (size_t o = 0; o < candidate.size(); ++o) {
        if (std::string why = layout_mismatch(o, candidate[o].dtype, candidate[o].shape, reference[o]); !why.empty())
            return why;
        OutputComparison c(reference[o]);
        candidate[o].feed(c);
        if (std::string why = c.verdict(o); !why.empty()) return why;
    }
    return "";
}

std::string check_outputs(const std::vector<Tensor>& candidate, const std::vector<Tensor>& reference) {
    std::vector<CandidateOutput> pieces;
    for (const Tensor& t : candidate)
        pieces.push_back({t.dtype, t.shape, [&t](OutputComparison& c) { c.add(t.bytes.data(), t.numel()); }});
    return check_outputs(pieces, reference);
}

}  // namespace stof::tune
