// The sparse attention kernels against the dense CPU reference.
#include "attention_check.hpp"
#include "catch.hpp"
#include "gpu_util.hpp"
#include "stof/mask_fold.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

using namespace stof::test;
using stof::kernels::AttentionKernel;
using stof::kernels::ElemType;

namespace {

struct KernelChoice {
    const char* name;
    AttentionKernel kernel;
    int block_m;
};
const KernelChoice kChoices[] = {{"block64", AttentionKernel::block_wise, 64},
                                 {"block128", AttentionKernel::block_wise, 128},
                                 {"row", AttentionKernel::row_wise, 0},
                                 {"sm90", AttentionKernel::block_wise_sm90, 0}};

void check(const AttentionCase& c, const std::string& what, std::mt19937_64& rng) {
    const AttentionResult r = run_attention_case(c, rng);
    INFO(what << ": rel " << r.rel_error << ", max abs " << r.max_abs_error << ", unwritten " << r.unwritten << ", gap touched "
              << r.gap_touched << ", nonzero empty rows " << r.nonzero_empty_rows << ", sm90 refusal '" << r.sm90_refusal
              << "'");
    // block_wise_sm90 on a Hopper GPU ran the Hopper kernel, not its fallback.
    if (c.kernel == AttentionKernel::block_wise_sm90 && c.block_m != 64 && stof::kernels::attention_sm90_available(c.head_dim))
        CHECK(r.sm90_refusal.empty());
    CHECK(r.unwritten == 0);
    CHECK(r.gap_touched == 0);
    CHECK(r.nonzero_empty_rows == 0);
    CHECK(r.rel_error <= rel_tolerance(c.dtype));
    CHECK(r.max_abs_error <= abs_tolerance(c.dtype));
}

// Runs c with every kernel choice (the mask's tile_m permitting; the Hopper kernel where
// this GPU and head dim run it, not its fallback).
void check_all_kernels(AttentionCase c, const std::string& what, std::mt19937_64& rng) {
    for (const auto& k : kChoices) {
        if (c.tile_m == 128 && k.block_m == 64) continue;
        if (k.kernel == AttentionKernel::block_wise_sm90 && !stof::kernels::attention_sm90_available(c.head_dim)) continue;
        c.kernel = k.kernel;
        c.block_m = k.block_m;
        check(c, what + " [" + k.name + "]", rng);
    }
}

// A mask that mixes band, global and random elements at any size.
std::vector<uint8_t> mixed_mask(int rows, int cols, std::mt19937_64& rng) {
    std::vector<uint8_t> a = mask_family("sliding", rows, cols, rng), b = mask_family("global", rows, cols, rng),
                         r = mask_family("random_elem", rows, cols, rng);
    for (size_t i = 0; i < a.size(); ++i) a[i] = a[i] | b[i] | (r[i] & (i % 3 == 0));
    return a;
}

// True on a GPU that runs the Hopper kernel; else says the test is skipped.
bool hopper_or_skip() {
    if (stof::kernels::attention_sm90_available(64)) return true;
    std::printf("STOF-SKIP: not a compute capability 9.0 GPU\n");
    return false;
}

}  // namespace

TEST_CASE("attention: every mask family and length, both kernels", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    for (const int S : {1, 63, 64, 65, 1000})
        for (const auto& fam : mask_families()) {
            AttentionCase c;
            c.seq_q = c.seq_k = S;
            c.keep = mask_family(fam, S, S, rng);
            check_all_kernels(c, fam + " S=" + std::to_string(S), rng);
        }
}

TEST_CASE("attention: dtypes, head dims, layouts, GQA", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    for (const ElemType dt : {ElemType::f16, ElemType::bf16})
        for (const int D : stof::kernels::kAttentionHeadDims)
            for (const Layout layout : {Layout::bhsd, Layout::bshd}) {
                AttentionCase c;
                c.dtype = dt;
                c.head_dim = D;
                c.layout = layout;
                c.out_gap = 8;
                c.heads = 4;
                c.kv_heads = layout == Layout::bhsd ? 2 : 1;
                c.seq_q = c.seq_k = 333;
                c.keep = mixed_mask(333, 333, rng);
                check_all_kernels(c,
                                  std::string(dt == ElemType::f16 ? "f16" : "bf16") + " D=" + std::to_string(D) +
                                      (layout == Layout::bhsd ? " bhsd gqa2" : " bshd gqa4"),
                                  rng);
            }
}

