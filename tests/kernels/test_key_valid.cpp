// launch_key_valid: padding masks to validity words, unfolded and folded (stof/kernels/key_valid.hpp).
#include "catch.hpp"
#include "gpu_util.hpp"
#include "test_rng.hpp"
#include "stof/kernels/key_valid.hpp"

#include <cstdint>
#include <vector>

using stof::kernels::launch_key_valid;

TEST_CASE("key_valid refuses bad sizes and folds before launching", "[cpu][kernels]") {
    uint64_t words[4];
    const uint8_t mask[8] = {};
    CHECK(launch_key_valid(mask, 1, 1, 8, words, nullptr, 0) == cudaErrorInvalidValue);
    CHECK(launch_key_valid(mask, 1, 1, 8, words, nullptr, 3) == cudaErrorInvalidValue);
    CHECK(launch_key_valid(mask, 3, 1, 8, words, nullptr, 1) == cudaErrorInvalidValue);
    CHECK(launch_key_valid(nullptr, 1, 1, 8, words, nullptr, 1) == cudaErrorInvalidValue);
}

TEST_CASE("key_valid packs every key's bit, in the folded layout too", "[gpu][kernels]") {
    STOF_REQUIRE_GPU();
    auto rng = stof::test::make_rng();
    const int B = 3, S = 1000;
    std::vector<int64_t> mask(static_cast<size_t>(B) * S);
    for (int64_t& m : mask) m = rng() % 5 != 0;
    stof::test::DeviceBuffer d_mask(mask.size() * 8);
    stof::test::upload(d_mask, mask);
    for (const int fold : {1, 4, 8}) {
        INFO("fold " << fold);
        const int fs = S / fold, per_row = (fs + 63) / 64;
        const size_t n = static_cast<size_t>(fold) * B * per_row;
        std::vector<uint64_t> want(n, 0);
        for (int r = 0; r < fold; ++r)
            for (int b = 0; b < B; ++b)
                for (int j = 0; j < fs; ++j)
                    if (mask[static_cast<size_t>(b) * S + j * fold + r])
                        want[(static_cast<size_t>(r) * B + b) * per_row + j / 64] |= uint64_t{1} << (j % 64);
        stof::test::DeviceBuffer d_words(n * 8);
        CUDA_REQUIRE(cudaMemset(d_words.ptr, 0xA5, n * 8));  // every word must be written
        CUDA_REQUIRE(launch_key_valid(d_mask.ptr, 8, B, S, static_cast<uint64_t*>(d_words.ptr), nullptr, fold));
        CUDA_REQUIRE(cudaDeviceSynchronize());
        CHECK(stof::test::download<uint64_t>(d_words.ptr, n) == want);
    }
}
