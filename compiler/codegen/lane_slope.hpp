// How a generated C++ index expression moves with the vector lane: the kernels
// that process V consecutive elements per thread write the innermost output
// coordinate as `lane + k` and read an input with one vector load when its index
// is that input's index at k = 0 plus k.
#pragma once

#include <string>

namespace stof::codegen {

// d(expr)/d(lane) for an expression of the kernels' index grammar (identifiers,
// integer literals, + - * / %, comparisons, ?:, calls, casts and subscripts):
// 0 when expr does not depend on `lane`, 1 when it is (lane-free terms) + lane,
// -1 for anything else, including what the grammar does not cover.
int lane_slope(const std::string& expr, const std::string& lane);

}  // namespace stof::codegen
