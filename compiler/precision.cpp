#include "precision.hpp"

#include "parallel.hpp"
#include "stof/error.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace stof {

Precision parse_precision(std::string_view name) {
    if (name == "fp32") return Precision::fp32;
    if (name == "fp16") return Precision::fp16;
    if (name == "bf16") return Precision::bf16;
    STOF_FAIL("precision '{}' is not one of fp32, fp16, bf16", name);
}

const char* precision_name(Precision p) {
    switch (p) {
        case Precision::fp32: return "fp32";
        case Precision::fp16: return "fp16";
        case Precision::bf16: return "bf16";
    }
    return "?";
}

DType float_dtype(Precision p) {
    switch (p) {
        case Precision::fp32: return DType::f32;
        case Precision::fp16: return DType::f16;
        case Precision::bf16: return DType::bf16;
    }
    return DType::f32;
}

DType plan_dtype(DType t, Precision p) { return is_float(t) ? float_dtype(p) : t; }

Tensor to_plan_precision(const Tensor& t, Precision p, int64_t* clamped) {
    const DType to = plan_dtype(t.dtype, p);
    if (clamped) *clamped = 0;
    const bool f32 = t.dtype == DType::f32;
    if (to != DType::f16 && !(f32 && to == DType::bf16)) return cast(t, to);
    Tensor out(to, t.shape);
    const int64_t n = t.numel();
    std::atomic<int64_t> beyond{0};
    // Elements [begin, end) of t, into out.
    auto convert = [&](size_t, int64_t begin, int64_t end) {
        uint16_t* o = out.data<uint16_t>();
        int64_t c = 0;
        if (f32 && to == DType::bf16) {
            const float* in = t.data<float>();
            for (int64_t i = begin; i < end; ++i) o[i] = f32_to_bf16(in[i]);
        } else if (f32) {
            const float* in = t.data<float>();
            for (int64_t i = begin; i < end; ++i) {
                const bool beyond_range = std::isfinite(in[i]) && std::fabs(in[i]) > 65504.f;
                c += beyond_range;
                o[i] = f32_to_f16(beyond_range ? std::copysign(65504.f, in[i]) : in[i]);
            }
        } else {
            for (int64_t i = begin; i < end; ++i) {
                const double x = t.get_f64(i);
                const bool beyond_range = std::isfinite(x) && std::fabs(x) > 65504.0;
                c += beyond_range;
                out.set_f64(i, beyond_range ? std::copysign(65504.0, x) : x);
            }
        }
        beyond += c;
    };
    // Large weights on several cores; small ones inline, without starting threads.
    if (n < (int64_t{1} << 20)) convert(0, 0, n);
    else parallel_chunks(n, convert);
    if (clamped) *clamped = beyond;
    return out;
}

}  // namespace stof
