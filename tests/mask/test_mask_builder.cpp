#include "mask/mask_builder.hpp"
#include "mask/mask_eval.hpp"
#include "mask/mask_file.hpp"
#include "mask/mask_random.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"

#include <filesystem>

using namespace stof;

namespace {

// keep(i, j) of every element by the direct evaluator: [rows, cols] bytes.
std::vector<uint8_t> dense_of(const MaskSpec& spec, int64_t rows, int64_t cols, int64_t b = 0, int64_t h = 0) {
    std::vector<uint8_t> d(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) d[static_cast<size_t>(i * cols + j)] = eval_keep(spec, i, j, cols, b, h);
    return d;
}

void require_same(const SparseMask& a, const SparseMask& b) {
    CHECK(a.rows == b.rows);
    CHECK(a.cols == b.cols);
    CHECK(a.tile_m == b.tile_m);
    CHECK(a.tile_n == b.tile_n);
    CHECK(a.mask_batch == b.mask_batch);
    CHECK(a.mask_heads == b.mask_heads);
    CHECK(a.row_ptr == b.row_ptr);
    CHECK(a.col_idx == b.col_idx);
    CHECK(a.bitmap_idx == b.bitmap_idx);
    CHECK(a.bitmaps == b.bitmaps);
}

std::string tmp_dir(const std::string& name) {
    const auto dir = std::filesystem::path(test::binary_dir()) / "test_tmp" / "mask" / name;
    std::filesystem::create_directories(dir);
    return dir.string();
}

Tensor bool_tensor(const Shape& shape, const std::vector<uint8_t>& keep) {
    Tensor t(DType::boolean, shape);
    for (size_t k = 0; k < keep.size(); ++k) t.bytes[k] = keep[k];
    return t;
}

}  // namespace

TEST_CASE("every mask atom and composition matches direct evaluation", "[cpu][mask]") {
    const char* specs[] = {
        "dense",
        "causal",
        "sliding:0",
        "sliding:5",
        "sliding:64",
        "sliding:200",
        "global:0",
        "global:3",
        "global:70",
        "random:16:3:7",
        "random:64:2:11",
        "random:7:1000:3",
        "random:100:0:1",
        "longformer:10:3",
        "bigbird:16:1:2:3:7",
        "bigbird:64:1:2:3:7",
        "causal & sliding:70",
        "(causal | global:3) & sliding:100",
        "sliding:0 | random:7:2:1",
        "causal & random:5:4:3 | global:70",
        "sliding:20 & random:32:5:9",
        "(sliding:40 & causal) | (sliding:40 & global:2)",
        "causal & (dense | sliding:3) & global:900",
    };
    const int64_t sizes[] = {1, 63, 65, 777, 1000};
    const int tiles[][2] = {{64, 64}, {128, 64}};
    for (const char* text : specs) {
        const MaskSpec spec = parse_mask_spec(text);
        for (int64_t s : sizes) {
            for (int64_t s_k : {s, s + 37}) {
                const std::vector<uint8_t> d = dense_of(spec, s, s_k);
                for (const auto& t : tiles) {
                    INFO(text << " seq " << s << "x" << s_k << " tile " << t[0] << "x" << t[1]);
                    const SparseMask built = build_mask(spec, s, s_k, t[0], t[1]);
                    built.validate();
                    require_same(built,
                                 from_dense(d.data(), 1, 1, static_cast<int32_t>(s), static_cast<int32_t>(s_k), t[0], t[1]));
                }
            }
        }
    }
}

TEST_CASE("odd tile shapes build the same masks as direct evaluation", "[cpu][mask]") {
    const int tiles[][2] = {{8, 8}, {16, 32}, {24, 40}, {256, 256}};
    for (const char* text : {"causal", "sliding:9", "bigbird:12:1:1:2:3", "(causal | random:10:3:5) & sliding:30"}) {
        const MaskSpec spec = parse_mask_spec(text);
        const std::vector<uint8_t> d = dense_of(spec, 301, 259);
        for (const auto& t : tiles) {
            INFO(text << " tile " << t[0] << "x" << t[1]);
            require_same(build_mask(spec, 301, 259, t[0], t[1]), from_dense(d.data(), 1, 1, 301, 259, t[0], t[1]));
        }
    }
}

