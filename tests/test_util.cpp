#include "test_util.hpp"

#include <cmath>

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

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

Tensor random_weights(const Shape& shape, int64_t fan_in, std::mt19937_64& rng) {
    Tensor t = random_tensor(DType::f32, shape, rng);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, t.get_f64(i) / std::sqrt(static_cast<double>(fan_in)));
    return t;
}

}  // namespace stof::test
