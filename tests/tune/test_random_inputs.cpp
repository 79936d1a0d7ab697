// The tuning worker's random inputs: each element is the stream's element for its index,
// in range for its type; the cache returns what it generated and drops the least recently
// used past its bound; padding masks are all ones.
#include "catch.hpp"
#include "tune/random_inputs.hpp"

#include <cmath>

using namespace stof;

namespace {

plan::TensorDesc desc(DType t, Shape shape, int64_t lo = 0, int64_t hi = -1) {
    plan::TensorDesc d;
    d.dtype = t;
    d.shape = std::move(shape);
    d.int_lo = lo;
    d.int_hi = hi;
    return d;
}

}  // namespace

TEST_CASE("random inputs: element i of stream (seed, i), in range for the type", "[cpu][tune]") {
    CHECK(tune::draw(5, 3) == tune::draw(5, 3));
    CHECK(tune::draw(5, 3) != tune::draw(5, 4));
    CHECK(tune::draw(5, 3) != tune::draw(6, 3));
    CHECK(tune::draw_unit(5, 3) == static_cast<double>(tune::draw(5, 3) >> 11) * 0x1p-52 - 1.0);
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
        INFO(dtype_name(t));
        const Tensor x = tune::random_input(desc(t, {3, 1000}), 9);
        Tensor expected(t, {3, 1000});
        double lo = 1, hi = -1;
        for (int64_t i = 0; i < x.numel(); ++i) {
            expected.set_f64(i, static_cast<double>(tune::draw(9, static_cast<uint64_t>(i)) >> 11) * 0x1p-52 - 1.0);
            lo = std::min(lo, x.get_f64(i));
            hi = std::max(hi, x.get_f64(i));
        }
        CHECK(x.bytes == expected.bytes);
        CHECK(lo >= -1);
        CHECK(lo < -0.9);
        CHECK(hi <= 1);
        CHECK(hi > 0.9);
    }
    const Tensor ids = tune::random_input(desc(DType::i64, {5000}, 3, 7), 1);
    std::vector<int> seen(8, 0);
    for (int64_t i = 0; i < ids.numel(); ++i) {
        const int64_t v = ids.get_i64(i);
        REQUIRE(v >= 3);
        REQUIRE(v <= 7);
        CHECK(v == 3 + static_cast<int64_t>(tune::draw(1, static_cast<uint64_t>(i)) % 5));
        ++seen[static_cast<size_t>(v)];
    }
    for (int v = 3; v <= 7; ++v) CHECK(seen[static_cast<size_t>(v)] > 800);
    const Tensor unknown = tune::random_input(desc(DType::i32, {100}), 1);  // no known range: zeros
    for (int64_t i = 0; i < unknown.numel(); ++i) CHECK(unknown.get_i64(i) == 0);
    const Tensor bits = tune::random_input(desc(DType::boolean, {1000}), 2);
    int64_t ones = 0;
    for (int64_t i = 0; i < bits.numel(); ++i) ones += bits.get_i64(i);
    CHECK(ones > 400);
    CHECK(ones < 600);
}

TEST_CASE("padding masks are timed all ones (stof::full): every element 1 in its type", "[cpu][tune]") {
    for (DType t : {DType::i64, DType::i32, DType::boolean, DType::f32, DType::f16}) {
        INFO(dtype_name(t));
        const Tensor x = full(t, {2, 300}, 1.0);
        REQUIRE(x.numel() == 600);
        for (int64_t i = 0; i < x.numel(); ++i) REQUIRE(x.get_f64(i) == 1.0);
    }
}

TEST_CASE("random inputs: the cache keeps the most recently used within its bound", "[cpu][tune]") {
    const plan::TensorDesc t = desc(DType::f32, {256});  // 1 KiB each
    tune::InputCache cache(3 * 1024);
    const Tensor a = cache.get(t, 1);
    CHECK(a.bytes == tune::random_input(t, 1).bytes);
    cache.get(t, 2);
    cache.get(t, 3);
    CHECK(cache.generated() == 3);
    CHECK(cache.bytes() == 3 * 1024);
    CHECK(cache.get(t, 1).bytes == a.bytes);  // kept, and now the most recently used
    CHECK(cache.generated() == 3);
    cache.get(t, 4);  // drops seed 2, the least recently used
    CHECK(cache.generated() == 4);
    CHECK(cache.bytes() == 3 * 1024);
    cache.get(t, 1);
    cache.get(t, 3);
    CHECK(cache.generated() == 4);
    cache.get(t, 2);
    CHECK(cache.generated() == 5);
    // A tensor larger than the bound is still returned; it replaces everything.
    const Tensor& big = cache.get(desc(DType::f32, {4096}), 1);
    CHECK(big.numel() == 4096);
    CHECK(cache.bytes() == 4096 * 4);
    CHECK(tune::InputCache::default_bytes() >= size_t{1} << 30);
    CHECK(tune::InputCache::default_bytes() <= size_t{8} << 30);
}
