#include "mask/mask_interval.hpp"

#include <algorithm>
#include <cmath>

namespace stof::interval {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53: integers beyond are not exact as doubles

}  // namespace

Iv point(double x) {
    Iv r;
    if (std::isnan(x)) r.nan = true;
    else r.lo = r.hi = x;
    return r;
}
Iv top() { return {-kInf, kInf, true}; }
bool empty(const Iv& a) { return a.lo > a.hi; }
bool single(const Iv& a) { return a.lo == a.hi; }
// One value: a number or NaN.
bool exact(const Iv& a) { return a.nan ? empty(a) : single(a); }
// The value of an exact set.
double value(const Iv& a) { return a.nan ? std::numeric_limits<double>::quiet_NaN() : a.lo; }
Iv boolean(bool can_false, bool can_true) { return {can_false ? 0.0 : 1.0, can_true ? 1.0 : 0.0, false}; }
Iv hull(const Iv& a, const Iv& b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), a.nan || b.nan}; }

namespace {

// f over the corners of a x b: the bounds of + - * and of / away from 0.
template <class F> Iv corners(const Iv& a, const Iv& b, F f) {
    Iv r;
    r.nan = a.nan || b.nan;
    if (empty(a) || empty(b)) return r;
    for (double x : {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)}) {
        if (std::isnan(x)) {
            if (!(single(a) && single(b))) return top();
            r.nan = true;
            continue;
        }
        r.lo = std::min(r.lo, x);
        r.hi = std::max(r.hi, x);
    }
    return r;
}

// x stored as dtype t (rounding is monotone, so bounds stay bounds). The float rounding is
// out of line: GCC 12 at -O3 vectorises an inlined f32 round trip of both bounds and drops it.
double round_to(DType t, double x) { return is_float(t) ? round_to_float(t, x) : std::trunc(x); }

Iv stored_as(DType t, const Iv& a) {
    if (t == DType::boolean || empty(a)) return a;
    Iv r{round_to(t, a.lo), round_to(t, a.hi), a.nan};
    if (!is_float(t) && (r.nan || std::abs(r.lo) > kMaxExactInt || std::abs(r.hi) > kMaxExactInt)) return top();
    return r;
}

Iv less(const Iv& a, const Iv& b, bool or_equal) {
    bool can_true = false, can_false = a.nan || b.nan || empty(a) || empty(b);
    if (!empty(a) && !empty(b)) {
        can_true = or_equal ? a.lo <= b.hi : a.lo < b.hi;
        can_false = can_false || (or_equal ? a.hi > b.lo : a.hi >= b.lo);
    }
    return boolean(can_false, can_true);
}

Iv equal(const Iv& a, const Iv& b) {
    const bool both = !empty(a) && !empty(b);
    const bool can_true = both && a.lo <= b.hi && b.lo <= a.hi;
    const bool can_false = a.nan || b.nan || !both || !(single(a) && single(b) && a.lo == b.lo);
    return boolean(can_false, can_true);
}

Iv cast_to(DType t, const Iv& a) {
    if (t == DType::boolean) {
        const bool can_true = a.nan || (!empty(a) && !(a.lo == 0 && a.hi == 0));
        const bool can_false = !empty(a) && a.lo <= 0 && a.hi >= 0;
        return boolean(can_false, can_true);
    }
    if (!is_float(t) && (a.nan || std::isinf(a.lo) || std::isinf(a.hi))) return top();
    return stored_as(t, a);
}

}  // namespace

bool interval_op(ir::Op op) {
    switch (op) {
        case ir::Op::Add:
        case ir::Op::Sub:
        case ir::Op::Mul:
        case ir::Op::Div:
        case ir::Op::Neg:
        case ir::Op::Abs:
        case ir::Op::Log:
        case ir::Op::Min:
        case ir::Op::Max:
        case ir::Op::Equal:
        case ir::Op::Less:
        case ir::Op::LessOrEqual:
        case ir::Op::Greater:
        case ir::Op::GreaterOrEqual:
        case ir::Op::And:
        case ir::Op::Or:
        case ir::Op::Xor:
        case ir::Op::Not:
        case ir::Op::Where:
        case ir::Op::Cast:
        case ir::Op::Identity:
        case ir::Op::Expand:
        case ir::Op::Reshape:
        case ir::Op::Unsqueeze:
        case ir::Op::Squeeze: return true;
        default: return false;
    }
}

