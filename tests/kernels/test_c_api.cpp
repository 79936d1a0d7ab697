// The C API (stof/c_api.h): masks and attention through libstof's entry points.
#include "attention_check.hpp"
#include "catch.hpp"
#include "gpu_util.hpp"
#include "stof/c_api.h"
#include "stof/kernels/attention.hpp"
#include "stof/dtype.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace stof::test;

TEST_CASE("C API: errors are statuses with messages", "[cpu][c_api]") {
    CHECK(stof_attention(nullptr, nullptr) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(stof_last_error()).find("params is null") != std::string::npos);
    stof_attention_params p;
    std::memset(&p, 0, sizeof p);
    CHECK(stof_attention(&p, nullptr) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(stof_last_error()).find("mask is null") != std::string::npos);

    stof_mask* m = nullptr;
    const int32_t row_ptr[2] = {0, 5};  // lists 5 tiles but none are given
    CHECK(stof_mask_create(64, 64, 64, 64, 1, 1, row_ptr, 2, nullptr, nullptr, 0, nullptr, 0, &m) ==
          STOF_ERROR_INVALID_ARGUMENT);
    CHECK(m == nullptr);
    CHECK(std::string(stof_last_error()).find("sparse mask") != std::string::npos);
    CHECK(stof_mask_from_dense(nullptr, 1, 1, 8, 8, 64, 64, &m) == STOF_ERROR_INVALID_ARGUMENT);
    stof_mask_destroy(nullptr);
    CHECK(stof_attention_select(nullptr, 64, nullptr) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(stof_attention_selector_tau() == stof::kernels::attention_selector_tau());
    CHECK(stof_attention_select_rho(1.0, 4096) == STOF_KERNEL_BLOCK_WISE);
}

TEST_CASE("C API: mask upload, stats, attention", "[gpu][c_api]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    const int S = 200, D = 64, H = 2;
    const auto keep = mask_family("causal", S, S, rng);
    stof_mask* m = nullptr;
    REQUIRE(stof_mask_from_dense(keep.data(), 1, 1, S, S, 64, 64, &m) == STOF_OK);
    stof_mask_stats st;
    REQUIRE(stof_mask_get_stats(m, &st) == STOF_OK);
    CHECK(st.nnz == static_cast<int64_t>(S) * (S + 1) / 2);
    CHECK(st.rows == S);
    CHECK(st.full_tiles + st.partial_tiles + st.empty_tiles == 16);
    CHECK(st.partial_tiles == 4);
    int32_t k = -1;
    REQUIRE(stof_attention_select(m, S, &k) == STOF_OK);
    CHECK(k == stof_attention_select_rho(st.rho, S));

    // One head-pair of ones: softmax over kept keys of V, compared per row.
    std::vector<uint16_t> q(static_cast<size_t>(H) * S * D), kk(q.size()), v(q.size());
    std::normal_distribution<float> nd;
    std::vector<float> qf(q.size()), kf(q.size()), vf(q.size());
    for (size_t i = 0; i < q.size(); ++i) {
        q[i] = stof::f32_to_f16(nd(rng));
        kk[i] = stof::f32_to_f16(nd(rng));
        v[i] = stof::f32_to_f16(nd(rng));
        qf[i] = stof::f16_to_f32(q[i]);
        kf[i] = stof::f16_to_f32(kk[i]);
        vf[i] = stof::f16_to_f32(v[i]);
    }
    void *dq, *dk, *dv, *dout;
    const size_t bytes = q.size() * 2;
    REQUIRE(cudaMalloc(&dq, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dk, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dv, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dout, bytes) == cudaSuccess);
    REQUIRE(cudaMemcpy(dq, q.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dk, kk.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dv, v.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    for (const int kernel : {STOF_KERNEL_AUTO, STOF_KERNEL_BLOCK_WISE, STOF_KERNEL_ROW_WISE}) {
        REQUIRE(cudaMemset(dout, 0xFF, bytes) == cudaSuccess);
        stof_attention_params p;
        std::memset(&p, 0, sizeof p);
        p.dtype = STOF_DTYPE_F16;
        p.batch = 1;
        p.heads = p.kv_heads = H;
        p.seq_q = p.seq_k = S;
        p.head_dim = D;
        const stof_attn_tensor t{nullptr, int64_t{H} * S * D, int64_t{S} * D, D};
        p.q = t;
        p.q.data = dq;
        p.k = t;
        p.k.data = dk;
        p.v = t;
        p.v.data = dv;
        p.o = t;
        p.o.data = dout;
        p.scale = 0.125f;
        p.mask = m;
        p.kernel = kernel;
        INFO("kernel " << kernel << ": " << stof_last_error());
        REQUIRE(stof_attention(&p, nullptr) == STOF_OK);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        std::vector<uint16_t> out(q.size());
        REQUIRE(cudaMemcpy(out.data(), dout, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
        double num = 0, den = 0;
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < S; ++i) {
                std::vector<double> s(i + 1);
                double mx = -1e300, l = 0;
                for (int j = 0; j <= i; ++j) {
                    double dot = 0;
                    for (int d = 0; d < D; ++d) dot += qf[(h * S + i) * D + d] * kf[(h * S + j) * D + d];
                    s[j] = dot * 0.125;
                    mx = std::max(mx, s[j]);
                }
                for (int j = 0; j <= i; ++j) l += s[j] = std::exp(s[j] - mx);
                for (int d = 0; d < D; ++d) {
                    double ref = 0;
                    for (int j = 0; j <= i; ++j) ref += s[j] * vf[(h * S + j) * D + d];
                    ref /= l;
                    const double got = stof::f16_to_f32(out[(h * S + i) * D + d]);
                    num += (got - ref) * (got - ref);
                    den += ref * ref;
                }
            }
        CHECK(std::sqrt(num / den) < 3e-3);
    }
    // Bad arguments through the C API: a message, no launch.
    stof_attention_params p;
    std::memset(&p, 0, sizeof p);
    p.mask = m;
    p.dtype = STOF_DTYPE_F16;
    p.head_dim = 48;
    CHECK(stof_attention(&p, nullptr) == STOF_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(stof_last_error()).find("stof_attention:") != std::string::npos);
    cudaFree(dq);
    cudaFree(dk);
    cudaFree(dv);
    cudaFree(dout);
    stof_mask_destroy(m);
}

TEST_CASE("C API: a strided mask is stored folded and runs folded, or unfolded with key_valid", "[gpu][c_api]") {
    STOF_REQUIRE_GPU();
    auto rng = make_rng();
    const int S = 256, D = 64, H = 2, P = 8;
    std::vector<uint8_t> keep(static_cast<size_t>(S) * S);
    for (int i = 0; i < S; ++i)
        for (int j = 0; j < S; ++j) keep[static_cast<size_t>(i) * S + j] = (i - j) % P == 0;
    stof_mask* m = nullptr;
    REQUIRE(stof_mask_from_dense(keep.data(), 1, 1, S, S, 64, 64, &m) == STOF_OK);
    int32_t fold = 0;
    REQUIRE(stof_mask_get_fold(m, &fold) == STOF_OK);
    CHECK(fold == P);
    stof_mask_stats st;
    REQUIRE(stof_mask_get_stats(m, &st) == STOF_OK);  // the stats of the mask as given
    CHECK(st.nnz == static_cast<int64_t>(S) * S / P);
    CHECK(st.partial_tiles == 16);

    // [1, H, S, D] f16 inputs; the last 56 keys invalid in the key_valid run.
    const size_t n = static_cast<size_t>(H) * S * D, bytes = n * 2;
    std::vector<uint16_t> q(n), k(n), v(n);
    std::normal_distribution<float> nd;
    for (std::vector<uint16_t>* t : {&q, &k, &v})
        for (uint16_t& x : *t) x = stof::f32_to_f16(nd(rng));
    const int valid = 200;
    const uint64_t words[4] = {~0ull, ~0ull, ~0ull, (uint64_t{1} << (valid - 192)) - 1};
    void *dq, *dk, *dv, *dout, *dvalid;
    REQUIRE(cudaMalloc(&dq, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dk, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dv, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dout, bytes) == cudaSuccess);
    REQUIRE(cudaMalloc(&dvalid, sizeof words) == cudaSuccess);
    REQUIRE(cudaMemcpy(dq, q.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dk, k.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dv, v.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(dvalid, words, sizeof words, cudaMemcpyHostToDevice) == cudaSuccess);
    for (const bool padded : {false, true})
        for (const int kernel : {STOF_KERNEL_AUTO, STOF_KERNEL_BLOCK_WISE, STOF_KERNEL_ROW_WISE, STOF_KERNEL_BLOCK_WISE_SM90}) {
            REQUIRE(cudaMemset(dout, 0xFF, bytes) == cudaSuccess);
            stof_attention_params p;
            std::memset(&p, 0, sizeof p);
            p.dtype = STOF_DTYPE_F16;
            p.batch = 1;
            p.heads = p.kv_heads = H;
            p.seq_q = p.seq_k = S;
            p.head_dim = D;
            const stof_attn_tensor t{nullptr, int64_t{H} * S * D, int64_t{S} * D, D};
            p.q = p.k = p.v = p.o = t;
            p.q.data = dq;
            p.k.data = dk;
            p.v.data = dv;
            p.o.data = dout;
            p.scale = 0.125f;
            p.mask = m;
            p.key_valid = padded ? static_cast<const uint64_t*>(dvalid) : nullptr;
            p.kernel = kernel;
            INFO("kernel " << kernel << (padded ? " key_valid" : "") << ": " << stof_last_error());
            REQUIRE(stof_attention(&p, nullptr) == STOF_OK);
            REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            std::vector<uint16_t> out(n);
            REQUIRE(cudaMemcpy(out.data(), dout, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
            double num = 0, den = 0;
            for (int h = 0; h < H; ++h)
                for (int i = 0; i < S; ++i) {
                    std::vector<double> s(S, 0);
                    double mx = -1e300, l = 0;
                    const auto kept = [&](int j) { return keep[static_cast<size_t>(i) * S + j] && (!padded || j < valid); };
                    for (int j = 0; j < S; ++j) {
                        if (!kept(j)) continue;
                        double dot = 0;
                        for (int d = 0; d < D; ++d)
                            dot += double{stof::f16_to_f32(q[(static_cast<size_t>(h) * S + i) * D + d])} *
                                   stof::f16_to_f32(k[(static_cast<size_t>(h) * S + j) * D + d]);
                        s[j] = dot * 0.125;
                        mx = std::max(mx, s[j]);
                    }
                    for (int j = 0; j < S; ++j)
                        if (kept(j)) l += s[j] = std::exp(s[j] - mx);
                    for (int d = 0; d < D; ++d) {
                        double ref = 0;
                        for (int j = 0; j < S; ++j)
                            if (kept(j)) ref += s[j] * stof::f16_to_f32(v[(static_cast<size_t>(h) * S + j) * D + d]);
                        ref /= l;
                        const double got = stof::f16_to_f32(out[(static_cast<size_t>(h) * S + i) * D + d]);
                        num += (got - ref) * (got - ref);
                        den += ref * ref;
                    }
                }
            CHECK(std::sqrt(num / den) < 3e-3);
        }
    for (void* ptr : {dq, dk, dv, dout, dvalid}) cudaFree(ptr);
    stof_mask_destroy(m);
}
