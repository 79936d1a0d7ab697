// check_attention_args, launch_attention's refusal of bad arguments, and the selector (no GPU needed).
#include "catch.hpp"
#include "stof/kernels/attention.hpp"

#include <cmath>
#include <cstdint>
#include <string>

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
    for (const int d : {32, 80}) {
        a = valid_args();
        a.head_dim = d;
        CHECK(attention_sm90_refusal(a) == "its head dim is neither 64 nor 128");
    }
    // Valid Hopper arguments: refused only for the device (none, or not compute capability 9.0).
    const std::string why = attention_sm90_refusal(valid_args());
    INFO("refusal: " << why);
    CHECK((why.empty() || why == "the device is not of compute capability 9.0"));
}
