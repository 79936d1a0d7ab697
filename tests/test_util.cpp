#include "test_util.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>

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

std::mt19937_64 make_rng() {
    uint64_t seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (const char* s = std::getenv("STOF_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    UNSCOPED_INFO("random seed " << seed << " (replay with STOF_TEST_SEED=" << seed << ")");
    return std::mt19937_64(seed);
}

}  // namespace stof::test
