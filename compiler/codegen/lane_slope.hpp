// How a generated C++ index expression moves with the vector lane: the kernels
// that process V consecutive elements per thread write the innermost output
// coordinate as `lane + k` and read an input with one vector load when its index
// is that input's index at k = 0 plus k.
#pragma once

#include <cstdint>
#include <string>

namespace stof::codegen {

// d(expr)/d(lane) for an expression of the kernels' index grammar (identifiers,
// integer literals, + - * / %, comparisons, ?:, calls, casts and subscripts):
// 0 when expr does not depend on `lane`, 1 when it is (lane-free terms) + lane,
// -1 for anything else, including what the grammar does not cover.
int lane_slope(const std::string& expr, const std::string& lane);

// Whether expr has slope 1 and is a multiple of `multiple` whenever `lane` is: each of
// its additive terms is the lane, an integer literal that is a multiple, or a product
// with such a factor. Then V = `multiple` lanes from a base that is a multiple of V
// stay inside one aligned block of V values of expr.
bool lane_aligned(const std::string& expr, const std::string& lane, int64_t multiple);

}  // namespace stof::codegen
