// Padding into and cutting out of shape buckets (runtime/exec/padded_copy.hpp): the box
// copy tables the runtime builds (merged dimensions, unit widths, one table per 16
// tensors), and the box copy kernel (kernels/box_copy) against a host reference on random
// shapes, element sizes and alignments, outputs poisoned first.
#include "catch.hpp"
#include "exec/padded_copy.hpp"
#include "gpu_util.hpp"
#include "stof/error.hpp"
#include "test_rng.hpp"
#include "test_util.hpp"

#include <cstring>

using namespace stof;

namespace {

void* at(uintptr_t address) { return reinterpret_cast<void*>(address); }

std::vector<int64_t> dims(const int64_t* d, int32_t rank) { return std::vector<int64_t>(d, d + rank); }

// dst (dst_shape) = src (src_shape) where the coordinate lies inside src_shape, else zero bytes.
std::vector<uint8_t> reference(const std::vector<uint8_t>& src, const Shape& src_shape, const Shape& dst_shape, size_t elem) {
    std::vector<uint8_t> dst(static_cast<size_t>(numel(dst_shape)) * elem, 0);
    const size_t rank = dst_shape.size();
    std::vector<int64_t> c(rank, 0);
    for (int64_t i = 0; i < numel(dst_shape); ++i) {
        int64_t rest = i, s = 0;
        bool inside = true;
        for (size_t d = rank; d-- > 0;) {
            c[d] = rest % dst_shape[d];
            rest /= dst_shape[d];
        }
        for (size_t d = 0; d < rank; ++d) {
            inside = inside && c[d] < src_shape[d];
            s = s * src_shape[d] + c[d];
        }
        if (inside) std::memcpy(dst.data() + static_cast<size_t>(i) * elem, src.data() + static_cast<size_t>(s) * elem, elem);
    }
    return dst;
}

// A random tensor padded or cut: rank 1..4, at most two dimensions differing (as with batch
// and sequence ranges), elements of 1, 2, 4 or 8 bytes, byte offsets of 0..3 elements.
struct RandomCopy {
    Shape src_shape, dst_shape;
    size_t elem = 0, src_off = 0, dst_off = 0;
    std::vector<uint8_t> src;
};
RandomCopy random_copy(std::mt19937_64& rng) {
    RandomCopy c;
    const int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    const bool pad = rng() % 2;
    c.elem = size_t{1} << std::uniform_int_distribution<int>(0, 3)(rng);
    for (int d = 0; d < rank; ++d) {
        const int64_t big = std::uniform_int_distribution<int64_t>(1, rank > 2 ? 9 : 300)(rng);
        const int64_t small = d < 2 ? std::uniform_int_distribution<int64_t>(0, big)(rng) : big;
        c.src_shape.push_back(pad ? small : big);
        c.dst_shape.push_back(pad ? big : small);
    }
    c.src_off = c.elem * std::uniform_int_distribution<size_t>(0, 3)(rng);
    c.dst_off = c.elem * std::uniform_int_distribution<size_t>(0, 3)(rng);
    c.src.resize(static_cast<size_t>(numel(c.src_shape)) * c.elem);
    for (uint8_t& b : c.src) b = static_cast<uint8_t>(rng());
    return c;
}

}  // namespace

