#include "ops/conv_geometry.hpp"

#include "stof/error.hpp"

namespace stof::ir::ops {

namespace {

// The spatial fields of g from per-axis vectors of 1 or 2 entries (pads: begins, then ends).
void set_spatial(ConvGeom& g, const std::vector<int64_t>& in, const std::vector<int64_t>& ks, const std::vector<int64_t>& out,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dil, const std::vector<int64_t>& pads) {
    const size_t sp = in.size();
    const bool two = sp == 2;
    g.h = two ? in[0] : 1;
    g.w = in[sp - 1];
    g.kh = two ? ks[0] : 1;
    g.kw = ks[sp - 1];
    g.oh = two ? out[0] : 1;
    g.ow = out[sp - 1];
    g.sh = two ? strides[0] : 1;
    g.sw = strides[sp - 1];
    g.dh = two ? dil[0] : 1;
    g.dw = dil[sp - 1];
    g.pt = two ? pads[0] : 0;
    g.pl = pads[sp - 1];
}

// Strides and dilations in 1..2^20, pads (and output paddings) in 0..2^20.
void check_window(const Node& n, const std::vector<int64_t>& strides, const std::vector<int64_t>& dil,
                  const std::vector<int64_t>& pads) {
    constexpr int64_t kMax = int64_t{1} << 20;
    for (size_t d = 0; d < strides.size(); ++d)
        STOF_CHECK(strides[d] >= 1 && strides[d] <= kMax && dil[d] >= 1 && dil[d] <= kMax,
                   "{}: stride {} and dilation {} along axis {} must be in 1..{}", n.label(), strides[d], dil[d], d, kMax);
    for (int64_t p : pads) STOF_CHECK(p >= 0 && p <= kMax, "{}: padding {} is not in 0..{}", n.label(), p, kMax);
}

}  // namespace

ConvGeom conv_geometry(const Node& n, const Shape& x, const Shape& wt) {
    const size_t sp = x.size() - 2;
    STOF_CHECK((x.size() == 3 || x.size() == 4) && wt.size() == x.size(),
               "{}: only 1-D and 2-D convolutions are supported (input {}, weight {})", n.label(), shape_str(x), shape_str(wt));
    ConvGeom g{};
    g.batch = x[0];
    g.cin = x[1];
    g.cout = wt[0];
    g.group = n.attrs.i("group", 1);
    STOF_CHECK(g.group >= 1 && g.cin % g.group == 0 && g.cout % g.group == 0 && wt[1] * g.group == g.cin,
               "{}: channels {} / weight {} do not match group {}", n.label(), g.cin, shape_str(wt), g.group);
    const std::vector<int64_t> ks = n.attrs.ints("kernel_shape", std::vector<int64_t>(wt.begin() + 2, wt.end()));
    STOF_CHECK(ks == std::vector<int64_t>(wt.begin() + 2, wt.end()), "{}: kernel_shape disagrees with the weight", n.label());
    const std::vector<int64_t> strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    const std::vector<int64_t> dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    std::vector<int64_t> pads = n.attrs.ints("pads", std::vector<int64_t>(2 * sp, 0));
    STOF_CHECK(strides.size() == sp && dil.size() == sp && pads.size() == 2 * sp, "{}: strides/dilations/pads rank mismatch",
               n.label());
    check_window(n, strides, dil, pads);
    const std::string auto_pad = n.attrs.s("auto_pad", "NOTSET");
    const std::vector<int64_t> in_sp(x.begin() + 2, x.end());
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        for (size_t d = 0; d < sp; ++d) {
            const int64_t out = (in_sp[d] + strides[d] - 1) / strides[d];
            const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (ks[d] - 1) * dil[d] + 1 - in_sp[d]);
            pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            pads[d + sp] = total - pads[d];
        }
    } else if (auto_pad == "VALID") {
        std::fill(pads.begin(), pads.end(), 0);
    } else {
        STOF_CHECK(auto_pad == "NOTSET", "{}: auto_pad '{}' is not supported", n.label(), auto_pad);
    }
    std::vector<int64_t> outs(sp);
    for (size_t d = 0; d < sp; ++d) {
        outs[d] = (in_sp[d] + pads[d] + pads[d + sp] - dil[d] * (ks[d] - 1) - 1) / strides[d] + 1;
        STOF_CHECK(outs[d] > 0, "{}: the kernel does not fit the padded input", n.label());
    }
    set_spatial(g, in_sp, ks, outs, strides, dil, pads);
    return g;
}

ConvGeom conv_transpose_geometry(const Node& n, const Shape& x, const Shape& wt) {
    const size_t sp = x.size() - 2;
    STOF_CHECK((x.size() == 3 || x.size() == 4) && wt.size() == x.size(),
               "{}: only 1-D and 2-D transposed convolutions are supported (input {}, weight {})", n.label(), shape_str(x),
               shape_str(wt));
    ConvGeom g{};
    g.batch = x[0];
    g.cin = x[1];
    g.group = n.attrs.i("group", 1);
    STOF_CHECK(g.group >= 1 && wt[0] == g.cin && g.cin % g.group == 0, "{}: weight {} does not match {} input channels",
               n.label(), shape_str(wt), g.cin);
    g.cout = wt[1] * g.group;
    const std::vector<int64_t> ks(wt.begin() + 2, wt.end());
    STOF_CHECK(n.attrs.ints("kernel_shape", ks) == ks, "{}: kernel_shape disagrees with the weight", n.label());
    const std::vector<int64_t> strides = n.attrs.ints("strides", std::vector<int64_t>(sp, 1));
    const std::vector<int64_t> dil = n.attrs.ints("dilations", std::vector<int64_t>(sp, 1));
    const std::vector<int64_t> outpad = n.attrs.ints("output_padding", std::vector<int64_t>(sp, 0));
    std::vector<int64_t> pads = n.attrs.ints("pads", std::vector<int64_t>(2 * sp, 0));
    STOF_CHECK(strides.size() == sp && dil.size() == sp && outpad.size() == sp && pads.size() == 2 * sp,
               "{}: strides/dilations/pads rank mismatch", n.label());
    check_window(n, strides, dil, pads);
    check_window(n, strides, dil, outpad);
    STOF_CHECK(!n.attrs.has("output_shape") && n.attrs.s("auto_pad", "NOTSET") == "NOTSET",
               "{}: output_shape and auto_pad are not supported", n.label());
    const std::vector<int64_t> in_sp(x.begin() + 2, x.end());
    std::vector<int64_t> outs(sp);
    for (size_t d = 0; d < sp; ++d) {
        outs[d] = strides[d] * (in_sp[d] - 1) + outpad[d] + ((ks[d] - 1) * dil[d] + 1) - pads[d] - pads[d + sp];
        STOF_CHECK(outs[d] > 0, "{}: output size {} along axis {} is not positive", n.label(), outs[d], d);
    }
    set_spatial(g, in_sp, ks, outs, strides, dil, pads);
    return g;
}

}  // namespace stof::ir::ops
