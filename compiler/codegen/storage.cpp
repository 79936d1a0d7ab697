#include "codegen/storage.hpp"

#include "stof/error.hpp"

#include <cmath>

namespace stof::codegen {

DType float_storage(const std::string& precision) {
    if (precision == "fp32") return DType::f32;
    if (precision == "fp16") return DType::f16;
    if (precision == "bf16") return DType::bf16;
    STOF_FAIL("precision '{}' is not one of fp32, fp16, bf16", precision);
}

DType storage_dtype(DType t, const std::string& precision) { return is_float(t) ? float_storage(precision) : t; }

Tensor storage_tensor(const Tensor& t, const std::string& precision) {
    const DType to = storage_dtype(t.dtype, precision);
    if (to != DType::f16) return cast(t, to);
    Tensor out(to, t.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
        double v = t.get_f64(i);
        if (std::isfinite(v)) v = std::min(std::max(v, -65504.0), 65504.0);
        out.set_f64(i, v);
    }
    return out;
}

}  // namespace stof::codegen
