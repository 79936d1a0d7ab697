// Strided views: where each element of a value lies in the contiguous buffer
// of another, after a chain of layout ops (Reshape, Transpose, Expand, Split,
// Slice, scalar Gather ...). A view holds, per dim, its (size, stride) sub-dims
// outermost first; size-1 sub-dims are left out, so a size-1 dim has none.
// Element (i0, i1, ...) lies at offset + Σ sub-dim index · stride, with each
// dim's index split over its sub-dims row-major.
#pragma once

#include "ir/graph.hpp"

#include <optional>
#include <vector>

namespace stof::ir {

struct StridedDim {
    int64_t size, stride;
};

struct StridedView {
    std::vector<std::vector<StridedDim>> dims;
    int64_t offset = 0;
};

// A contiguous row-major value of shape s.
StridedView contiguous_view(const Shape& s);

// Merges adjacent sub-dims that step like one.
void normalize(StridedView& v);

// v read row-major as `shape`; nullopt when a sub-dim would have to be cut unevenly.
std::optional<StridedView> reshape_view(const StridedView& v, const Shape& shape);

// Dim `axis` of v narrowed to [start, start + size); nullopt unless it is one sub-dim.
std::optional<StridedView> narrow(StridedView v, size_t axis, int64_t start, int64_t size);

// Whether apply_layout knows op.
bool is_layout_op(Op op);

// The view of output `output` of layout node n, given the view v of its data
// input 0; nullopt when n is no layout op or its output is no strided view of v
// (a non-constant index, a step other than 1, an uneven reshape).
std::optional<StridedView> apply_layout(const Graph& g, const Node& n, size_t output, const StridedView& v);

}  // namespace stof::ir
