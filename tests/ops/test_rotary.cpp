// The Rotary op (ops/rotary.cpp): its reference evaluation against rotate_half spelled out
// head by head, and the inputs and attributes its shape inference refuses.
#include "ir/graph.hpp"
#include "stof/compare.hpp"
#include "test_util.hpp"

#include <vector>

using namespace stof;

namespace {

ir::Node rotary(int64_t head_dim, int64_t rot_cols) {
    ir::Node n;
    n.op = ir::Op::Rotary;
    n.name = "rot";
    n.attrs.set("head_dim", head_dim);
    n.attrs.set("rot_cols", rot_cols);
    return n;
}

// Each head j of d columns below rot of row r: y = x·cos[p] + rotate_half(x)·sin[p], p = r % P,
// rotate_half(x) = (−x[h..d), x[0..h)); the columns from rot on copied.
Tensor spelled_out(const Tensor& x, const Tensor& cos, const Tensor& sin, int64_t d, int64_t rot) {
    const int64_t cols = x.shape.back(), rows = x.numel() / cols, positions = cos.shape[0], h = d / 2;
    Tensor y(x.dtype, x.shape);
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t p = r % positions;
        for (int64_t c = rot; c < cols; ++c) y.set_f64(r * cols + c, x.get_f64(r * cols + c));
        for (int64_t j = 0; j < rot / d; ++j) {
            std::vector<double> head(static_cast<size_t>(d)), half(static_cast<size_t>(d));
            for (int64_t e = 0; e < d; ++e) head[static_cast<size_t>(e)] = x.get_f64(r * cols + j * d + e);
            for (int64_t e = 0; e < h; ++e) {
                half[static_cast<size_t>(e)] = -head[static_cast<size_t>(e + h)];
                half[static_cast<size_t>(e + h)] = head[static_cast<size_t>(e)];
            }
            for (int64_t e = 0; e < d; ++e)
                y.set_f64(r * cols + j * d + e, head[static_cast<size_t>(e)] * cos.get_f64(p * d + e) +
                                                    half[static_cast<size_t>(e)] * sin.get_f64(p * d + e));
        }
    }
    return y;
}

std::vector<ir::InferInput> infer_inputs(const std::vector<const Tensor*>& in) {
    std::vector<ir::InferInput> r;
    for (const Tensor* t : in) r.push_back({true, t->dtype, t->shape, nullptr});
    return r;
}

}  // namespace

TEST_CASE("Rotary's reference equals rotate_half spelled out head by head", "[cpu][ops]") {
    auto rng = test::make_rng();
    struct Case {
        Shape x;
        int64_t d, rot, positions;
        DType dt;
    };
    // Rows as [B, S] with positions S or B·S, a 2-D x, partial columns, one position, 16-bit types.
    for (const Case& c : {Case{{2, 6, 48}, 8, 32, 6, DType::f32}, Case{{2, 6, 48}, 8, 48, 12, DType::f32},
                          Case{{12, 40}, 10, 20, 4, DType::f32}, Case{{3, 2, 5, 24}, 12, 24, 1, DType::f32},
                          Case{{2, 6, 32}, 16, 32, 6, DType::f16}, Case{{2, 6, 32}, 16, 16, 6, DType::bf16}}) {
        INFO("x " << shape_str(c.x) << " D " << c.d << " R " << c.rot << " P " << c.positions << " " << dtype_name(c.dt));
        const Tensor x = cast(test::random_tensor(DType::f32, c.x, rng), c.dt);
        const Tensor cos = cast(test::random_tensor(DType::f32, {c.positions, c.d}, rng), c.dt);
        const Tensor sin = cast(test::random_tensor(DType::f32, {c.positions, c.d}, rng), c.dt);
        const ir::Node n = rotary(c.d, c.rot);
        const ir::OpInfo& info = ir::op_info(ir::Op::Rotary);
        const std::vector<ir::TensorType> types = info.infer(n, infer_inputs({&x, &cos, &sin}));
        REQUIRE(types.size() == 1);
        CHECK(types[0].dtype == c.dt);
        CHECK(types[0].shape == c.x);
        const std::vector<Tensor> y = info.eval(n, {&x, &cos, &sin}, types);
        const Tensor want = spelled_out(x, cos, sin, c.d, c.rot);
        const Comparison cmp = compare(y.at(0), want, 1e-6, 1e-6);
        INFO(describe(cmp, want, 1e-6, 1e-6));
        CHECK(cmp.ok);
        // Columns from R on are x's own.
        for (int64_t r = 0; r < x.numel() / c.x.back(); ++r)
            for (int64_t col = c.rot; col < c.x.back(); ++col)
                CHECK(y[0].get_f64(r * c.x.back() + col) == x.get_f64(r * c.x.back() + col));
    }
}

TEST_CASE("Rotary's shape inference names what is wrong", "[cpu][ops]") {
    const ir::OpInfo& info = ir::op_info(ir::Op::Rotary);
    const Tensor x(DType::f32, {2, 6, 32}), table(DType::f32, {6, 8}), table16(DType::f16, {6, 8});
    const Tensor flat(DType::f32, {32}), wide(DType::f32, {6, 16}), ints(DType::i64, {2, 6, 32});
    auto infer = [&](const ir::Node& n, const Tensor& a, const Tensor& c, const Tensor& s) {
        return info.infer(n, infer_inputs({&a, &c, &s}));
    };
    CHECK(infer(rotary(8, 16), x, table, table).at(0).shape == x.shape);
    test::require_error([&] { infer(rotary(7, 14), x, table, table); }, "head_dim must be even");
    test::require_error([&] { infer(rotary(8, 12), x, table, table); }, "rot_cols must be a multiple of head_dim 8");
    test::require_error([&] { infer(rotary(8, 40), x, table, table); }, "in (0, 32]");
    test::require_error([&] { infer(rotary(8, 0), x, table, table); }, "rot_cols");
    test::require_error([&] { infer(rotary(8, 16), x, wide, table); }, "cos must be [positions, 8]");
    test::require_error([&] { infer(rotary(8, 16), x, table, table16); }, "sin is f16, x is f32");
    test::require_error([&] { infer(rotary(8, 16), flat, table, table); }, "rank 2 or more");
    test::require_error([&] { infer(rotary(8, 16), ints, table, table); }, "needs a float input");
}
