// check_attention_args, launch_attention's refusal of bad arguments, and the selector (no GPU needed).
#include "catch.hpp"
#include "stof/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace stof::kernels;

namespace {

// Valid arguments for a 2x4x128x64 problem (fake, aligned device addresses).
AttentionArgs valid_args() {
    alignas(16) static unsigned char fake[64];
    AttentionArgs a;
    a.batch = 2;
    a.heads = 4;
    a.kv_heads = 2;
    a.seq_q = a.seq_k = 128;
    a.head_dim = 64;
    const int64_t sh = 128 * 64, sb = 4 * sh;
    a.q = a.o = {fake, sb, sh, 64};
    a.k = a.v = {fake, sb / 2, sh, 64};
    a.scale = 0.125f;
    static const int32_t row_ptr[3] = {0, 0, 0};
    a.mask.row_ptr = row_ptr;
    a.mask.rows = a.mask.cols = 128;
    alignas(4) static uint32_t queue[2];
    a.work_queue = queue;
    return a;
}

void require_error(const AttentionArgs& a, AttentionKernel k, const std::string& needle) {
    const std::string why = check_attention_args(a, k);
    INFO("message: " << why);
    CHECK(why.find(needle) != std::string::npos);
    CHECK(launch_attention(a, k, nullptr) == cudaErrorInvalidValue);
}

}  // namespace

TEST_CASE("check_attention_args accepts valid arguments and names what is wrong", "[cpu][kernels][attention]") {
    for (const auto k : {AttentionKernel::block_wise, AttentionKernel::row_wise, AttentionKernel::block_wise_sm90}) {
        CHECK(check_attention_args(valid_args(), k).empty());
        auto a = valid_args();
        a.head_dim = 48;
        require_error(a, k, "head_dim 48 is not supported");
        a = valid_args();
        a.kv_heads = 3;
        require_error(a, k, "does not divide");
        a = valid_args();
        a.q.data = static_cast<unsigned char*>(a.q.data) + 2;
        require_error(a, k, "16-byte aligned");
        a = valid_args();
        a.k.stride_s = 68;
        require_error(a, k, "multiples of 8");
        a = valid_args();
        a.v.data = nullptr;
        require_error(a, k, "v is null");
        a = valid_args();
        a.mask.rows = 64;
        require_error(a, k, "mask is 64x128");
        a = valid_args();
        a.mask.tile_n = 32;
        require_error(a, k, "tile_n 32");
        a = valid_args();
        a.mask.mask_heads = 3;
        require_error(a, k, "mask_heads 3");
        a = valid_args();
        a.seq_k = 0;
        require_error(a, k, ">= 1");
        a = valid_args();
        a.dtype = static_cast<ElemType>(7);
        require_error(a, k, "element type");
        a = valid_args();
        a.scale = std::nanf("");
        require_error(a, k, "scale");
    }
    auto a = valid_args();
    a.mask.tile_m = 32;
    require_error(a, AttentionKernel::block_wise, "tile_m 32");
    CHECK(check_attention_args(a, AttentionKernel::row_wise).empty());
    a = valid_args();
    a.block_m = 32;
    require_error(a, AttentionKernel::block_wise, "block_m 32");
    a = valid_args();
    a.mask.tile_m = 128;
    a.block_m = 64;
    require_error(a, AttentionKernel::block_wise, "needs block_m 128");
    require_error(a, AttentionKernel::block_wise_sm90, "needs block_m 128");
    a = valid_args();
    a.mask.tile_m = 32;
    require_error(a, AttentionKernel::block_wise_sm90, "tile_m 32");
    require_error(a, static_cast<AttentionKernel>(3), "unknown attention kernel 3");
    a = valid_args();
    a.work_queue = nullptr;
    require_error(a, AttentionKernel::block_wise_sm90, "needs a work queue");
    CHECK(check_attention_args(a, AttentionKernel::block_wise).empty());
    a = valid_args();
    a.work_queue = reinterpret_cast<uint32_t*>(reinterpret_cast<uintptr_t>(a.work_queue) + 2);
    require_error(a, AttentionKernel::block_wise_sm90, "work_queue is not 4-byte aligned");
}

