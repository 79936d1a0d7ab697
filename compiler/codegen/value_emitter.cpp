#include "codegen/value_emitter.hpp"

#include "codegen/lane_slope.hpp"
#include "precision.hpp"
#include "ops/op_util.hpp"
#include "stof/error.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

namespace stof::codegen {

using ir::Op;

namespace {

bool is_simple(const std::string& code) {
    for (char c : code)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
    return true;
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
}

std::string add_offset(const std::string& c, int64_t off) {
    if (off == 0) return c;
    if (c == "0") return std::to_string(off);
    return fmt::format("({} {} {})", c, off < 0 ? "-" : "+", off < 0 ? -off : off);
}

std::string scale_coord(const std::string& c, int64_t step) {
    if (step == 1 || c == "0") return c;
    return fmt::format("({} * {})", c, step);
}

// N when coordinate c is the vector lane plus N (`lane_`, `(lane_ + N)` or `(lane_ - N)`, as
// add_offset writes them); nothing for any other coordinate.
std::optional<int64_t> lane_offset(const std::string& c) {
    const std::string lane(ValueEmitter::kLane);
    if (c == lane) return 0;
    for (const char* op : {" + ", " - "}) {
        const std::string head = "(" + lane + op;
        if (c.size() > head.size() + 1 && c.compare(0, head.size(), head) == 0 && c.back() == ')') {
            const std::string num = c.substr(head.size(), c.size() - head.size() - 1);
            if (num.empty() || num.size() > 18 || num.find_first_not_of("0123456789") != std::string::npos) return {};
            const int64_t v = std::stoll(num);
            return op[1] == '+' ? v : -v;
        }
    }
    return {};
}

// Values of a small integer constant input (axes, starts, ...).
std::vector<int64_t> const_ints(const ir::Graph& g, const ir::Node& n, size_t k) {
    std::vector<int64_t> v;
    if (k >= n.inputs.size() || n.inputs[k] == ir::kNoValue) return v;
    const ir::Value& val = g.value(n.inputs[k]);
    STOF_CHECK(val.data, "{}: input {} must be a compile-time constant", n.label(), k);
    for (int64_t i = 0; i < val.data->numel(); ++i) v.push_back(val.data->get_i64(i));
    return v;
}

}  // namespace

Expr as_float(const Expr& e) {
    if (e.type == Scalar::f) return e;
    if (e.type == Scalar::i) return {fmt::format("static_cast<float>({})", e.code), Scalar::f};
    return {fmt::format("({} ? 1.0f : 0.0f)", e.code), Scalar::f};
}

Expr as_int(const Expr& e) {
    if (e.type == Scalar::i) return e;
    if (e.type == Scalar::f) return {fmt::format("static_cast<stof::i64>({})", e.code), Scalar::i};
    return {fmt::format("({} ? 1LL : 0LL)", e.code), Scalar::i};
}

Expr as_bool(const Expr& e) {
    if (e.type == Scalar::b) return e;
    return {fmt::format("({} != {})", e.code, e.type == Scalar::f ? "0.0f" : "0LL"), Scalar::b};
}

void emit_vector_loop(KernelBuilder& kb, ValueEmitter& em, int v, const std::string& lane_base, const std::string& index_type,
                      const std::string& indent, const std::vector<std::pair<std::string, std::function<Expr()>>>& outputs) {
    std::vector<std::string> body = kb.body();
    const size_t mark = body.size();
    std::vector<std::string> results;
    for (const auto& [name, compute] : outputs)
        results.push_back(fmt::format("{}[{}] = {};", name, ValueEmitter::kVecStep, as_float(compute()).code));
    body = kb.body();
    const std::vector<std::string> loop(body.begin() + static_cast<std::ptrdiff_t>(mark), body.end());
    body.resize(mark);
    kb.set_body(std::move(body));
    for (const std::string& l : em.take_preloads()) kb.line(indent + l);
    for (const auto& out : outputs) kb.line(fmt::format("{}float {}[{}];", indent, out.first, v));
    kb.line(indent + "#pragma unroll");
    kb.line(fmt::format("{0}for (int {1} = 0; {1} < {2}; ++{1}) {{", indent, ValueEmitter::kVecStep, v));
    const bool lane_used = std::any_of(loop.begin(), loop.end(),
                                       [](const std::string& l) { return l.find(ValueEmitter::kLane) != std::string::npos; }) ||
                           std::any_of(results.begin(), results.end(),
                                       [](const std::string& l) { return l.find(ValueEmitter::kLane) != std::string::npos; });
    if (lane_used)
        kb.line(fmt::format("{}    const {} {} = {} + {};", indent, index_type, ValueEmitter::kLane, lane_base,
                            ValueEmitter::kVecStep));
    for (const std::string& l : loop) kb.line("    " + l);
    for (const std::string& r : results) kb.line(indent + "    " + r);
    kb.line(indent + "}");
}

std::vector<std::string> delinearize(const std::string& i, const Shape& shape) {
    const std::vector<int64_t> st = ir::ops::strides_of(shape);
    std::vector<std::string> c(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) {
            c[d] = "0";
            continue;
        }
        std::string e = st[d] == 1 ? i : fmt::format("{} / {}", i, st[d]);
        if (d > 0) e = fmt::format("({}) % {}", e, shape[d]);
        c[d] = "(" + e + ")";
    }
    return c;
}