TEST_CASE("attention: padding, bias, per-head and per-batch masks, tile_m 128, seq_q != seq_k", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    {
        AttentionCase c;  // key_valid: full, short, single key; random holes
        c.batch = 3;
        c.seq_q = c.seq_k = 300;
        c.keep = mixed_mask(300, 300, rng);
        c.valid_len = {300, 150, 1};
        c.invalid_fraction = 0.1;
        check_all_kernels(c, "key_valid", rng);
        c.keep = mask_family("dense", 300, 300, rng);  // full tiles with invalid keys
        c.invalid_fraction = 0;
        c.valid_len = {300, 64, 65};
        check_all_kernels(c, "key_valid dense", rng);
    }
    {
        AttentionCase c;  // additive bias; one row with -inf bias everywhere outputs zeros
        c.seq_q = c.seq_k = 200;
        c.keep = mixed_mask(200, 200, rng);
        c.bias = true;
        c.bias_inf_row = 77;
        check_all_kernels(c, "bias f16", rng);
        c.dtype = ElemType::bf16;
        c.keep = mask_family("dense", 200, 200, rng);
        check_all_kernels(c, "bias bf16 dense", rng);
    }
    {
        AttentionCase c;  // a different mask per (batch, head)
        c.batch = 2;
        c.heads = 3;
        c.kv_heads = 3;
        c.seq_q = c.seq_k = 150;
        c.mask_batch = 2;
        c.mask_heads = 3;
        for (int p = 0; p < 6; ++p) {
            const auto m = mask_family(mask_families()[p % mask_families().size()], 150, 150, rng);
            c.keep.insert(c.keep.end(), m.begin(), m.end());
        }
        check_all_kernels(c, "per (batch, head) masks", rng);
        c.mask_batch = 1;
        c.keep.resize(static_cast<size_t>(3) * 150 * 150);
        check_all_kernels(c, "per head masks", rng);
    }
    for (const int S : {100, 1000}) {
        AttentionCase c;  // 128-row mask tiles
        c.seq_q = c.seq_k = S;
        c.tile_m = 128;
        c.keep = mixed_mask(S, S, rng);
        check_all_kernels(c, "tile_m 128 S=" + std::to_string(S), rng);
    }
    {
        AttentionCase c;  // rectangular
        c.seq_q = 77;
        c.seq_k = 300;
        c.keep = mask_family("random8", 77, 300, rng);
        check_all_kernels(c, "seq_q 77 seq_k 300", rng);
        c.seq_q = 300;
        c.seq_k = 77;
        c.keep = mask_family("random_elem", 300, 77, rng);
        check_all_kernels(c, "seq_q 300 seq_k 77", rng);
    }
}

TEST_CASE("attention: S = 4096", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    const int S = 4096;
    {
        AttentionCase c;
        c.batch = 1;
        c.heads = 2;
        c.kv_heads = 2;
        c.seq_q = c.seq_k = S;
        c.check_rows = 96;
        c.keep = mask_family("causal", S, S, rng);
        c.kernel = AttentionKernel::block_wise;
        check(c, "causal 4096 block auto", rng);
        c.block_m = 64;
        check(c, "causal 4096 block64", rng);
        c.keep = mask_family("bigbird", S, S, rng);
        c.kernel = AttentionKernel::row_wise;
        check(c, "bigbird 4096 row", rng);
        c.kernel = AttentionKernel::block_wise;
        c.block_m = 128;
        c.valid_len = {4000};
        c.invalid_fraction = 0.05;
        check(c, "bigbird 4096 block128 key_valid", rng);
    }
    {
        AttentionCase c;
        c.batch = 1;
        c.heads = 2;
        c.kv_heads = 1;
        c.head_dim = 128;
        c.dtype = ElemType::bf16;
        c.layout = Layout::bshd;
        c.seq_q = c.seq_k = S;
        c.check_rows = 96;
        c.keep = mask_family("sliding", S, S, rng);
        c.kernel = AttentionKernel::block_wise;
        check(c, "sliding 4096 bf16 D128 block auto", rng);
    }
}

