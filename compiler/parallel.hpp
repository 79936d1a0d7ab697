// Work spread over the hardware's threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace stof {

// Runs f(i) for i in [0, n) on `threads` threads (0: the hardware's); f must be safe to run concurrently.
template <class F> void parallel_for(size_t n, F f, unsigned threads = 0) {
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < n; i = next++) f(i);
    };
    threads = std::min<unsigned>(threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency()),
                                 static_cast<unsigned>(std::min<size_t>(n, 1u << 16)));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
}

// [0, n) cut into chunk_count(n) chunks that depend on n alone, so per-chunk partial results
// combine in the same order on every machine.
inline size_t chunk_count(int64_t n) { return static_cast<size_t>(std::clamp<int64_t>(n / 65536, 1, 256)); }

// f(chunk, begin, end) for every chunk of [0, n), on the hardware's threads.
template <class F> void parallel_chunks(int64_t n, F f) {
    const size_t c = chunk_count(n);
    parallel_for(c, [&](size_t k) {
        f(k, n * static_cast<int64_t>(k) / static_cast<int64_t>(c), n * static_cast<int64_t>(k + 1) / static_cast<int64_t>(c));
    });
}

}  // namespace stof