std::vector<std::string> broadcast_coords(const Shape& in, const Shape& out, const std::vector<std::string>& c) {
    std::vector<std::string> r(in.size());
    const size_t off = out.size() - in.size();
    for (size_t d = 0; d < in.size(); ++d) r[d] = in[d] == 1 ? "0" : c[off + d];
    return r;
}

std::string ValueEmitter::linear_index(const Shape& shape, const std::vector<std::string>& coords) {
    const std::vector<int64_t> st = ir::ops::strides_of(shape);
    // Coordinates and the result are parenthesized unless atomic: callers
    // scale and offset the result (a merged reshape group is one coordinate).
    auto atomic = [](const std::string& e) { return e.find_first_of(" +-*/%?:<>") == std::string::npos; };
    std::string s;
    int terms = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1 || coords[d] == "0") continue;
        const std::string c = atomic(coords[d]) ? coords[d] : "(" + coords[d] + ")";
        const std::string term = st[d] == 1 ? c : fmt::format("{} * {}", c, st[d]);
        s += (s.empty() ? "" : " + ") + term;
        ++terms;
    }
    return s.empty() ? "0" : terms == 1 && st.back() == 1 && atomic(s) ? s : "(" + s + ")";
}

Expr ValueEmitter::hoist(const Expr& e) {
    if (is_simple(e.code)) return e;
    if (conditional_ > 0 || (vec_ > 1 && e.type == Scalar::i)) return {"(" + e.code + ")", e.type};
    const std::string name = kb_.fresh("t");
    const char* type = e.type == Scalar::f ? "float" : e.type == Scalar::i ? "stof::i64" : "bool";
    kb_.line(fmt::format("{}const {} {} = {};", indent_, type, name, e.code));
    return {name, e.type};
}

Expr ValueEmitter::load(ir::ValueId v, const std::vector<std::string>& coords) {
    const ir::Value& val = st_.g.value(v);
    const Scalar s = scalar_of(val.dtype);
    if (val.data && val.data->numel() == 1) {
        if (s == Scalar::f) return {literal(val.data->get_f64(0), s), s};
        return {s == Scalar::b ? literal(static_cast<double>(val.data->get_i64(0)), s) : literal_int(val.data->get_i64(0)), s};
    }
    const int32_t t = st_.tensor(v);
    const plan::TensorDesc& td = st_.plan.tensors[static_cast<size_t>(t)];
    const std::string p = kb_.tensor(t, td.dtype, false);
    const std::string index = linear_index(val.shape, coords);
    std::string elem = fmt::format("{}[{}]", p, index);
    if (vec_ > 1 && conditional_ == static_cast<int>(guards_.size()) && s == Scalar::f && lane_slope(index, kLane) == 1) {
        std::string guard;
        for (const std::string& g : guards_) guard += (guard.empty() ? "" : " && ") + g;
        auto [it, fresh] = vector_loads_.try_emplace(guard + "|" + elem, "");
        if (fresh) {
            it->second = kb_.fresh("v");
            preloads_.push_back(fmt::format("alignas(16) {} {}[{}];", c_type(td.dtype), it->second, vec_));
            const std::string ld = fmt::format("stof::load_vec<{}>({} + {}, {});", vec_, p, at_lane_base(index), it->second);
            preloads_.push_back(guard.empty() ? ld : fmt::format("if ({}) {}", guard, ld));
        }
        elem = fmt::format("{}[{}]", it->second, kVecStep);
    }
    if (s == Scalar::f) return {fmt::format("stof::to_float({})", elem), s};
    if (s == Scalar::i) return {fmt::format("stof::to_int({})", elem), s};
    return {fmt::format("(stof::to_int({}) != 0)", elem), s};
}

std::string ValueEmitter::at_lane_base(const std::string& expr) const {
    const std::string lane(kLane);
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::string base;
    for (size_t i = 0; i < expr.size();) {
        const size_t end = i + lane.size();
        if (expr.compare(i, lane.size(), lane) == 0 && (i == 0 || !word(expr[i - 1])) &&
            (end == expr.size() || !word(expr[end]))) {
            base += "(" + lane_base_ + ")";
            i = end;
        } else {
            base += expr[i++];
        }
    }
    return base;
}