TEST_CASE("box copy entries: dimensions merged, the widest unit, empty copies left out", "[cpu][shapes]") {
    kernels::BoxCopyEntry e;
    // Hidden states [1, 200, 128] fp16 into the bucket [1, 256, 128]: one run of 16-byte units.
    REQUIRE(exec::box_copy_entry({at(0x1000), {1, 200, 128}, at(0x100000), {1, 256, 128}, 2}, e));
    CHECK(e.rank == 1);
    CHECK(e.unit_bytes == 16);
    CHECK(dims(e.src_dims, 1) == std::vector<int64_t>{200 * 128 * 2 / 16});
    CHECK(dims(e.dst_dims, 1) == std::vector<int64_t>{256 * 128 * 2 / 16});
    CHECK(e.src == at(0x1000));
    CHECK(e.dst == at(0x100000));
    // Token ids [2, 77] int64 into [2, 128]: rows of 616 bytes, so 8-byte units.
    REQUIRE(exec::box_copy_entry({at(0x1000), {2, 77}, at(0x2000), {2, 128}, 8}, e));
    CHECK(e.rank == 2);
    CHECK(e.unit_bytes == 8);
    CHECK(dims(e.src_dims, 2) == std::vector<int64_t>{2, 77});
    CHECK(dims(e.dst_dims, 2) == std::vector<int64_t>{2, 128});
    // Cutting [2, 77, 128] fp32 out of [2, 128, 128]: the hidden dimension joins the sequence.
    REQUIRE(exec::box_copy_entry({at(0x1000), {2, 128, 128}, at(0x90000), {2, 77, 128}, 4}, e));
    CHECK(e.rank == 2);
    CHECK(e.unit_bytes == 16);
    CHECK(dims(e.src_dims, 2) == std::vector<int64_t>{2, 128 * 128 * 4 / 16});
    CHECK(dims(e.dst_dims, 2) == std::vector<int64_t>{2, 77 * 128 * 4 / 16});
    // A dimension that differs between two equal ones; an address aligned to 2 bytes only.
    REQUIRE(exec::box_copy_entry({at(0x1002), {3, 5, 8}, at(0x4000), {3, 6, 8}, 2}, e));
    CHECK(e.rank == 2);
    CHECK(e.unit_bytes == 2);
    CHECK(dims(e.src_dims, 2) == std::vector<int64_t>{3, 40});
    CHECK(dims(e.dst_dims, 2) == std::vector<int64_t>{3, 48});
    // Equal shapes: one contiguous run; a scalar: one unit of its size.
    REQUIRE(exec::box_copy_entry({at(0x1000), {4, 6}, at(0x2000), {4, 6}, 4}, e));
    CHECK(e.rank == 1);
    CHECK(e.unit_bytes == 16);
    CHECK(dims(e.dst_dims, 1) == std::vector<int64_t>{6});
    REQUIRE(exec::box_copy_entry({at(0x1000), {}, at(0x2000), {}, 8}, e));
    CHECK(e.rank == 1);
    CHECK(e.unit_bytes == 8);
    CHECK(dims(e.dst_dims, 1) == std::vector<int64_t>{1});
    // Nothing to write; shapes the kernel cannot take.
    CHECK_FALSE(exec::box_copy_entry({at(0x1000), {1, 0}, at(0x2000), {1, 0}, 4}, e));
    test::require_error([&] { exec::box_copy_entry({at(0x1000), {2, 3}, at(0x2000), {4}, 4}, e); }, "the ranks differ");
    test::require_error(
        [&] {
            exec::box_copy_entry({at(0x1000), {2, 3, 2, 3, 2}, at(0x2000), {3, 4, 3, 4, 3}, 4}, e);
        },
        "leaves 5 dimensions after merging; the copy kernel takes at most 4");

    // Tables of 16 entries; empty copies take no entry.
    std::vector<exec::BoxCopy> copies;
    for (uintptr_t k = 0; k < 20; ++k) copies.push_back({at(0x1000 * (k + 1)), {1, 7}, at(0x100000 + 0x1000 * k), {1, 8}, 4});
    copies.push_back({at(0x1000), {0, 7}, at(0x2000), {0, 8}, 4});
    const std::vector<kernels::BoxCopyTable> tables = exec::box_copy_tables(copies);
    REQUIRE(tables.size() == 2);
    CHECK(tables[0].count == 16);
    CHECK(tables[1].count == 4);
    CHECK(tables[1].entries[3].dst == at(0x100000 + 0x1000 * 19));
    CHECK(exec::box_copy_tables({}).empty());
    for (const kernels::BoxCopyTable& t : tables) CHECK(std::string(kernels::check_box_copy(t)).empty());
}

TEST_CASE("box copy tables the kernel cannot take are refused before launching", "[cpu][shapes]") {
    kernels::BoxCopyTable t;
    CHECK(std::string(kernels::check_box_copy(t)) == "the entry count is not 1..kBoxCopyMaxEntries");
    t.count = 1;
    REQUIRE(exec::box_copy_entry({at(0x1000), {5}, at(0x2000), {8}, 4}, t.entries[0]));
    CHECK(std::string(kernels::check_box_copy(t)).empty());
    kernels::BoxCopyTable bad = t;
    bad.entries[0].unit_bytes = 3;
    CHECK(std::string(kernels::check_box_copy(bad)) == "an entry's unit is not 1, 2, 4, 8 or 16 bytes");
    bad = t;
    bad.entries[0].src = at(0x1002);
    CHECK(std::string(kernels::check_box_copy(bad)) == "an entry's pointer is not aligned to its unit");
    bad = t;
    bad.entries[0].rank = kernels::kBoxCopyMaxRank + 1;
    CHECK(std::string(kernels::check_box_copy(bad)) == "an entry's rank is not 1..kBoxCopyMaxRank");
    bad = t;
    bad.entries[0].dst = nullptr;
    CHECK(std::string(kernels::check_box_copy(bad)) == "an entry has a null pointer");
    bad = t;
    bad.entries[0].src_dims[0] = -1;
    CHECK(std::string(kernels::check_box_copy(bad)) == "an entry has a negative dimension");
    CHECK(kernels::launch_box_copy(bad, nullptr) == cudaErrorInvalidValue);
    bad.count = kernels::kBoxCopyMaxEntries + 1;
    CHECK(kernels::launch_box_copy(bad, nullptr) == cudaErrorInvalidValue);
}

