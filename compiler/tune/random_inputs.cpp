#include "tune/random_inputs.hpp"

#include "parallel.hpp"

#include <fmt/ranges.h>

#include <algorithm>

#include <unistd.h>

namespace stof::tune {

namespace {

// store(i, r) for every element i with r = draw(seed, i), on every core.
template <class Store> void fill(int64_t n, uint64_t seed, const Store& store) {
    parallel_chunks(n, [&](size_t, int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) store(i, draw(seed, static_cast<uint64_t>(i)));
    });
}

double unit(uint64_t r) { return static_cast<double>(r >> 11) * 0x1p-52 - 1.0; }

}  // namespace

uint64_t draw(uint64_t seed, uint64_t i) {
    uint64_t z = seed * 0xD1B54A32D192ED03ull + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double draw_unit(uint64_t seed, uint64_t i) { return unit(draw(seed, i)); }

Tensor random_input(const plan::TensorDesc& t, uint64_t seed) {
    Tensor x(t.dtype, t.shape);
    const int64_t n = x.numel();
    switch (t.dtype) {
        case DType::f32:
            fill(n, seed, [p = x.data<float>()](int64_t i, uint64_t r) { p[i] = static_cast<float>(unit(r)); });
            break;
        case DType::f64: fill(n, seed, [p = x.data<double>()](int64_t i, uint64_t r) { p[i] = unit(r); }); break;
        case DType::f16:
            fill(n, seed, [p = x.data<uint16_t>()](int64_t i, uint64_t r) { p[i] = f32_to_f16(static_cast<float>(unit(r))); });
            break;
        case DType::bf16:
            fill(n, seed, [p = x.data<uint16_t>()](int64_t i, uint64_t r) { p[i] = f32_to_bf16(static_cast<float>(unit(r))); });
            break;
        case DType::boolean: fill(n, seed, [&x](int64_t i, uint64_t r) { x.set_i64(i, static_cast<int64_t>(r & 1)); }); break;
        default: {
            if (t.int_lo > t.int_hi) break;  // no known range: zeros
            const uint64_t lo = static_cast<uint64_t>(t.int_lo), span = static_cast<uint64_t>(t.int_hi) - lo + 1;
            fill(n, seed, [&](int64_t i, uint64_t r) { x.set_i64(i, static_cast<int64_t>(lo + (span ? r % span : r))); });
        }
    }
    return x;
}

InputCache::InputCache(size_t max_bytes) : max_bytes_(max_bytes) {}

size_t InputCache::default_bytes() {
    constexpr size_t kGiB = size_t{1} << 30;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const size_t memory = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 8 * kGiB;
    return std::clamp(memory / 8, kGiB, 8 * kGiB);
}

const Tensor& InputCache::get(const plan::TensorDesc& t, uint64_t seed) {
    const std::string key = fmt::format("{}|{}|{}|{}|{}", dtype_name(t.dtype), fmt::join(t.shape, "x"), t.int_lo, t.int_hi,
                                        seed);
    if (auto it = index_.find(key); it != index_.end()) {
        entries_.splice(entries_.begin(), entries_, it->second);
        return it->second->value;
    }
    Tensor x = random_input(t, seed);
    ++generated_;
    while (!entries_.empty() && bytes_ + x.bytes.size() > max_bytes_) {
        bytes_ -= entries_.back().value.bytes.size();
        index_.erase(entries_.back().key);
        entries_.pop_back();
    }
    bytes_ += x.bytes.size();
    entries_.push_front({key, std::move(x)});
    index_[key] = entries_.begin();
    return entries_.front().value;
}

}  // namespace stof::tune
