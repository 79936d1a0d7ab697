// 2-D convolution and transposed convolution over NCHW tensors, one thread per
// output element, fp32 accumulation (the reference: compiler/ops/conv*.cpp;
// geometry: ops/conv_geometry.hpp). The generated kernel supplies
//   float x(i64 i)            input element i of [batch, cin, h, w]
//   float w(i64 i)            weight element i: conv [cout, cin/group, kh, kw],
//                             transposed [cin, cout/group, kh, kw]
//   float bias(i64 oc)        bias of output channel oc (stof::Zero when absent)
//   void out(i64 i, float v)  output element i of [batch, cout, oh, ow]
#pragma once

#include "stof/loop.cuh"

namespace stof {

// In the field order of ir::ops::ConvGeom; Idx is the index type (int where every index fits).
template <class Idx> struct ConvGeom {
    Idx batch, cin, h, w, cout, kh, kw, oh, ow, group;
    Idx sh, sw, dh, dw, pt, pl;
};

// f(i, n, oc, oy, ox) for every output element i = ((n·cout + oc)·oh + oy)·ow + ox.
template <class Idx, class F> __device__ __forceinline__ void for_each_output(const ConvGeom<Idx>& c, const F& f) {
    grid_stride<Idx>(c.batch * c.cout * c.oh * c.ow,
                     [&](Idx i) { f(i, i / (c.ow * c.oh * c.cout), i / (c.ow * c.oh) % c.cout, i / c.ow % c.oh, i % c.ow); });
}

// out[n, oc, oy, ox] = bias[oc] + Σ x[n, g·cin/group + ic, oy·sh - pt + ky·dh, ox·sw - pl + kx·dw] · w[oc, ic, ky, kx]
template <class Idx, class X, class W, class Bias, class Out>
__device__ void conv2d(const ConvGeom<Idx>& c, const X& x, const W& w, const Bias& bias, const Out& out) {
    const Idx cin_g = c.cin / c.group, cout_g = c.cout / c.group;
    for_each_output(c, [&](Idx i, Idx n, Idx oc, Idx oy, Idx ox) {
        float acc = bias(oc);
        const Idx cbase = (oc / cout_g) * cin_g;
        for (Idx ic = 0; ic < cin_g; ++ic) {
            for (Idx ky = 0; ky < c.kh; ++ky) {
                const Idx iy = oy * c.sh - c.pt + ky * c.dh;
                if (iy < 0 || iy >= c.h) continue;
                for (Idx kx = 0; kx < c.kw; ++kx) {
                    const Idx ix = ox * c.sw - c.pl + kx * c.dw;
                    if (ix < 0 || ix >= c.w) continue;
                    acc += x(((n * c.cin + cbase + ic) * c.h + iy) * c.w + ix) * w(((oc * cin_g + ic) * c.kh + ky) * c.kw + kx);
                }
            }
        }
        out(i, acc);
    });
}

// The transpose: output (oy, ox) gathers input (iy, ix) where oy = iy·sh - pt + ky·dh.
template <class Idx, class X, class W, class Bias, class Out>
__device__ void conv_transpose2d(const ConvGeom<Idx>& c, const X& x, const W& w, const Bias& bias, const Out& out) {
    const Idx cin_g = c.cin / c.group, cout_g = c.cout / c.group;
    for_each_output(c, [&](Idx i, Idx n, Idx o, Idx oy, Idx ox) {
        float acc = bias(o);
        const Idx grp = o / cout_g, oc = o % cout_g;
        for (Idx ky = 0; ky < c.kh; ++ky) {
            const Idx ty = oy + c.pt - ky * c.dh;
            if (ty < 0 || ty % c.sh != 0 || ty / c.sh >= c.h) continue;
            for (Idx kx = 0; kx < c.kw; ++kx) {
                const Idx tx = ox + c.pl - kx * c.dw;
                if (tx < 0 || tx % c.sw != 0 || tx / c.sw >= c.w) continue;
                for (Idx ic = 0; ic < cin_g; ++ic) {
                    const Idx ci = grp * cin_g + ic;
                    acc += x(((n * c.cin + ci) * c.h + ty / c.sh) * c.w + tx / c.sw) *
                           w(((ci * cout_g + oc) * c.kh + ky) * c.kw + kx);
                }
            }
        }
        out(i, acc);
    });
}

}  // namespace stof