TEST_CASE("the selector follows rho - tau / log2(N/16)^2", "[cpu][kernels][attention]") {
    CHECK(attention_selector_tau() >= 0);
    for (const double tau : {0.5, 1.2, 4.0})
        for (const int n : {128, 1024, 4096, 16384}) {
            const double lg = std::log2(n / 16.0), edge = tau / (lg * lg);
            CHECK(select_attention_kernel(edge * 0.9, n, tau) == AttentionKernel::row_wise);
            CHECK(select_attention_kernel(edge * 1.1 + 1e-9, n, tau) == AttentionKernel::block_wise);
        }
    CHECK(select_attention_kernel(1.0, 4096) == AttentionKernel::block_wise);
    CHECK(select_attention_kernel(0.5, 16) == AttentionKernel::row_wise);
}

TEST_CASE("attention_sm90_refusal names why block_wise_sm90 would run the sm_80 kernel", "[cpu][kernels][attention]") {
    auto a = valid_args();
    a.block_m = 64;
    CHECK(attention_sm90_refusal(a) == "block_m 64 was asked for");
    a = valid_args();
    a.head_dim = 160;
    CHECK(attention_sm90_refusal(a) == "no Hopper instance runs its head dim");
    // Every head dim of the kernels runs on an instance of 64 or 128.
    for (const int d : kAttentionHeadDims) CHECK((sm90_instance_head_dim(d) == (d <= 64 ? 64 : 128)));
    CHECK(sm90_instance_head_dim(48) == 0);  // not a head dim of the kernels
    // Valid Hopper arguments: refused only for the device (none, or not compute capability 9.0).
    const std::string why = attention_sm90_refusal(valid_args());
    INFO("refusal: " << why);
    CHECK((why.empty() || why == "the device is not of compute capability 9.0"));
}

