// Host tensor: dtype, shape and a dense row-major (C order) byte buffer.
#pragma once

#include "stof/dtype.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stof {

using Shape = std::vector<int64_t>;

// Largest element count of any tensor stofc handles (2^40): every product of
// dimensions is checked against it, so no size arithmetic can overflow.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// Product of dims; 1 for a scalar. A stof::Error when a dimension is negative or the
// product exceeds kMaxElements.
int64_t numel(const Shape& shape);
// The same, naming `what` ("node 'x' output 0") in the error.
int64_t checked_numel(const Shape& shape, const std::string& what);
// a * b for sizes a, b >= 0; a stof::Error naming `what` when negative or beyond kMaxElements.
int64_t size_mul(int64_t a, int64_t b, const std::string& what);
std::string shape_str(const Shape& shape);  // "[2,128,768]"

struct Tensor {
    DType dtype = DType::undefined;
    Shape shape;
    std::vector<uint8_t> bytes;  // numel(shape) * dtype_size(dtype) bytes

    Tensor() = default;
    Tensor(DType t, Shape s);  // zero-filled; its size is checked (numel, memory limit) before allocating

    int64_t numel() const { return stof::numel(shape); }
    template <class T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
    template <class T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }

    // Element i converted to double / int64 (any dtype).
    double get_f64(int64_t i) const;
    int64_t get_i64(int64_t i) const;
    // Store v into element i, converting to this tensor's dtype.
    void set_f64(int64_t i, double v);
    void set_i64(int64_t i, int64_t v);

    std::string describe() const;  // "f32[2,3]"
};

// A tensor of dtype t and shape s with every element `value` (converted as set_f64 does).
Tensor full(DType t, Shape s, double value);

// Copy of t converted to dtype `to` (floats round, float→int truncates toward zero).
Tensor cast(const Tensor& t, DType to);

}  // namespace stof
