#include "precision.hpp"

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
    if (to != DType::f16) return cast(t, to);
    Tensor out(to, t.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
        double v = t.get_f64(i);
        if (std::isfinite(v)) v = std::min(std::max(v, -65504.0), 65504.0);
        out.set_f64(i, v);
    }
    return out;
}

}  // namespace stof
