// Helpers shared by the op implementations in ops/*.cpp.
#pragma once

#include "ir/graph.hpp"
#include "stof/error.hpp"

#include <vector>

namespace stof::ir::ops {

// axis in [-rank, rank) → [0, rank); a stof::Error naming the node otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n);

// Numpy-style broadcast of several shapes.
Shape broadcast_shapes(const std::vector<const Shape*>& shapes, const Node& n);

// Row-major strides of a shape, in elements.
std::vector<int64_t> strides_of(const Shape& shape);

// The int64 contents of input `i`, which must be known at compile time.
// `what` names the input in the error ("target shape", "axes").
std::vector<int64_t> known_ints(const std::vector<InferInput>& in, size_t i, const Node& n, const char* what);

// Iterates over every element of `out` and the matching (broadcast) linear
// index into each input shape.
class Broadcast {
public:
    Broadcast(const Shape& out, const std::vector<const Shape*>& ins);

    // f(out_index, const int64_t* in_index) for each output element, in order.
    template <class F> void run(F&& f) const {
        const size_t rank = out_.size(), k = strides_.size();
        const int64_t total = numel(out_);
        std::vector<int64_t> counter(rank, 0), idx(k, 0);
        for (int64_t o = 0; o < total; ++o) {
            f(o, idx.data());
            for (size_t d = rank; d-- > 0;) {
                if (++counter[d] < out_[d]) {
                    for (size_t j = 0; j < k; ++j) idx[j] += strides_[j][d];
                    break;
                }
                for (size_t j = 0; j < k; ++j) idx[j] -= strides_[j][d] * (out_[d] - 1);
                counter[d] = 0;
            }
        }
    }

private:
    Shape out_;
    std::vector<std::vector<int64_t>> strides_;  // per input, aligned to out rank, 0 on broadcast dims
};

// Elements of a float tensor as fp32 (any float dtype).
std::vector<float> to_f32(const Tensor& t);
// A tensor of dtype `dt` and shape `shape` from fp32 values.
Tensor from_f32(const std::vector<float>& v, DType dt, const Shape& shape);

}  // namespace stof::ir::ops
