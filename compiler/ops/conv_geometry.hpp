// Geometry of Conv and ConvTranspose nodes (1-D and 2-D; 1-D as H = 1),
// shared by the reference evaluation and the code generator.
#pragma once

#include "ir/graph.hpp"

namespace stof::ir::ops {

// Conv geometry for 1-D or 2-D convolution, treating 1-D as H = 1.
struct ConvGeom {
    int64_t batch, cin, h, w, cout, kh, kw, oh, ow, group;
    int64_t sh, sw, dh, dw, pt, pl;
};

// ConvTranspose geometry (1-D or 2-D; 1-D as H = 1). Weight: [C_in, C_out / group, kH, kW].
struct ConvTGeom {
    int64_t batch, cin, h, w, cout, kh, kw, oh, ow, group, sh, sw, dh, dw, pt, pl;
};

// Throws stof::Error naming the node when the attributes and shapes disagree.
ConvGeom conv_geometry(const Node& n, const Shape& x, const Shape& w);
ConvTGeom conv_transpose_geometry(const Node& n, const Shape& x, const Shape& w);

}  // namespace stof::ir::ops