TEST_CASE("attention: the Hopper kernel at S = 4096", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    if (!hopper_or_skip()) return;
    auto rng = make_rng();
    const int S = 4096;
    for (const std::string& fam : mask_families())
        for (const int D : {64, 128})
            for (const ElemType dt : {ElemType::f16, ElemType::bf16}) {
                AttentionCase c;
                c.batch = 1;
                c.heads = 2;
                c.kv_heads = D == 64 ? 2 : 1;
                c.head_dim = D;
                c.dtype = dt;
                c.layout = D == 64 ? Layout::bhsd : Layout::bshd;
                c.seq_q = c.seq_k = S;
                c.check_rows = 96;
                c.keep = mask_family(fam, S, S, rng);
                c.kernel = AttentionKernel::block_wise_sm90;
                if (fam == "bigbird") {
                    c.valid_len = {4000};
                    c.invalid_fraction = 0.05;
                    c.bias = true;
                }
                check(c, fam + " 4096 sm90 D" + std::to_string(D) + (dt == ElemType::f16 ? " f16" : " bf16"), rng);
            }
}

// More work items (64 query rows per consumer, head, batch) than multiprocessors: the Hopper
// kernel's persistent CTAs each run several items, carrying the K/V ring and the Q buffers
// across items (three consumers at D 128 for the dense mask).
TEST_CASE("attention: the Hopper kernel with several work items per CTA", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    if (!hopper_or_skip()) return;
    auto rng = make_rng();
    const int S = 1000;  // 8 query blocks, the last one partial
    // At D 64 (and 32, on its instance), (2, 48): 384 items of 256 rows (four consumers); (1, 30):
    // 180 items of 192 rows (three consumers: 120 of 256 rows would leave multiprocessors idle).
    // D 80 runs on the instance of 128.
    for (const std::string& fam : mask_families())
        for (const auto& [D, dt, batch, heads] :
             {std::tuple{64, ElemType::f16, 2, 48}, std::tuple{64, ElemType::bf16, 2, 48}, std::tuple{64, ElemType::f16, 1, 30},
              std::tuple{32, ElemType::f16, 2, 48}, std::tuple{128, ElemType::f16, 2, 48},
              std::tuple{128, ElemType::bf16, 2, 48}, std::tuple{80, ElemType::bf16, 2, 48}}) {
            AttentionCase c;
            c.batch = batch;
            c.heads = heads;
            c.kv_heads = D <= 64 ? heads : 8;  // 768 items at D 128
            c.head_dim = D;
            c.dtype = dt;
            c.layout = D <= 64 ? Layout::bhsd : Layout::bshd;
            c.seq_q = c.seq_k = S;
            c.check_rows = 24;
            c.keep = mask_family(fam, S, S, rng);
            c.kernel = AttentionKernel::block_wise_sm90;
            if (fam == "global") c.tile_m = 128;
            if (fam == "bigbird") {
                c.valid_len = batch == 1 ? std::vector<int>{900} : std::vector<int>{S, 900};
                c.invalid_fraction = 0.05;
                c.bias = true;
            }
            check(c,
                  fam + " 1000 sm90 many items B" + std::to_string(batch) + " H" + std::to_string(heads) + " D" +
                      std::to_string(D) + (dt == ElemType::f16 ? " f16" : " bf16"),
                  rng);
        }
}

// At D 64 and batch 1 a global tile row outlasts a consumer's share of the work, so the launcher
// runs the SPLIT kernel, which shares a tile row of a work item that lists at least 16 tiles
// and 4 times as many as each other row of the item among its consumers. Global rows on a band
// at the top (also global columns), in the item's middle tile row, and two in one item (which
// share nothing); three consumers at S 2048 (132 work items of 192 rows), two at S 1500.
TEST_CASE("attention: the Hopper kernel shares a long tile row among its consumers", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    if (!hopper_or_skip()) return;
    auto rng = make_rng();
    for (const int S : {2048, 1500})
        for (const std::string where : {"top", "middle", "two"}) {
            std::vector<uint8_t> keep(static_cast<size_t>(S) * S);
            for (int i = 0; i < S; ++i) {
                const bool global = where == "top"      ? i < 64
                                    : where == "middle" ? i >= 64 && i < 128
                                                        : i < 64 || (i >= 128 && i < 192);
                for (int j = 0; j < S; ++j)
                    keep[static_cast<size_t>(i) * S + j] = global || std::abs(i - j) <= 40 || (where == "top" && j < 64);
            }
            for (int variant = 0; variant < 3; ++variant) {
                AttentionCase c;
                c.batch = 1;
                c.heads = 12;
                c.kv_heads = variant == 1 ? 4 : 12;
                c.dtype = variant == 1 ? ElemType::bf16 : ElemType::f16;
                c.layout = variant == 2 ? Layout::bshd : Layout::bhsd;
                c.seq_q = c.seq_k = S;
                c.check_rows = 200;
                c.keep = keep;
                c.kernel = AttentionKernel::block_wise_sm90;
                if (variant == 2) {
                    c.valid_len = {S - 37};
                    c.invalid_fraction = 0.05;
                    c.bias = true;
                }
                check(c, where + " rows shared S=" + std::to_string(S) + " variant " + std::to_string(variant), rng);
            }
        }
}

