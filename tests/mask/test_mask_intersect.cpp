// intersect_masks: the sparse format of the entrywise AND of two masks, with
// broadcast batch and head patterns, equal to from_dense of the dense AND.
#include "mask/mask_intersect.hpp"
#include "random_keep.hpp"
#include "test_rng.hpp"
#include "test_util.hpp"

using namespace stof;

TEST_CASE("intersect_masks equals the dense AND, patterns broadcast", "[cpu][mask]") {
    std::mt19937_64 rng = test::make_rng();
    struct Case {
        int64_t rows, cols, ba, ha, bb, hb;
    };
    for (const Case c : {Case{64, 64, 1, 1, 1, 1}, Case{100, 37, 1, 1, 1, 1}, Case{130, 200, 1, 2, 1, 1},
                         Case{129, 65, 2, 1, 1, 3}, Case{70, 150, 2, 2, 2, 2}}) {
        INFO(c.rows << "x" << c.cols << " patterns " << c.ba << "x" << c.ha << " & " << c.bb << "x" << c.hb);
        const std::vector<uint8_t> ka = test::random_keep(rng, c.ba * c.ha, c.rows, c.cols, 64, 64);
        const std::vector<uint8_t> kb = test::random_keep(rng, c.bb * c.hb, c.rows, c.cols, 64, 64);
        const SparseMask a = from_dense(ka.data(), int32_t(c.ba), int32_t(c.ha), int32_t(c.rows), int32_t(c.cols));
        const SparseMask b = from_dense(kb.data(), int32_t(c.bb), int32_t(c.hb), int32_t(c.rows), int32_t(c.cols));
        const int64_t B = std::max(c.ba, c.bb), H = std::max(c.ha, c.hb), plane = c.rows * c.cols;
        std::vector<uint8_t> both(static_cast<size_t>(B * H * plane));
        for (int64_t x = 0; x < B; ++x)
            for (int64_t y = 0; y < H; ++y)
                for (int64_t e = 0; e < plane; ++e) {
                    const int64_t pa = (c.ba == 1 ? 0 : x) * c.ha + (c.ha == 1 ? 0 : y);
                    const int64_t pb = (c.bb == 1 ? 0 : x) * c.hb + (c.hb == 1 ? 0 : y);
                    both[static_cast<size_t>((x * H + y) * plane + e)] = ka[static_cast<size_t>(pa * plane + e)] &&
                                                                         kb[static_cast<size_t>(pb * plane + e)];
                }
        const SparseMask got = intersect_masks(a, b);
        got.validate();
        const SparseMask want = from_dense(both.data(), int32_t(B), int32_t(H), int32_t(c.rows), int32_t(c.cols));
        CHECK(got.mask_batch == want.mask_batch);
        CHECK(got.mask_heads == want.mask_heads);
        CHECK(got.row_ptr == want.row_ptr);
        CHECK(got.col_idx == want.col_idx);
        CHECK(got.bitmap_idx == want.bitmap_idx);
        CHECK(got.bitmaps == want.bitmaps);
    }
    SparseMask a = from_dense(std::vector<uint8_t>(64 * 64, 1).data(), 1, 1, 64, 64);
    const SparseMask b = from_dense(std::vector<uint8_t>(64 * 32, 1).data(), 1, 1, 64, 32);
    test::require_error([&] { intersect_masks(a, b); }, "intersecting masks");
}
