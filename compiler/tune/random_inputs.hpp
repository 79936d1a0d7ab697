// The tuning worker's random data (tune/measure.hpp states the distributions): element i
// of a stream is a hash of (seed, i), so any element is drawn without the ones before it
// and a (tensor, seed) pair has the same contents on every machine and thread count.
#pragma once

#include "stof/plan.hpp"
#include "stof/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <string>

namespace stof::tune {

// Element i of the random stream `seed` (splitmix64 of the pair).
uint64_t draw(uint64_t seed, uint64_t i);
// draw(seed, i) as a double uniform in [-1, 1).
double draw_unit(uint64_t seed, uint64_t i);

// Contents for a plan input described by t: floats uniform in [-1, 1] (element i from
// draw(seed, i)), integers in [int_lo, int_hi] (zeros when int_lo > int_hi: no known
// range), bools 0 or 1.
Tensor random_input(const plan::TensorDesc& t, uint64_t seed);

// random_input(t, seed) kept for later plans with the same input (a segment's candidates
// and its reference share theirs), at most max_bytes of them, the least recently used
// dropped first. get's reference is valid until the next get.
class InputCache {
public:
    explicit InputCache(size_t max_bytes = default_bytes());
    const Tensor& get(const plan::TensorDesc& t, uint64_t seed);
    size_t bytes() const { return bytes_; }
    int64_t generated() const { return generated_; }  // random_input calls so far
    // An eighth of this machine's memory, between 1 and 8 GiB.
    static size_t default_bytes();

private:
    struct Entry {
        std::string key;
        Tensor value;
    };
    std::list<Entry> entries_;  // most recently used first
    std::map<std::string, std::list<Entry>::iterator> index_;
    size_t max_bytes_, bytes_ = 0;
    int64_t generated_ = 0;
};

}  // namespace stof::tune