// With a split workspace the long rows the mask lists (SparseMaskView::long_rows) go on in slice
// items of other CTAs, whose parts the owning item's CTA merges: one global row at S 4096 and
// batch 1 (many slices, the owning item's own piece empty), per-head patterns where half the
// heads have the row (the others pass their slice items over), batch 2 with padding and a bias,
// and a global row beside a row as long (not shared: its slice items are passed over).
TEST_CASE("attention: the Hopper kernel shares long tile rows with other CTAs", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    if (!hopper_or_skip()) return;
    auto rng = make_rng();
    // A band of +-40 around the diagonal, and the global rows [g0, g0 + 64) (and their columns where `cols`).
    auto band = [](int S, int g0, bool cols, bool other) {
        std::vector<uint8_t> keep(static_cast<size_t>(S) * S);
        for (int i = 0; i < S; ++i)
            for (int j = 0; j < S; ++j)
                keep[static_cast<size_t>(i) * S + j] = (i >= g0 && i < g0 + 64) || std::abs(i - j) <= 40 ||
                                                       (cols && j >= g0 && j < g0 + 64) || (other && i >= 64 && i < 128);
        return keep;
    };
    struct Shape {
        const char* name;
        int batch, heads, kv_heads, S, g0;
        bool per_head, padded, other;
        ElemType dtype;
    };
    for (const Shape& sh : {Shape{"one global row, S 4096", 1, 4, 4, 4096, 0, false, false, false, ElemType::f16},
                            Shape{"global row 2, GQA", 1, 8, 2, 2048, 128, false, false, false, ElemType::bf16},
                            Shape{"on half the heads", 1, 6, 6, 3000, 64, true, false, false, ElemType::f16},
                            Shape{"batch 2, padded, bias", 2, 4, 4, 2048, 0, false, true, false, ElemType::bf16},
                            Shape{"beside a row as long", 1, 4, 4, 2048, 0, false, false, true, ElemType::f16}}) {
        AttentionCase c;
        c.batch = sh.batch;
        c.heads = sh.heads;
        c.kv_heads = sh.kv_heads;
        c.dtype = sh.dtype;
        c.seq_q = c.seq_k = sh.S;
        c.check_rows = 160;
        c.kernel = AttentionKernel::block_wise_sm90;
        const std::vector<uint8_t> with = band(sh.S, sh.g0, true, sh.other), without = band(sh.S, -64, false, false);
        if (sh.per_head) {
            c.mask_heads = sh.heads;
            for (int h = 0; h < sh.heads; ++h)
                c.keep.insert(c.keep.end(), h % 2 ? without.begin() : with.begin(), h % 2 ? without.end() : with.end());
        } else {
            c.keep = with;
        }
        if (sh.padded) {
            c.valid_len = {sh.S - 100, sh.S - 1};
            c.invalid_fraction = 0.05;
            c.bias = true;
        }
        check(c, sh.name, rng);
    }
}