// Every virtual query row of the folded problems is one original query row i, with its output
// row, and reads exactly the keys j = i (mod p) of its batch and kv head, j / p at position j / p,
// and the key validity words of its batch and residue (the folded layout [p, batch, words]).
TEST_CASE("folded_attention_problems view the residues of every layout as the original rows", "[cpu][kernels][attention]") {
    const int S = 32, D = 64, p = 4;
    struct Layout {
        const char* name;
        int batch, heads, kv_heads;
        bool bshd;
        int64_t batch_gap;  // extra elements between batches
        bool padded;        // key_valid given
        size_t problems;
    };
    static const int32_t row_ptr[2] = {0, 0};
    alignas(8) static const uint64_t words[p * 2] = {};  // [p, batch <= 2, 1 word]
    alignas(4) static uint32_t queue[2];
    for (const Layout& L :
         {Layout{"bshd gqa", 2, 4, 2, true, 0, false, 1}, Layout{"bhsd", 2, 4, 4, false, 0, false, 1},
          Layout{"bhsd gqa", 2, 4, 2, false, 0, false, 4}, Layout{"bhsd batch gap", 2, 4, 4, false, 64, false, 4},
          Layout{"bhsd gqa batch 1", 1, 4, 2, false, 0, false, 1}, Layout{"bshd padded batch 1", 1, 4, 4, true, 0, true, 1},
          Layout{"bshd padded", 2, 4, 4, true, 0, true, 4}}) {
        INFO(L.name);
        const int B = L.batch;
        AttentionArgs a;
        a.key_valid = L.padded ? words : nullptr;
        a.work_queue = queue;
        a.batch = B;
        a.heads = L.heads;
        a.kv_heads = L.kv_heads;
        a.seq_q = a.seq_k = S;
        a.head_dim = D;
        a.scale = 0.125f;
        a.mask.row_ptr = row_ptr;
        a.mask.rows = a.mask.cols = S / p;
        const auto tensor = [&](uintptr_t base, int heads) {
            AttnTensor t;
            t.data = reinterpret_cast<void*>(base);
            t.stride_h = L.bshd ? D : int64_t{S} * D;
            t.stride_s = L.bshd ? int64_t{heads} * D : D;
            t.stride_b = int64_t{heads} * S * D + L.batch_gap;
            return t;
        };
        a.q = tensor(1u << 24, L.heads);
        a.o = tensor(2u << 24, L.heads);
        a.k = tensor(3u << 24, L.kv_heads);
        a.v = tensor(4u << 24, L.kv_heads);
        REQUIRE(check_folded_attention_args(a, AttentionKernel::block_wise_sm90, p) == "");
        const std::vector<AttentionArgs> fs = folded_attention_problems(a, p);
        CHECK(fs.size() == L.problems);

        // Original (b, h, s) of an address of tensor t (heads h_n), or b = -1.
        const auto origin = [&](const AttnTensor& t, int heads, uintptr_t addr, int& b, int& h, int& s) {
            b = -1;
            for (int bb = 0; bb < B; ++bb)
                for (int hh = 0; hh < heads; ++hh)
                    for (int ss = 0; ss < S; ++ss)
                        if (reinterpret_cast<uintptr_t>(t.data) + 2 * (bb * t.stride_b + hh * t.stride_h + ss * t.stride_s) ==
                            addr) {
                            b = bb;
                            h = hh;
                            s = ss;
                        }
        };
        const auto at = [](const AttnTensor& t, int b, int h, int s) {
            return reinterpret_cast<uintptr_t>(t.data) + 2 * (b * t.stride_b + h * t.stride_h + s * t.stride_s);
        };
        std::vector<int> seen(static_cast<size_t>(B) * L.heads * S, 0);
        int64_t wrong = 0;
        for (const AttentionArgs& f : fs) {
            CHECK(f.seq_q == S / p);
            CHECK(f.heads / f.kv_heads == L.heads / L.kv_heads);
            for (int b = 0; b < f.batch; ++b)
                for (int h = 0; h < f.heads; ++h)
                    for (int i = 0; i < f.seq_q; ++i) {
                        int ob, oh, os, xb, xh, xs;
                        origin(a.q, L.heads, at(f.q, b, h, i), ob, oh, os);
                        origin(a.o, L.heads, at(f.o, b, h, i), xb, xh, xs);
                        if (ob < 0 || xb != ob || xh != oh || xs != os || os / p != i) {
                            ++wrong;
                            continue;
                        }
                        ++seen[(static_cast<size_t>(ob) * L.heads + oh) * S + os];
                        if (L.padded) wrong += f.key_valid + b != words + (os % p) * B + ob;
                        const int hk = h / (f.heads / f.kv_heads);
                        for (int j = 0; j < f.seq_k; ++j) {
                            int kb, kh, ks, vb, vh, vs;
                            origin(a.k, L.kv_heads, at(f.k, b, hk, j), kb, kh, ks);
                            origin(a.v, L.kv_heads, at(f.v, b, hk, j), vb, vh, vs);
                            wrong += kb != ob || kh != oh / (L.heads / L.kv_heads) || ks != j * p + os % p || vb != kb ||
                                     vh != kh || vs != ks;
                        }
                    }
        }
        CHECK(wrong == 0);
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<int64_t>(seen.size()));
    }
    auto a = valid_args();
    CHECK(check_folded_attention_args(a, AttentionKernel::block_wise, 3).find("does not divide") != std::string::npos);
    a.mask.rows = a.mask.cols = 32;
    CHECK(check_folded_attention_args(a, AttentionKernel::block_wise, 4) == "");
    // Key validity in the folded layout: one problem per residue, each at its residue's words.
    a.key_valid = words;
    const std::vector<AttentionArgs> per_residue = folded_attention_problems(a, 4);
    REQUIRE(per_residue.size() == 4);
    for (int r = 0; r < 4; ++r) CHECK(per_residue[static_cast<size_t>(r)].key_valid == words + 2 * r);
    CHECK(check_folded_attention_args(a, AttentionKernel::block_wise, 4) == "");
    // A folded bias: one problem per residue, each at its residue block (heads x 32 x 32, or
    // 32 x 32 without a head stride).
    a.key_valid = nullptr;
    a.bias = a.q.data;
    for (const int64_t sh : {int64_t{0}, int64_t{32 * 32}}) {
        a.bias_stride_h = sh;
        a.bias_stride_s = 32;
        const std::vector<AttentionArgs> with_bias = folded_attention_problems(a, 4);
        REQUIRE(with_bias.size() == 4);
        for (int r = 0; r < 4; ++r)
            CHECK(with_bias[static_cast<size_t>(r)].bias == static_cast<const char*>(a.bias) + 2 * r * (sh ? 4 * sh : 32 * 32));
        CHECK(check_folded_attention_args(a, AttentionKernel::block_wise, 4) == "");
    }
    a = valid_args();
    CHECK(check_folded_attention_args(a, AttentionKernel::block_wise, 4).find("folded: mask is 128x128") != std::string::npos);
    CHECK(launch_folded_attention(a, AttentionKernel::block_wise, 4, nullptr) == cudaErrorInvalidValue);
}