bool view_op(ir::Op op) {
    return op == ir::Op::Identity || op == ir::Op::Expand || op == ir::Op::Reshape || op == ir::Op::Unsqueeze ||
           op == ir::Op::Squeeze;
}

Iv apply(ir::Op op, DType dtype, const Iv* a, size_t k) {
    switch (op) {
        case ir::Op::Add: return stored_as(dtype, corners(a[0], a[1], [](double x, double y) { return x + y; }));
        case ir::Op::Sub: return stored_as(dtype, corners(a[0], a[1], [](double x, double y) { return x - y; }));
        case ir::Op::Mul: return stored_as(dtype, corners(a[0], a[1], [](double x, double y) { return x * y; }));
        case ir::Op::Div:
            if (!empty(a[1]) && a[1].lo <= 0 && a[1].hi >= 0 && !(is_float(dtype) && single(a[0]) && single(a[1])))
                return top();
            return stored_as(dtype, corners(a[0], a[1], [](double x, double y) { return x / y; }));
        case ir::Op::Neg: return {-a[0].hi, -a[0].lo, a[0].nan};
        case ir::Op::Log: {  // increasing on [0, inf]; NaN below 0 (computed as the reference does, in double)
            if (empty(a[0])) return a[0];
            Iv r{std::log(std::max(a[0].lo, 0.0)), std::log(std::max(a[0].hi, 0.0)), a[0].nan || a[0].lo < 0};
            if (a[0].hi < 0) r = Iv{kInf, -kInf, true};
            return stored_as(dtype, r);
        }
        case ir::Op::Abs:
            if (empty(a[0]) || a[0].lo >= 0) return a[0];
            if (a[0].hi <= 0) return {-a[0].hi, -a[0].lo, a[0].nan};
            return {0.0, std::max(-a[0].lo, a[0].hi), a[0].nan};
        case ir::Op::Min:
        case ir::Op::Max: {
            Iv r = a[0];
            for (size_t i = 1; i < k; ++i) {
                if (r.nan || a[i].nan) return top();
                r = op == ir::Op::Min ? Iv{std::min(r.lo, a[i].lo), std::min(r.hi, a[i].hi), false}
                                      : Iv{std::max(r.lo, a[i].lo), std::max(r.hi, a[i].hi), false};
            }
            return r;
        }
        case ir::Op::Equal: return equal(a[0], a[1]);
        case ir::Op::Less: return less(a[0], a[1], false);
        case ir::Op::LessOrEqual: return less(a[0], a[1], true);
        case ir::Op::Greater: return less(a[1], a[0], false);
        case ir::Op::GreaterOrEqual: return less(a[1], a[0], true);
        case ir::Op::And: return boolean(a[0].lo == 0 || a[1].lo == 0, a[0].hi == 1 && a[1].hi == 1);
        case ir::Op::Or: return boolean(a[0].lo == 0 && a[1].lo == 0, a[0].hi == 1 || a[1].hi == 1);
        case ir::Op::Xor:
            if (single(a[0]) && single(a[1])) return point(a[0].lo != a[1].lo);
            return boolean(true, true);
        case ir::Op::Not: return boolean(a[0].hi == 1, a[0].lo == 0);
        case ir::Op::Where:
            if (a[0].lo == 1) return a[1];
            if (a[0].hi == 0) return a[2];
            return hull(a[1], a[2]);
        case ir::Op::Cast: return cast_to(dtype, a[0]);
        default: return a[0];  // views
    }
}

}  // namespace stof::interval
