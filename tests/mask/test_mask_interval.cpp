#include "catch.hpp"
#include "mask/mask_interval.hpp"

#include <cmath>

using namespace stof;
using namespace stof::interval;

TEST_CASE("interval ops store their bounds as the op's dtype does", "[cpu][mask]") {
    const Iv two = point(2.0), range{2.0, 3.0, false}, ten = point(10.0);
    const Iv log2_f32 = apply(ir::Op::Log, DType::f32, &two, 1);
    CHECK(log2_f32.lo == double(float(std::log(2.0))));
    CHECK(log2_f32.hi == double(float(std::log(2.0))));
    const Iv logs = apply(ir::Op::Log, DType::f32, &range, 1);
    CHECK(logs.lo == double(float(std::log(2.0))));
    CHECK(logs.hi == double(float(std::log(3.0))));
    CHECK(apply(ir::Op::Log, DType::f64, &two, 1).lo == std::log(2.0));
    CHECK(apply(ir::Op::Log, DType::f16, &two, 1).lo == 0.693359375);  // the nearest half
    CHECK(apply(ir::Op::Log, DType::bf16, &two, 1).lo == 0.69140625);  // the nearest bfloat16
    const Iv by_ten[2] = {two, ten};
    CHECK(apply(ir::Op::Div, DType::f32, by_ten, 2).lo == double(0.2f));
    CHECK(apply(ir::Op::Div, DType::i64, by_ten, 2).lo == 0.0);
    // T5's bucket of distance 16: log(16 / 8) / log(16) * 8 is 2 in float32 arithmetic.
    const Iv ratio[2] = {apply(ir::Op::Log, DType::f32, &two, 1), point(double(float(std::log(16.0))))};
    const Iv steps[2] = {apply(ir::Op::Div, DType::f32, ratio, 2), point(8.0)};
    CHECK(apply(ir::Op::Mul, DType::f32, steps, 2).lo == 2.0);
}
