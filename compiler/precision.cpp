#include "precision.hpp"

#include "parallel.hpp"
#include "stof/error.hpp"

#include <algorithm>
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

Tensor to_plan_precision(const Tensor& t, Precision p) {
    const DType to = plan_dtype(t.dtype, p);
    if (to != DType::f16 && !(to == DType::bf16 && t.dtype == DType::f32)) return cast(t, to);
    Tensor out(to, t.shape);
    const int64_t n = t.numel();
    if (t.dtype == DType::f32) {  // model weights: a typed loop, tensors of several chunks on several cores
        const float* in = t.data<float>();
        uint16_t* o = out.data<uint16_t>();
        auto convert = [&](int64_t begin, int64_t end) {
            if (to == DType::bf16) {
                for (int64_t i = begin; i < end; ++i) o[i] = f32_to_bf16(in[i]);
            } else {
                for (int64_t i = begin; i < end; ++i)
                    o[i] = f32_to_f16(std::isfinite(in[i]) ? std::clamp(in[i], -65504.f, 65504.f) : in[i]);
            }
        };
        constexpr int64_t kChunk = int64_t{1} << 20;  // elements per task (milliseconds of work)
        const int64_t tasks = (n + kChunk - 1) / kChunk;
        if (tasks <= 1) convert(0, n);
        else
            parallel_for(static_cast<size_t>(tasks), [&](size_t k) {
                const int64_t begin = static_cast<int64_t>(k) * kChunk;
                convert(begin, std::min(n, begin + kChunk));
            });
        return out;
    }
    for (int64_t i = 0; i < n; ++i) {
        double v = t.get_f64(i);
        if (std::isfinite(v)) v = std::min(std::max(v, -65504.0), 65504.0);
        out.set_f64(i, v);
    }
    return out;
}

}  // namespace stof