TEST_CASE("documented counts of the structured masks", "[cpu][mask]") {
    const int64_t s = 1000;
    SparseMaskStats st = mask_stats(build_mask(parse_mask_spec("causal"), s, s));
    CHECK(st.nnz == s * (s + 1) / 2);
    st = mask_stats(build_mask(parse_mask_spec("sliding:2"), s, s));
    CHECK(st.nnz == 5 * s - 2 * 3);
    st = mask_stats(build_mask(parse_mask_spec("global:10"), s, s));
    CHECK(st.nnz == 2 * 10 * s - 100);
    st = mask_stats(build_mask(parse_mask_spec("dense"), s, s));
    CHECK(st.nnz == s * s);
    CHECK(st.full_tiles == 16 * 16);
    // R >= number of block columns keeps everything.
    st = mask_stats(build_mask(parse_mask_spec("random:100:10:5"), s, s));
    CHECK(st.nnz == s * s);
    st = mask_stats(build_mask(parse_mask_spec("random:100:3:5"), s, s));
    CHECK(st.nnz == 3 * 100 * s);
    // Large sizes build from tiles alone (this is what makes it fast).
    const int64_t big = 65536, n = big / 64;
    st = mask_stats(build_mask(parse_mask_spec("causal"), big, big));
    CHECK(st.nnz == big * (big + 1) / 2);
    CHECK(st.full_tiles == n * (n - 1) / 2);
    CHECK(st.partial_tiles == n);
    CHECK(st.empty_tiles == n * (n - 1) / 2);
}

TEST_CASE("the random block generator is pinned", "[cpu][mask]") {
    CHECK(splitmix64_mix(1) == 0x5692161d100b05e5ull);
    CHECK(random_block_columns(7, 0, 16, 3) == std::vector<int64_t>{4, 7, 15});
    CHECK(random_block_columns(7, 5, 16, 3) == std::vector<int64_t>{3, 10, 15});
    CHECK(random_block_columns(0, 0, 1000, 5) == std::vector<int64_t>{26, 106, 430, 879, 969});
    const auto many = random_block_columns(12345678901234567890ull, 3, 100, 70);
    CHECK(many.size() == 70);
    CHECK(std::vector<int64_t>(many.begin(), many.begin() + 8) == std::vector<int64_t>{2, 3, 4, 5, 7, 8, 10, 11});
    CHECK(std::is_sorted(many.begin(), many.end()));
    CHECK(std::adjacent_find(many.begin(), many.end()) == many.end());
    CHECK(random_block_columns(1, 2, 5, 5) == std::vector<int64_t>{0, 1, 2, 3, 4});
    CHECK(random_block_columns(1, 2, 5, 0).empty());
    // Same seed, same mask; another seed, another mask; tiles do not matter.
    const SparseMask a = build_mask(parse_mask_spec("random:16:3:1"), 512, 512);
    const SparseMask b = build_mask(parse_mask_spec("random:16:3:1"), 512, 512, 128, 64);
    const SparseMask c = build_mask(parse_mask_spec("random:16:3:2"), 512, 512);
    CHECK(to_dense(a, 0) == to_dense(b, 0));
    CHECK(to_dense(a, 0) != to_dense(c, 0));
}