TEST_CASE("the box copy kernel's indexing on merged entries pads and cuts like the host reference", "[cpu][shapes]") {
    auto rng = test::make_rng();
    for (int round = 0; round < 300; ++round) {
        const RandomCopy c = random_copy(rng);
        INFO(shape_str(c.src_shape) << " -> " << shape_str(c.dst_shape) << ", " << c.elem << "-byte elements, offsets "
                                    << c.src_off << ", " << c.dst_off);
        // Addresses as a 256-byte aligned allocation plus the offsets give them.
        kernels::BoxCopyEntry e;
        const bool any = exec::box_copy_entry(
            {at(0x10000 + c.src_off), c.src_shape, at(0x800000 + c.dst_off), c.dst_shape, c.elem}, e);
        const std::vector<uint8_t> want = reference(c.src, c.src_shape, c.dst_shape, c.elem);
        REQUIRE(any == !want.empty());
        if (!any) continue;
        CHECK(e.unit_bytes >= 1);
        CHECK(c.dst_off % static_cast<size_t>(e.unit_bytes) == 0);
        CHECK((c.src.empty() ? e.src == nullptr : c.src_off % static_cast<size_t>(e.unit_bytes) == 0));
        // What the kernel's threads do, one unit each.
        const auto unit = static_cast<size_t>(e.unit_bytes);
        int64_t units = 1;
        for (int32_t d = 0; d < e.rank; ++d) units *= e.dst_dims[d];
        REQUIRE(static_cast<size_t>(units) * unit == want.size());
        std::vector<uint8_t> got(want.size(), 0xa5);
        for (int64_t i = 0; i < units; ++i) {
            const int64_t from = kernels::box_copy_source(e, i);
            uint8_t* to = got.data() + static_cast<size_t>(i) * unit;
            if (from < 0) std::memset(to, 0, unit);
            else {
                REQUIRE((static_cast<size_t>(from) + 1) * unit <= c.src.size());
                std::memcpy(to, c.src.data() + static_cast<size_t>(from) * unit, unit);
            }
        }
        CHECK(got == want);
    }
}

TEST_CASE("the box copy kernel pads and cuts many tensors in one launch like the host reference", "[gpu][shapes]") {
    STOF_REQUIRE_GPU();
    auto rng = test::make_rng();
    for (int round = 0; round < 20; ++round) {
        // 1..20 tensors (more than one table's worth at times), each padded or cut
        // (random_copy); dst poisoned with 0xa5.
        const int n = std::uniform_int_distribution<int>(1, 20)(rng);
        struct Case {
            RandomCopy c;
            std::unique_ptr<test::DeviceBuffer> src_buf, dst_buf;
        };
        std::vector<Case> cases(static_cast<size_t>(n));
        std::vector<exec::BoxCopy> copies;
        for (Case& k : cases) {
            k.c = random_copy(rng);
            const RandomCopy& c = k.c;
            const size_t dst_bytes = static_cast<size_t>(numel(c.dst_shape)) * c.elem;
            k.src_buf = std::make_unique<test::DeviceBuffer>(c.src.size() + c.src_off);
            k.dst_buf = std::make_unique<test::DeviceBuffer>(dst_bytes + c.dst_off + 16);
            std::vector<uint8_t> staged(c.src_off, 0);
            staged.insert(staged.end(), c.src.begin(), c.src.end());
            test::upload(*k.src_buf, staged);
            CUDA_REQUIRE(cudaMemset(k.dst_buf->ptr, 0xa5, k.dst_buf->bytes));
            copies.push_back(
                {k.src_buf->as<uint8_t>() + c.src_off, c.src_shape, k.dst_buf->as<uint8_t>() + c.dst_off, c.dst_shape, c.elem});
        }
        cudaStream_t s = nullptr;
        CUDA_REQUIRE(cudaStreamCreate(&s));
        exec::enqueue_box_copies(copies, s);
        CUDA_REQUIRE(cudaStreamSynchronize(s));
        CUDA_REQUIRE(cudaStreamDestroy(s));
        for (const Case& k : cases) {
            const RandomCopy& c = k.c;
            INFO("round " << round << ": " << shape_str(c.src_shape) << " -> " << shape_str(c.dst_shape) << ", " << c.elem
                          << "-byte elements, offsets " << c.src_off << ", " << c.dst_off);
            const std::vector<uint8_t> got = test::download<uint8_t>(k.dst_buf->ptr, k.dst_buf->bytes);
            const std::vector<uint8_t> want = reference(c.src, c.src_shape, c.dst_shape, c.elem);
            CHECK(std::vector<uint8_t>(got.begin() + static_cast<long>(c.dst_off),
                                       got.begin() + static_cast<long>(c.dst_off + want.size())) == want);
            // Nothing outside dst is written.
            for (size_t i = 0; i < c.dst_off; ++i) CHECK(got[i] == 0xa5);
            for (size_t i = c.dst_off + want.size(); i < got.size(); ++i) CHECK(got[i] == 0xa5);
        }
    }
}