// Strided masks fold (stof/mask_fold.hpp): [b, s, h, d] tensors without padding run as one
// problem of p times the heads, batch 1 as one problem of the residues as the batch, contiguous
// [b, h, s, d] tensors without GQA or padding as one of (batch, head) pairs, the others as one
// problem per residue (with a bias always).
TEST_CASE("attention: strided masks run folded, as one problem or one per residue", "[gpu][kernels][attention]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    const int S = 1024;
    struct Shape {
        const char* name;
        Layout layout;
        int heads, kv_heads, head_dim;
        ElemType dtype;
        bool padded;
        int batch = 2;
        bool bias = false;
    };
    for (const int p : {8, 16})
        for (const Shape& sh : {Shape{"bhsd", Layout::bhsd, 4, 4, 64, ElemType::f16, false},
                                Shape{"bshd gqa", Layout::bshd, 4, 2, 128, ElemType::bf16, false},
                                Shape{"bhsd gqa", Layout::bhsd, 4, 2, 64, ElemType::bf16, false},
                                Shape{"bshd padded", Layout::bshd, 4, 4, 64, ElemType::f16, true},
                                Shape{"bhsd gqa padded batch 1", Layout::bhsd, 4, 2, 128, ElemType::f16, true, 1},
                                Shape{"bshd padded bias", Layout::bshd, 4, 2, 64, ElemType::bf16, true, 2, true}}) {
            AttentionCase c;
            c.batch = sh.batch;
            c.heads = sh.heads;
            c.kv_heads = sh.kv_heads;
            c.head_dim = sh.head_dim;
            c.dtype = sh.dtype;
            c.layout = sh.layout;
            c.seq_q = c.seq_k = S;
            c.check_rows = 64;
            c.bias = sh.bias;
            c.keep.assign(static_cast<size_t>(S) * S, 0);
            for (int i = 0; i < S; ++i)  // strided; causal as well at p = 16
                for (int j = 0; j < S; ++j) c.keep[static_cast<size_t>(i) * S + j] = (i - j) % p == 0 && (p == 8 || j <= i);
            REQUIRE(stof::fold_period(stof::from_dense(c.keep.data(), 1, 1, S, S)) == p);
            c.fold = p;
            if (sh.padded) {  // one problem per residue with its validity words
                c.valid_len = sh.batch == 1 ? std::vector<int>{S - 100} : std::vector<int>{S, S - 100};
                c.invalid_fraction = 0.05;
            }
            check_all_kernels(c, std::string(sh.name) + " strided" + std::to_string(p) + " folded", rng);
        }
}

TEST_CASE("attention: small cases for compute-sanitizer", "[gpu][kernels][attention][sanitize]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    for (const int S : {1, 65, 130})
        for (const char* fam : {"causal", "random_elem", "empty_rows"}) {
            AttentionCase c;
            c.seq_q = c.seq_k = S;
            c.keep = mask_family(fam, S, S, rng);
            c.bias = true;
            c.valid_len = {S, (S + 1) / 2};
            c.layout = Layout::bshd;
            c.out_gap = 8;
            check_all_kernels(c, std::string(fam) + " S=" + std::to_string(S), rng);
            c.head_dim = 128;
            c.dtype = ElemType::bf16;
            check_all_kernels(c, std::string(fam) + " D128 bf16 S=" + std::to_string(S), rng);
            c.head_dim = 32;
            check_all_kernels(c, std::string(fam) + " D32 bf16 S=" + std::to_string(S), rng);
            c.head_dim = 80;
            check_all_kernels(c, std::string(fam) + " D80 bf16 S=" + std::to_string(S), rng);
        }
    {  // 132 work items of 192 rows whose first tile row (global) is shared among three consumers
        AttentionCase c;
        c.batch = 1;
        c.heads = c.kv_heads = 22;
        c.seq_q = c.seq_k = 1100;
        c.keep.assign(static_cast<size_t>(1100) * 1100, 0);
        for (int i = 0; i < 1100; ++i)
            for (int j = 0; j < 1100; ++j)
                c.keep[static_cast<size_t>(i) * 1100 + j] = i < 64 || j < 64 || std::abs(i - j) <= 40;
        c.valid_len = {1090};
        c.check_rows = 64;
        c.kernel = AttentionKernel::block_wise_sm90;
        check(c, "long first row S=1100", rng);
    }
    // Some Hopper CTAs run two work items: 140 of 256 rows (four consumers at D 64), 140 of 192
    // rows (three consumers: 70 of 256 rows would leave multiprocessors idle).
    for (const auto& [S, H] : {std::pair{130, 140}, std::pair{200, 70}}) {
        AttentionCase c;
        c.batch = 1;
        c.heads = c.kv_heads = H;
        c.seq_q = c.seq_k = S;
        c.keep = mask_family("causal", S, S, rng);
        c.valid_len = {S - 10};
        check_all_kernels(c, "causal S=" + std::to_string(S) + " H=" + std::to_string(H), rng);
    }
}