TEST_CASE("per-head and per-batch file masks build one pattern each", "[cpu][mask]") {
    auto rng = test::make_rng();
    const std::string dir = tmp_dir("per_head");
    const int64_t b = 2, h = 3, s = 77, s_k = 90;
    std::bernoulli_distribution coin(0.3);
    std::vector<uint8_t> keep(static_cast<size_t>(b * h * s * s_k));
    for (auto& k : keep) k = coin(rng);
    write_npy(dir + "/bh.npy", bool_tensor({b, h, s, s_k}, keep));
    write_npy(dir + "/h.npy", bool_tensor({h, s, s_k}, std::vector<uint8_t>(keep.begin(), keep.begin() + h * s * s_k)));
    Tensor u8(DType::u8, {s, s_k});
    for (int64_t k = 0; k < s * s_k; ++k)
        u8.bytes[static_cast<size_t>(k)] = static_cast<uint8_t>(keep[static_cast<size_t>(k)] * (1 + k % 200));
    write_npy(dir + "/s.npy", u8);

    for (const std::string& text :
         {"file:" + dir + "/bh.npy", "file:" + dir + "/h.npy", "file:" + dir + "/s.npy", "file:" + dir + "/bh.npy & causal",
          "file:" + dir + "/h.npy | sliding:3", "file:" + dir + "/h.npy & file:" + dir + "/s.npy",
          "file:" + dir + "/bh.npy | file:" + dir + "/h.npy"}) {
        INFO(text);
        MaskSpec spec = parse_mask_spec(text);
        load_mask_files(spec, s, s_k, h, b);
        const auto [mb, mh] = mask_pattern_dims(spec);
        const SparseMask m = build_mask(spec, s, s_k, 64, 64, h, b);
        m.validate();
        CHECK(m.mask_batch == mb);
        CHECK(m.mask_heads == mh);
        CHECK(m.mask_heads == (text.find("h.npy") != std::string::npos ? h : 1));
        CHECK(m.mask_batch == (text.find("bh.npy") != std::string::npos ? b : 1));
        std::vector<uint8_t> all;
        for (int64_t p = 0; p < mb * mh; ++p) {
            const auto d = dense_of(spec, s, s_k, p / mh, p % mh);
            CHECK(to_dense(m, static_cast<int32_t>(p)) == d);
            all.insert(all.end(), d.begin(), d.end());
        }
        require_same(m, from_dense(all.data(), static_cast<int32_t>(mb), static_cast<int32_t>(mh), s, s_k));
    }
    // The file's own bits, unchanged, for pattern (b, h).
    const SparseMask m = build_mask(parse_mask_spec("file:" + dir + "/bh.npy"), s, s_k, 64, 64);
    const auto p = m.pattern_of(1, 2);
    const auto d = to_dense(m, p);
    CHECK(std::equal(d.begin(), d.end(), keep.begin() + (1 * h + 2) * s * s_k));
}

TEST_CASE("file masks with the wrong dtype or shape are rejected clearly", "[cpu][mask]") {
    const std::string dir = tmp_dir("bad_files");
    write_npy(dir + "/f32.npy", Tensor(DType::f32, {8, 8}));
    write_npy(dir + "/i64.npy", Tensor(DType::i64, {8, 8}));
    write_npy(dir + "/wide.npy", Tensor(DType::boolean, {8, 9}));
    write_npy(dir + "/vec.npy", Tensor(DType::boolean, {8}));
    write_npy(dir + "/five.npy", Tensor(DType::boolean, {1, 1, 1, 8, 8}));
    write_npy(dir + "/h4.npy", Tensor(DType::boolean, {4, 8, 8}));
    write_npy(dir + "/h2.npy", Tensor(DType::u8, {2, 8, 8}));
    write_npy(dir + "/b3.npy", Tensor(DType::u8, {3, 1, 8, 8}));
    write_npy(dir + "/h0.npy", Tensor(DType::u8, {0, 8, 8}));
    auto build = [&](const std::string& file, int64_t heads = 0, int64_t batch = 0) {
        return build_mask(parse_mask_spec("file:" + dir + "/" + file), 8, 8, 64, 64, heads, batch);
    };
    test::require_error([&] { build("f32.npy"); }, "f32.npy has dtype f32; a mask must be bool or uint8");
    test::require_error([&] { build("i64.npy"); }, "has dtype i64");
    test::require_error([&] { build("wide.npy"); }, "wide.npy has shape [8,9]; expected [8,8], [H,8,8] or [B,H,8,8]");
    test::require_error([&] { build("vec.npy"); }, "vec.npy has shape [8]; expected");
    test::require_error([&] { build("five.npy"); }, "five.npy has shape [1,1,1,8,8]; expected");
    test::require_error([&] { build("h0.npy"); }, "with no patterns");
    test::require_error([&] { build("h4.npy", 8); }, "h4.npy has 4 heads (shape [4,8,8]); the attention has 8 heads");
    test::require_error([&] { build("b3.npy", 0, 2); }, "b3.npy has batch 3");
    test::require_error([&] { build("missing.npy"); }, "cannot open");
    test::require_error([&] { build_mask(parse_mask_spec("file:" + dir + "/h4.npy | file:" + dir + "/h2.npy"), 8, 8); },
                        "mask files disagree");
    CHECK(build("h4.npy", 4).mask_heads == 4);
    CHECK(build("h4.npy").mask_heads == 4);
    test::require_error([&] { build_mask(parse_mask_spec("causal"), 8, 8, 12, 64); }, "multiple of 8 in 8..256");
    test::require_error([&] { build_mask(parse_mask_spec("causal"), -1, 8); }, "out of range");
    MaskSpec unloaded = parse_mask_spec("file:" + dir + "/h4.npy");
    test::require_error([&] { eval_keep(unloaded, 0, 0, 8); }, "was not loaded");
}
