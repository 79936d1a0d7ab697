#include "stof/tensor.hpp"

#include "stof/error.hpp"
#include "stof/memory_limit.hpp"

#include <cmath>
#include <limits>
#include <utility>

namespace stof {

int64_t size_mul(int64_t a, int64_t b, const std::string& what) {
    STOF_CHECK(a >= 0 && b >= 0, "{}: negative size in {} x {}", what, a, b);
    STOF_CHECK(b == 0 || a <= kMaxElements / b, "{}: {} x {} elements is more than stofc handles (2^40)", what, a, b);
    return a * b;
}

int64_t checked_numel(const Shape& shape, const std::string& what) {
    int64_t n = 1;
    for (int64_t d : shape) STOF_CHECK(d >= 0, "{}: shape {} has a negative dimension", what, shape_str(shape));
    for (int64_t d : shape) {
        if (d == 0) return 0;
        STOF_CHECK(n <= kMaxElements / d, "{}: shape {} has more elements than stofc handles (2^40)", what, shape_str(shape));
        n *= d;
    }
    return n;
}

int64_t numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape)
        if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxElements) return checked_numel(shape, "tensor");  // throws
    return n;
}

std::string shape_str(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ",";
        s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
    }
    return s + "]";
}

Tensor::Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
    const auto n = static_cast<uint64_t>(checked_numel(shape, "tensor"));
    const uint64_t size = n * dtype_size(t);
    check_memory(size, fmt::format("a tensor {}{}", dtype_name(t), shape_str(shape)));
    bytes.assign(size, 0);
}

double Tensor::get_f64(int64_t i) const {
    switch (dtype) {
        case DType::f32: return data<float>()[i];
        case DType::f16: return f16_to_f32(data<uint16_t>()[i]);
        case DType::bf16: return bf16_to_f32(data<uint16_t>()[i]);
        case DType::f64: return data<double>()[i];
        case DType::i64: return static_cast<double>(data<int64_t>()[i]);
        case DType::i32: return data<int32_t>()[i];
        case DType::i8: return data<int8_t>()[i];
        case DType::u8: return data<uint8_t>()[i];
        case DType::boolean: return data<uint8_t>()[i] ? 1.0 : 0.0;
        case DType::undefined: break;
    }
    STOF_FAIL("element type is undefined");
}

// Float → integer conversion: truncation toward zero; NaN → 0, saturating at the limits.
static int64_t f64_to_i64(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
    if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
}

int64_t Tensor::get_i64(int64_t i) const {
    switch (dtype) {
        case DType::i64: return data<int64_t>()[i];
        case DType::i32: return data<int32_t>()[i];
        case DType::i8: return data<int8_t>()[i];
        case DType::u8: return data<uint8_t>()[i];
        case DType::boolean: return data<uint8_t>()[i] ? 1 : 0;
        default: return f64_to_i64(get_f64(i));
    }
}

void Tensor::set_f64(int64_t i, double v) {
    switch (dtype) {
        case DType::f32: data<float>()[i] = static_cast<float>(v); return;
        case DType::f16: data<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); return;
        case DType::bf16: data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v)); return;
        case DType::f64: data<double>()[i] = v; return;
        case DType::boolean: data<uint8_t>()[i] = v != 0.0; return;
        default: set_i64(i, f64_to_i64(v)); return;
    }
}

void Tensor::set_i64(int64_t i, int64_t v) {
    switch (dtype) {
        case DType::i64: data<int64_t>()[i] = v; return;
        case DType::i32: data<int32_t>()[i] = static_cast<int32_t>(v); return;
        case DType::i8: data<int8_t>()[i] = static_cast<int8_t>(v); return;
        case DType::u8: data<uint8_t>()[i] = static_cast<uint8_t>(v); return;
        case DType::boolean: data<uint8_t>()[i] = v != 0; return;
        default: set_f64(i, static_cast<double>(v)); return;
    }
}

Tensor full(DType t, Shape s, double value) {
    Tensor x(t, std::move(s));
    for (int64_t i = 0; i < x.numel(); ++i) x.set_f64(i, value);
    return x;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype)) + shape_str(shape); }

Tensor cast(const Tensor& t, DType to) {
    if (t.dtype == to) return t;
    Tensor out(to, t.shape);
    const int64_t n = t.numel();
    if (to == DType::boolean) {
        for (int64_t i = 0; i < n; ++i) out.set_i64(i, t.get_f64(i) != 0.0);  // NaN → true
    } else if (is_float(t.dtype)) {
        for (int64_t i = 0; i < n; ++i) out.set_f64(i, t.get_f64(i));
    } else {
        for (int64_t i = 0; i < n; ++i) out.set_i64(i, t.get_i64(i));
    }
    return out;
}

}  // namespace stof
