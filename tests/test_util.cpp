#include "test_util.hpp"

namespace stof::test {

Tensor random_tensor(DType dt, const Shape& shape, std::mt19937_64& rng) {
    Tensor t(dt, shape);
    std::normal_distribution<double> normal;
    std::uniform_int_distribution<int64_t> ints(-50, 50);
    for (int64_t i = 0; i < t.numel(); ++i) {
        if (is_float(dt)) t.set_f64(i, normal(rng));
        else if (dt == DType::boolean) t.set_i64(i, ints(rng) & 1);
        else t.set_i64(i, ints(rng));
    }
    return t;
}

}  // namespace stof::test
