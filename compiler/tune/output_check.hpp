// Whether a candidate's outputs match the unfused segment's (the reference) closely
// enough for the candidate to be used: per output, same dtype and shape, the same
// non-finite values at the same places, and ‖candidate − reference‖₂ ≤ tol · ‖reference‖₂
// over the finite ones, tol = 1e-4 for fp32 outputs and 1e-2 for 16-bit ones.
//
// The sums run over blocks of kCompareBlock elements, each block summed in element order and
// the blocks combined in order: the verdict does not depend on how the elements arrive.
#pragma once

#include "stof/tensor.hpp"

#include <functional>
#include <string>
#include <vector>

namespace stof::tune {

inline constexpr int64_t kCompareBlock = 65536;

double output_tolerance(DType t);

// Why candidate output o, of `dtype` and `shape`, cannot be compared with `reference`
// ("" when it can).
std::string layout_mismatch(size_t o, DType dtype, const Shape& shape, const Tensor& reference);

// One output compared with its reference as its elements arrive, in order, in pieces of
// any multiple of kCompareBlock elements (the last piece: whatever is left).
class OutputComparison {
public:
    explicit OutputComparison(const Tensor& reference) : ref_(reference) {}
    // The candidate's next `count` elements, in the reference's dtype.
    void add(const void* elements, int64_t count);
    // Once every element has arrived: "" when they match, else why not, naming output o.
    std::string verdict(size_t o) const;

private:
    const Tensor& ref_;
    int64_t next_ = 0;            // elements compared so far
    double diff_ = 0, norm_ = 0;  // Σ (candidate − reference)², Σ reference², finite pairs
    int64_t bad_ = -1;            // the first element whose non-finite value differs
    double bad_value_ = 0;        // the candidate's value there
};

// A candidate output that arrives in pieces: its type and shape, and feed(c), which adds its
// elements to c in order (a GPU's output through a staging buffer).
struct CandidateOutput {
    DType dtype = DType::undefined;
    Shape shape;
    std::function<void(OutputComparison&)> feed;
};

// Empty when they match; else why not ("output 1: relative error 3.2e-2 > 1e-2").
std::string check_outputs(const std::vector<CandidateOutput>& candidate, const std::vector<Tensor>& reference);
std::string check_outputs(const std::vector<Tensor>& candidate, const std::vector<Tensor>& reference);

}  // namespace stof::tune
