// Geometry of Conv and ConvTranspose nodes (1-D and 2-D; 1-D as H = 1),
// shared by the reference evaluation and the code generator.
#pragma once

#include "ir/graph.hpp"

namespace stof::ir::ops {

// Geometry of a 1-D or 2-D (transposed) convolution, treating 1-D as H = 1.
// Conv weight: [C_out, C_in / group, kH, kW]; ConvTranspose: [C_in, C_out / group, kH, kW].
struct ConvGeom {
    int64_t batch, cin, h, w, cout, kh, kw, oh, ow, group;
    int64_t sh, sw, dh, dw, pt, pl;
};

// Throws stof::Error naming the node when the attributes and shapes disagree.
ConvGeom conv_geometry(const Node& n, const Shape& x, const Shape& w);
ConvGeom conv_transpose_geometry(const Node& n, const Shape& x, const Shape& w);

}  // namespace stof::ir::ops
