// lane_slope and lane_aligned: which generated index expressions a vector load may read.
#include "codegen/lane_slope.hpp"
#include "test_util.hpp"

using stof::codegen::lane_slope;

TEST_CASE("lane_slope: additive lane terms move by one, anything else is unknown", "[cpu][codegen]") {
    const char* lane = "lane_";
    CHECK(lane_slope("lane_", lane) == 1);
    CHECK(lane_slope("(c0 * 512 + lane_)", lane) == 1);
    CHECK(lane_slope("(c0 * 512 + (lane_ + 384))", lane) == 1);
    CHECK(lane_slope("((c1 * 64 + lane_) - 3LL)", lane) == 1);
    CHECK(lane_slope("(c0 * 512 + c1)", lane) == 0);
    CHECK(lane_slope("stof::to_int(p2[(c0 + 1)]) * 64", lane) == 0);
    CHECK(lane_slope("static_cast<stof::i64>(c0) * 8 + lane_", lane) == 1);
    // Not contiguous in the lane, or not provably so.
    CHECK(lane_slope("(lane_ * 2)", lane) == -1);
    CHECK(lane_slope("((lane_) % 64)", lane) == -1);
    CHECK(lane_slope("(lane_ / 64)", lane) == -1);
    CHECK(lane_slope("(c0 - lane_)", lane) == -1);
    CHECK(lane_slope("(lane_ + lane_)", lane) == -1);
    CHECK(lane_slope("(lane_ < 32 ? lane_ : 0)", lane) == -1);
    CHECK(lane_slope("p1[lane_]", lane) == -1);
    CHECK(lane_slope("static_cast<int>(lane_)", lane) == -1);
    CHECK(lane_slope("-lane_", lane) == -1);
    // A longer identifier is not the lane; malformed text is unknown.
    CHECK(lane_slope("(lane_x + 1)", lane) == 0);
    CHECK(lane_slope("(lane_ + ", lane) == -1);
    CHECK(lane_slope("lane_ @ 2", lane) == -1);
}

TEST_CASE("lane_aligned: the lane plus multiples of V stays in one aligned block of V", "[cpu][codegen]") {
    using stof::codegen::lane_aligned;
    const char* lane = "lane_";
    CHECK(lane_aligned("lane_", lane, 8));
    CHECK(lane_aligned("(c2 * 64 + lane_)", lane, 8));
    CHECK(lane_aligned("((c1 * 16 + lane_) + 64)", lane, 8));
    CHECK(lane_aligned("((c1 * 16 + lane_) - 32LL)", lane, 8));
    CHECK(lane_aligned("(64 * c2 + lane_)", lane, 4));
    // A term that is not provably a multiple of V, or a slope other than 1.
    CHECK_FALSE(lane_aligned("(c1 * 12 + lane_)", lane, 8));
    CHECK_FALSE(lane_aligned("((c1 * 16 + lane_) + 6)", lane, 4));
    CHECK_FALSE(lane_aligned("(c2 + lane_)", lane, 4));
    CHECK_FALSE(lane_aligned("((c2 * 64) / 2 + lane_)", lane, 8));
    CHECK_FALSE(lane_aligned("((c2 * 64) % 48 + lane_)", lane, 8));
    CHECK_FALSE(lane_aligned("(c2 * 64)", lane, 8));
    CHECK_FALSE(lane_aligned("(lane_ * 8)", lane, 8));
    CHECK_FALSE(lane_aligned("(lane_ + 8.0f)", lane, 8));
    CHECK_FALSE(lane_aligned("lane_", lane, 0));
}