Expr ValueEmitter::at(ir::ValueId v, const std::vector<std::string>& coords) {
    const std::string key = std::to_string(v) + "@" + join(coords);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    const ir::Value& val = st_.g.value(v);
    Expr e = (val.data || !st_.inlined[static_cast<size_t>(v)]) ? load(v, coords) : compute(v, coords);
    if (conditional_ == 0) {
        e = hoist(e);
        memo_[key] = e;
    }
    return e;
}

Expr ValueEmitter::compute(ir::ValueId v, const std::vector<std::string>& coords) {
    const int p = st_.producer[static_cast<size_t>(v)];
    STOF_CHECK(p >= 0, "internal: '{}' has no producer to compute it", st_.g.value(v).name);
    const ir::Node& n = st_.g.nodes[static_cast<size_t>(p)];
    size_t out = 0;
    while (n.outputs[out] != v) ++out;
    return node_value(n, out, coords);
}

Expr ValueEmitter::input_at(const ir::Node& n, size_t k, const std::vector<std::string>& c, const Shape& out_shape) {
    const ir::ValueId in = n.inputs[k];
    return at(in, broadcast_coords(st_.g.value(in).shape, out_shape, c));
}

Expr ValueEmitter::node_value(const ir::Node& n, size_t out, const std::vector<std::string>& c) {
    const ir::Graph& g = st_.g;
    const Shape& os = g.value(n.outputs[out]).shape;
    const Scalar os_kind = scalar_of(g.value(n.outputs[out]).dtype);
    auto in = [&](size_t k) { return input_at(n, k, c, os); };
    auto f1 = [&](const char* fn) { return Expr{fmt::format("{}({})", fn, as_float(in(0)).code), Scalar::f}; };
    auto arith = [&](const char* op) {
        Expr a = in(0), b = in(1);
        if (a.type == Scalar::f || b.type == Scalar::f) {
            a = as_float(a);
            b = as_float(b);
        }
        return Expr{fmt::format("({} {} {})", a.code, op, b.code), a.type};
    };
    auto compare = [&](const char* op) {
        Expr a = in(0), b = in(1);
        if (a.type != b.type) {
            a = as_float(a);
            b = as_float(b);
        }
        return Expr{fmt::format("({} {} {})", a.code, op, b.code), Scalar::b};
    };
    if (const char* expr = ir::op_info(n.op).device_expr) {
        const std::string_view e(expr);
        Expr x = as_float(in(0));
        if (e.find("{0}") != e.rfind("{0}")) x = hoist(x);
        return {fmt::format(fmt::runtime(e), x.code), Scalar::f};
    }
    switch (n.op) {
        case Op::Identity: return in(0);
        case Op::Abs: {
            const Expr x = hoist(in(0));
            if (x.type == Scalar::f) return {fmt::format("fabsf({})", x.code), Scalar::f};
            return {fmt::format("({0} < 0 ? -{0} : {0})", x.code), Scalar::i};
        }
        case Op::Neg: {
            const Expr x = in(0);
            return {fmt::format("(-{})", x.code), x.type};
        }
        case Op::Relu: {
            const Expr x = hoist(in(0));
            if (x.type == Scalar::f) return {fmt::format("fmaxf({}, 0.0f)", x.code), Scalar::f};
            return {fmt::format("({0} > 0 ? {0} : 0LL)", x.code), Scalar::i};
        }
        case Op::Sign: {
            const Expr x = in(0);
            return {fmt::format("stof::sign({})", x.code), x.type == Scalar::f ? Scalar::f : Scalar::i};
        }
        case Op::Gelu: return f1(n.attrs.s("approximate", "none") == "tanh" ? "stof::gelu_tanh" : "stof::gelu_erf");
        case Op::IsNaN: {
            const Expr x = hoist(as_float(in(0)));
            return {fmt::format("({0} != {0})", x.code), Scalar::b};
        }
        case Op::IsInf: {
            const Expr x = hoist(as_float(in(0)));
            const bool neg = n.attrs.i("detect_negative", 1) != 0, pos = n.attrs.i("detect_positive", 1) != 0;
            return {fmt::format("((fabsf({0}) == __int_as_float(0x7f800000)) && ({0} > 0.0f ? {1} : {2}))", x.code,
                                pos ? "true" : "false", neg ? "true" : "false"),
                    Scalar::b};
        }
        case Op::Not: return {fmt::format("(!{})", as_bool(in(0)).code), Scalar::b};
        case Op::Cast: {
            const Expr x = in(0);
            const auto to = static_cast<DType>(n.attrs.i("to", 0));
            if (to == DType::f16) return {fmt::format("stof::round_f16({})", as_float(x).code), Scalar::f};
            if (to == DType::bf16) return {fmt::format("stof::round_bf16({})", as_float(x).code), Scalar::f};
            if (is_float(to)) return as_float(x);
            if (to == DType::boolean) return as_bool(x);
            const Expr i = as_int(x);
            if (to == DType::i32) return {fmt::format("static_cast<stof::i64>(static_cast<int>({}))", i.code), Scalar::i};
            if (to == DType::i8)
                return {fmt::format("static_cast<stof::i64>(static_cast<signed char>({}))", i.code), Scalar::i};
            if (to == DType::u8)
                return {fmt::format("static_cast<stof::i64>(static_cast<unsigned char>({}))", i.code), Scalar::i};
            return i;
        }
        case Op::Clip: {
            Expr x = in(0);
            const bool flt = x.type == Scalar::f;
            const char* lo_fn = flt ? "fmaxf" : "stof::nan_max";
            const char* hi_fn = flt ? "fminf" : "stof::nan_min";
            if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue) {
                const Expr lo = at(n.inputs[1], {});
                x = {fmt::format("{}({}, {})", lo_fn, x.code, flt ? as_float(lo).code : as_int(lo).code), x.type};
            }
            if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue) {
                const Expr hi = at(n.inputs[2], {});
                x = {fmt::format("{}({}, {})", hi_fn, x.code, flt ? as_float(hi).code : as_int(hi).code), x.type};
            }
            return x;
        }
        case Op::Add: return arith("+");
        case Op::Sub: return arith("-");
        case Op::Mul: return arith("*");
        case Op::Div: return arith("/");
        case Op::Pow: {
            const ir::Value& e = g.value(n.inputs[1]);
            if (e.data && e.data->numel() == 1) {
                const double p = e.data->get_f64(0);
                const Expr b = hoist(as_float(in(0)));
                if (p == 1.0) return b;
                if (p == 2.0) return {fmt::format("({0} * {0})", b.code), Scalar::f};
                if (p == 3.0) return {fmt::format("({0} * {0} * {0})", b.code), Scalar::f};
                if (p == 0.5) return {fmt::format("sqrtf({})", b.code), Scalar::f};
                if (p == -1.0) return {fmt::format("(1.0f / {})", b.code), Scalar::f};
            }
            const Expr r{fmt::format("powf({}, {})", as_float(in(0)).code, as_float(in(1)).code), Scalar::f};
            return os_kind == Scalar::f ? r : as_int(r);
        }
        case Op::Mod: {
            Expr a = in(0), b = in(1);
            const bool fmod = n.attrs.i("fmod", 0) != 0;
            if (a.type == Scalar::f) {
                b = as_float(b);
                return {fmt::format("{}({}, {})", fmod ? "fmodf" : "stof::floor_mod", a.code, b.code), Scalar::f};
            }
            if (fmod) return {fmt::format("({} % {})", a.code, as_int(b).code), Scalar::i};
            return {fmt::format("stof::floor_mod({}, {})", a.code, as_int(b).code), Scalar::i};
        }
        case Op::Min:
        case Op::Max: {
            Expr acc = in(0);
            for (size_t k = 1; k < n.inputs.size(); ++k) {
                Expr b = in(k);
                if (acc.type == Scalar::f) b = as_float(b);
                acc = {fmt::format("stof::{}({}, {})", n.op == Op::Min ? "nan_min" : "nan_max", acc.code, b.code), acc.type};
            }
            return acc;
        }
        case Op::Equal: return compare("==");
        case Op::Less: return compare("<");
        case Op::LessOrEqual: return compare("<=");
        case Op::Greater: return compare(">");
        case Op::GreaterOrEqual: return compare(">=");
        case Op::And: return {fmt::format("({} && {})", as_bool(in(0)).code, as_bool(in(1)).code), Scalar::b};
        case Op::Or: return {fmt::format("({} || {})", as_bool(in(0)).code, as_bool(in(1)).code), Scalar::b};
        case Op::Xor: return {fmt::format("({} != {})", as_bool(in(0)).code, as_bool(in(1)).code), Scalar::b};
        case Op::Where: {
            const Expr cnd = as_bool(in(0));
            Expr a = in(1), b = in(2);
            if (a.type != b.type) {
                a = as_float(a);
                b = as_float(b);
            }
            return {fmt::format("({} ? {} : {})", cnd.code, a.code, b.code), a.type};
        }
        case Op::BatchNormalization: {
            // y = x * a[c] + b[c] with a = scale / sqrt(var + eps), b = bias - mean * a (folded here).
            const int64_t channels = g.value(n.inputs[0]).shape[1];
            const double eps = n.attrs.f("epsilon", 1e-5);
            Tensor a(DType::f32, {channels}), b(DType::f32, {channels});
            for (int64_t ch = 0; ch < channels; ++ch) {
                auto val = [&](size_t k) { return g.value(n.inputs[k]).data->get_f64(ch); };
                for (size_t k = 1; k < 5; ++k)
                    STOF_CHECK(g.value(n.inputs[k]).data, "{}: scale, bias, mean and variance must be constants", n.label());
                const double s = val(1) / std::sqrt(val(4) + eps);
                a.set_f64(ch, s);
                b.set_f64(ch, val(2) - val(3) * s);
            }
            const std::string pa = kb_.tensor(st_.add_weight(to_plan_precision(a, Precision::fp32), n.name + "_scale"),
                                              DType::f32, false);
            const std::string pb = kb_.tensor(st_.add_weight(to_plan_precision(b, Precision::fp32), n.name + "_shift"),
                                              DType::f32, false);
            return {fmt::format("fmaf({}, {}[{}], {}[{}])", as_float(at(n.inputs[0], c)).code, pa, c[1], pb, c[1]), Scalar::f};
        }
        case Op::Rotary: {
            // ops/rotary.cpp: y[r, c] = x[r, c]·cos[p, e] + (e < h ? −x[r, c + h] : x[r, c − h])·sin[p, e] for
            // c < R (e = c % D, p = r % P), x[r, c] for c >= R; r the row over the leading dims. The partner
            // x[r, c ± h] is read in a branch (its column is out of range when not taken).
            const size_t last = os.size() - 1;
            const int64_t cols = os[last], d = n.attrs.i("head_dim", 0), rot = n.attrs.i("rot_cols", 0), h = d / 2;
            const int64_t positions = g.value(n.inputs[1]).shape[0];
            const std::string& col = c[last];
            // p: r % P from the smallest suffix of the leading dims whose size is a multiple of P.
            std::string p = "0";
            if (positions > 1) {
                size_t from = last;
                int64_t size = 1;
                while (from > 0 && size % positions != 0) size *= os[--from];
                const std::string r = linear_index(
                    Shape(os.begin() + static_cast<std::ptrdiff_t>(from), os.begin() + static_cast<std::ptrdiff_t>(last)),
                    std::vector<std::string>(c.begin() + static_cast<std::ptrdiff_t>(from),
                                             c.begin() + static_cast<std::ptrdiff_t>(last)));
                p = hoist({size == positions ? r : fmt::format("({} % {})", r, positions), Scalar::i}).code;
            }
            // Vector mode: when the row is lane-free and the column is the lane plus multiples of V, with
            // h a multiple of V, all V lanes take one branch (the same half of one head, on the same side
            // of R): the partner loads are vector loads guarded by that branch's condition at the base,
            // and e moves with the lane, so cos and sin are vector loads too.
            bool uniform = vec_ > 1 && h % vec_ == 0 && lane_aligned(col, kLane, vec_);
            for (size_t k = 0; uniform && k < last; ++k) uniform = lane_slope(c[k], kLane) == 0;
            const std::string cb = uniform ? at_lane_base(col) : "", eb = uniform ? fmt::format("({} % {})", cb, d) : "";
            std::string e = cols == d ? col : fmt::format("({} % {})", col, d);
            if (uniform && cols != d) e = fmt::format("({} + ({} - {}))", eb, kLane, lane_base_);
            e = hoist({e, Scalar::i}).code;
            const Expr x = hoist(as_float(at(n.inputs[0], c)));
            const Expr cs = as_float(at(n.inputs[1], {p, e})), sn = as_float(at(n.inputs[2], {p, e}));
            const int levels = rot < cols ? 2 : 1;  // inside c < R, then inside one half
            conditional_ += levels;
            if (uniform && rot < cols) guards_.push_back(fmt::format("({} < {})", cb, rot));
            if (uniform) guards_.push_back(fmt::format("({} < {})", eb, h));
            std::vector<std::string> pc = c;
            pc[last] = add_offset(col, h);
            const Expr lo = as_float(at(n.inputs[0], pc));  // e < h: x[r, c + h]
            if (uniform) guards_.back() = fmt::format("({} >= {})", eb, h);
            pc[last] = add_offset(col, -h);
            const Expr hi = as_float(at(n.inputs[0], pc));  // e >= h: x[r, c - h]
            if (uniform) guards_.resize(guards_.size() - static_cast<size_t>(levels));
            conditional_ -= levels;
            const std::string y = fmt::format("({} * {} + ({} < {} ? -{} : {}) * {})", x.code, cs.code, e, h, lo.code, hi.code,
                                              sn.code);
            if (rot == cols) return {y, Scalar::f};
            return {fmt::format("({} < {} ? {} : {})", col, rot, y, x.code), Scalar::f};
        }

        // Layout ops: index maps from output coordinates to input coordinates.
        case Op::Reshape:
        case Op::Flatten:
        case Op::Squeeze:
        case Op::Unsqueeze: {
            // Split the dims into groups of equal size on both sides (a reshape only
            // regroups dims); within a group, linearise over the output dims and
            // delinearise over the input dims.
            const Shape& is = g.value(n.inputs[0]).shape;
            std::vector<std::string> ic(is.size(), "0");
            size_t i0 = 0, o0 = 0;
            while (i0 < is.size() || o0 < os.size()) {
                size_t i1 = i0, o1 = o0;
                int64_t pi = 1, po = 1;
                if (i1 < is.size()) pi *= is[i1++];
                if (o1 < os.size()) po *= os[o1++];
                while (pi != po) {
                    if (pi < po && i1 < is.size()) pi *= is[i1++];
                    else if (o1 < os.size()) po *= os[o1++];
                    else break;
                }
                while (i1 < is.size() && is[i1] == 1) ++i1;
                while (o1 < os.size() && os[o1] == 1) ++o1;
                const Shape og(os.begin() + static_cast<std::ptrdiff_t>(o0), os.begin() + static_cast<std::ptrdiff_t>(o1));
                const Shape ig(is.begin() + static_cast<std::ptrdiff_t>(i0), is.begin() + static_cast<std::ptrdiff_t>(i1));
                const std::vector<std::string> oc(c.begin() + static_cast<std::ptrdiff_t>(o0),
                                                  c.begin() + static_cast<std::ptrdiff_t>(o1));
                std::string lin = linear_index(og, oc);
                std::vector<std::string> sub;
                if (ig.size() <= 1 || std::count_if(ig.begin(), ig.end(), [](int64_t d) { return d != 1; }) <= 1) {
                    for (int64_t d : ig) sub.push_back(d == 1 ? "0" : lin);
                } else {
                    const Expr l = hoist({lin, Scalar::i});
                    sub = delinearize(l.code, ig);
                }
                for (size_t k = 0; k < sub.size(); ++k) ic[i0 + k] = sub[k];
                i0 = i1;
                o0 = o1;
            }
            return at(n.inputs[0], ic);
        }
        case Op::Transpose: {
            const size_t rank = os.size();
            std::vector<int64_t> perm = n.attrs.ints("perm", {});
            if (perm.empty())
                for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(rank - 1 - d));
            std::vector<std::string> ic(rank);
            for (size_t d = 0; d < rank; ++d)
                ic[static_cast<size_t>(perm[d] < 0 ? perm[d] + static_cast<int64_t>(rank) : perm[d])] = c[d];
            return at(n.inputs[0], ic);
        }
        case Op::Slice: {
            const Shape& is = g.value(n.inputs[0]).shape;
            const std::vector<int64_t> starts = const_ints(g, n, 1), ends = const_ints(g, n, 2);
            std::vector<int64_t> axes = const_ints(g, n, 3), steps = const_ints(g, n, 4);
            if (axes.empty())
                for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
            if (steps.empty()) steps.assign(starts.size(), 1);
            std::vector<std::string> ic = c;
            for (size_t i = 0; i < axes.size(); ++i) {
                const auto a = static_cast<size_t>(axes[i] < 0 ? axes[i] + static_cast<int64_t>(is.size()) : axes[i]);
                const int64_t dim = is[a], step = steps[i];
                int64_t s = starts[i];
                if (s < 0) s += dim;
                s = step > 0 ? std::min(std::max<int64_t>(s, 0), dim) : std::min(std::max<int64_t>(s, 0), dim - 1);
                ic[a] = add_offset(scale_coord(c[a], step), s);
            }
            return at(n.inputs[0], ic);
        }
        case Op::Split: {
            const auto axis = static_cast<size_t>(
                n.attrs.i("axis", 0) < 0 ? n.attrs.i("axis", 0) + static_cast<int64_t>(os.size()) : n.attrs.i("axis", 0));
            int64_t offset = 0;
            for (size_t k = 0; k < out; ++k) offset += g.value(n.outputs[k]).shape[axis];
            std::vector<std::string> ic = c;
            ic[axis] = add_offset(c[axis], offset);
            return at(n.inputs[0], ic);
        }
        case Op::Concat: {
            const auto axis = static_cast<size_t>(
                n.attrs.i("axis", 0) < 0 ? n.attrs.i("axis", 0) + static_cast<int64_t>(os.size()) : n.attrs.i("axis", 0));
            // Along the lane's axis, at an offset and with part boundaries that are multiples of
            // V, every lane of a vector takes the same part: its loads stay vector loads.
            const std::optional<int64_t> lane_at = lane_offset(c[axis]);
            bool uniform = vec_ > 1 && lane_at && *lane_at % vec_ == 0;
            for (size_t k = 0; uniform && k < n.inputs.size(); ++k) uniform = g.value(n.inputs[k]).shape[axis] % vec_ == 0;
            const std::string x = uniform ? at_lane_base(c[axis]) : "";
            ++conditional_;
            std::vector<std::pair<int64_t, Expr>> parts;  // (end offset, value)
            int64_t offset = 0;
            for (size_t k = 0; k < n.inputs.size(); ++k) {
                const ir::ValueId v = n.inputs[k];
                std::vector<std::string> ic = c;
                ic[axis] = add_offset(c[axis], -offset);
                const int64_t end = offset + g.value(v).shape[axis];
                if (uniform) {
                    std::string cond;
                    if (k > 0) cond = fmt::format("{} >= {}", x, offset);
                    if (k + 1 < n.inputs.size()) cond += fmt::format("{}{} < {}", cond.empty() ? "" : " && ", x, end);
                    guards_.push_back("(" + (cond.empty() ? std::string("true") : cond) + ")");
                }
                parts.push_back({end, at(v, ic)});
                if (uniform) guards_.pop_back();
                offset = end;
            }
            --conditional_;
            Scalar kind = parts[0].second.type;
            for (auto& p : parts)
                if (p.second.type != kind) kind = Scalar::f;
            std::string code = kind == Scalar::f ? as_float(parts.back().second).code : parts.back().second.code;
            for (size_t k = parts.size() - 1; k-- > 0;) {
                const std::string v = kind == Scalar::f ? as_float(parts[k].second).code : parts[k].second.code;
                code = fmt::format("({} < {} ? {} : {})", c[axis], parts[k].first, v, code);
            }
            return {code, kind};
        }
        case Op::Expand: return in(0);
        case Op::Tile: {
            const Shape& is = g.value(n.inputs[0]).shape;
            std::vector<std::string> ic(is.size());
            for (size_t d = 0; d < is.size(); ++d)
                ic[d] = is[d] == 1 ? "0" : (is[d] == os[d] ? c[d] : fmt::format("({} % {})", c[d], is[d]));
            return at(n.inputs[0], ic);
        }
        case Op::Gather: {
            const Shape& ds = g.value(n.inputs[0]).shape;
            const Shape& is = g.value(n.inputs[1]).shape;
            int64_t axis = n.attrs.i("axis", 0);
            if (axis < 0) axis += static_cast<int64_t>(ds.size());
            const auto a = static_cast<size_t>(axis);
            std::vector<std::string> idx_c(c.begin() + static_cast<std::ptrdiff_t>(a),
                                           c.begin() + static_cast<std::ptrdiff_t>(a + is.size()));
            const Expr raw = hoist(as_int(at(n.inputs[1], idx_c)));
            const int64_t dim = ds[a];
            // Negative indices wrap; out-of-range indices are clamped (never read out of bounds).
            const Expr idx = hoist(
                {fmt::format("min(max({0} < 0 ? {0} + {1}LL : {0}, 0LL), {2}LL)", raw.code, dim, dim - 1), Scalar::i});
            std::vector<std::string> dc(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(a));
            dc.push_back(idx.code);
            dc.insert(dc.end(), c.begin() + static_cast<std::ptrdiff_t>(a + is.size()), c.end());
            return at(n.inputs[0], dc);
        }
        case Op::GatherElements: {
            const Shape& ds = g.value(n.inputs[0]).shape;
            int64_t axis = n.attrs.i("axis", 0);
            if (axis < 0) axis += static_cast<int64_t>(ds.size());
            const auto a = static_cast<size_t>(axis);
            const Expr raw = hoist(as_int(at(n.inputs[1], c)));
            const Expr idx = hoist(
                {fmt::format("min(max({0} < 0 ? {0} + {1}LL : {0}, 0LL), {2}LL)", raw.code, ds[a], ds[a] - 1), Scalar::i});
            std::vector<std::string> dc = c;
            dc[a] = idx.code;
            return at(n.inputs[0], dc);
        }
        case Op::GatherND: {
            const Shape& ds = g.value(n.inputs[0]).shape;
            const Shape& is = g.value(n.inputs[1]).shape;
            const auto b = static_cast<size_t>(n.attrs.i("batch_dims", 0));
            const auto q = static_cast<size_t>(is.back());
            const size_t lead = is.size() - 1;  // output coordinates that index `indices`
            std::vector<std::string> ic(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(lead));
            std::vector<std::string> dc(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(b));
            for (size_t k = 0; k < q; ++k) {
                ic.push_back(std::to_string(k));
                const Expr raw = hoist(as_int(at(n.inputs[1], ic)));
                ic.pop_back();
                const int64_t dim = ds[b + k];
                // Negative indices wrap; out-of-range indices are clamped (never read out of bounds).
                dc.push_back(
                    hoist({fmt::format("min(max({0} < 0 ? {0} + {1}LL : {0}, 0LL), {2}LL)", raw.code, dim, dim - 1), Scalar::i})
                        .code);
            }
            dc.insert(dc.end(), c.begin() + static_cast<std::ptrdiff_t>(lead), c.end());
            return at(n.inputs[0], dc);
        }
        case Op::Pad: {
            const Shape& is = g.value(n.inputs[0]).shape;
            const size_t rank = is.size();
            const std::vector<int64_t> pads = const_ints(g, n, 1);
            std::vector<int64_t> axes = const_ints(g, n, 3);
            if (axes.empty())
                for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
            std::vector<int64_t> begin(rank, 0);
            for (size_t i = 0; i < axes.size(); ++i)
                begin[static_cast<size_t>(axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i])] = pads[i];
            const std::string mode = n.attrs.s("mode", "constant");
            std::vector<std::string> ic(rank);
            std::string inside;
            for (size_t d = 0; d < rank; ++d) {
                const std::string x = add_offset(c[d], -begin[d]);
                if (begin[d] == 0 && os[d] == is[d]) {
                    ic[d] = c[d];
                    continue;
                }
                if (mode == "constant") {
                    ic[d] = x;
                    inside += fmt::format("{}({} >= 0 && {} < {})", inside.empty() ? "" : " && ", x, x, is[d]);
                } else if (mode == "edge") {
                    ic[d] = fmt::format("min(max(static_cast<stof::i64>({}), 0LL), {}LL)", x, is[d] - 1);
                } else if (mode == "wrap") {
                    ic[d] = fmt::format("stof::floor_mod(static_cast<stof::i64>({}), {}LL)", x, is[d]);
                } else {
                    STOF_CHECK(mode == "reflect", "{}: pad mode '{}' is not supported", n.label(), mode);
                    const int64_t period = std::max<int64_t>(2 * (is[d] - 1), 1);
                    const std::string m = fmt::format("stof::floor_mod(static_cast<stof::i64>({}), {}LL)", x, period);
                    ic[d] = fmt::format("({0} < {1} ? {0} : {2} - {0})", m, is[d], period);
                }
            }
            if (inside.empty()) return at(n.inputs[0], ic);
            ++conditional_;
            const Expr x = at(n.inputs[0], ic);
            --conditional_;
            const Expr cval = n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue ? at(n.inputs[2], {}) : Expr{"0", x.type};
            const std::string cv = x.type == Scalar::f   ? as_float(cval).code
                                   : x.type == Scalar::i ? as_int(cval).code
                                                         : as_bool(cval).code;
            return {fmt::format("(({}) ? {} : {})", inside, x.code, cv), x.type};
        }
        case Op::Trilu: {
            const size_t r = os.size();
            const int64_t k = n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue ? const_ints(g, n, 1).at(0) : 0;
            const bool upper = n.attrs.i("upper", 1) != 0;
            const Expr x = at(n.inputs[0], c);
            const std::string keep = fmt::format("({} - {} {} {})", c[r - 1], c[r - 2], upper ? ">=" : "<=", k);
            const std::string zero = x.type == Scalar::f ? "0.0f" : x.type == Scalar::i ? "0LL" : "false";
            return {fmt::format("({} ? {} : {})", keep, x.code, zero), x.type};
        }
        case Op::ConstantOfShape: {
            const Tensor* value = n.attrs.tensor("value");
            const Scalar s = scalar_of(value ? value->dtype : DType::f32);
            if (!value) return {"0.0f", Scalar::f};
            return {s == Scalar::f ? literal(value->get_f64(0), s) : literal_int(value->get_i64(0)), s};
        }
        case Op::Range: {
            const Expr start = at(n.inputs[0], {}), delta = at(n.inputs[2], {});
            if (os_kind == Scalar::f)
                return {fmt::format("({} + static_cast<float>({}) * {})", as_float(start).code, c[0], as_float(delta).code),
                        Scalar::f};
            return {fmt::format("({} + static_cast<stof::i64>({}) * {})", as_int(start).code, c[0], as_int(delta).code),
                    Scalar::i};
        }
        default: break;
    }
    STOF_FAIL("internal: {} cannot be computed inside a fused kernel", n.label());
}

}  // namespace stof::codegen
