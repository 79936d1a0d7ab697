#include "attention_check.hpp"

#include "catch.hpp"
#include "gpu_util.hpp"
#include "stof/dtype.hpp"
#include "stof/mask_fold.hpp"
#include "stof/sparse_mask.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

namespace stof::test {

namespace {

uint16_t to_bits(kernels::ElemType t, float f) { return t == kernels::ElemType::f16 ? f32_to_f16(f) : f32_to_bf16(f); }
float from_bits(kernels::ElemType t, uint16_t b) { return t == kernels::ElemType::f16 ? f16_to_f32(b) : bf16_to_f32(b); }

struct Strides {
    int64_t b, h, s, elems;  // elems: allocation size
};
Strides strides_of(Layout l, int B, int H, int S, int D, int gap) {
    if (l == Layout::bhsd) {
        const int64_t s = D + gap, h = S * s, b = H * h;
        return {b, h, s, B * b};
    }
    const int64_t s = static_cast<int64_t>(H) * D + gap, b = S * s;
    return {b, D, s, B * b};
}

// A random tensor (rounded to the element type): bits for the device, floats for the reference.
struct HostTensor {
    std::vector<uint16_t> bits;
    std::vector<float> val;  // same indexing
};
HostTensor random_tensor(kernels::ElemType t, int64_t n, std::mt19937_64& rng) {
    std::normal_distribution<float> nd(0.f, 1.f);
    HostTensor x;
    x.bits.resize(static_cast<size_t>(n));
    x.val.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        x.bits[i] = to_bits(t, nd(rng));
        x.val[i] = from_bits(t, x.bits[i]);
    }
    return x;
}

template <class F> void parallel_for(int64_t n, F&& f) {
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(n, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (int64_t w = 0; w < workers; ++w)
        pool.emplace_back([&, w] {
            for (int64_t i = w; i < n; i += workers) f(i);
        });
    for (auto& th : pool) th.join();
}

}  // namespace

double rel_tolerance(kernels::ElemType t) { return t == kernels::ElemType::f16 ? 3e-3 : 2e-2; }
double abs_tolerance(kernels::ElemType t) { return t == kernels::ElemType::f16 ? 2e-2 : 8e-2; }

const std::vector<std::string>& mask_families() {
    static const std::vector<std::string> names = {"dense",   "causal",      "sliding", "global",
                                                   "random8", "random_elem", "bigbird", "empty_rows"};
    return names;
}

std::vector<uint8_t> mask_family(const std::string& name, int rows, int cols, std::mt19937_64& rng) {
    std::vector<uint8_t> k(static_cast<size_t>(rows) * cols, 0);
    std::uniform_real_distribution<double> u(0, 1);
    auto at = [&](int i, int j) -> uint8_t& { return k[static_cast<size_t>(i) * cols + j]; };
    if (name == "random8") {  // 8x8 blocks kept with p = 0.3
        for (int bi = 0; bi < (rows + 7) / 8; ++bi)
            for (int bj = 0; bj < (cols + 7) / 8; ++bj)
                if (u(rng) < 0.3)
                    for (int i = bi * 8; i < std::min(rows, bi * 8 + 8); ++i)
                        for (int j = bj * 8; j < std::min(cols, bj * 8 + 8); ++j) at(i, j) = 1;
        return k;
    }
    if (name == "bigbird") {  // 64-blocks: 3-block window, 1 global block, 2 random blocks per block row
        const int nb = (cols + 63) / 64;
        std::uniform_int_distribution<int> rb(0, nb - 1);
        for (int bi = 0; bi < (rows + 63) / 64; ++bi) {
            std::vector<int> blocks = {bi - 1, bi, bi + 1, 0, rb(rng), rb(rng)};
            for (int i = bi * 64; i < std::min(rows, bi * 64 + 64); ++i) {
                for (int bj : blocks)
                    if (bj >= 0 && bj < nb)
                        for (int j = bj * 64; j < std::min(cols, bj * 64 + 64); ++j) at(i, j) = 1;
                if (i < 64)
                    for (int j = 0; j < cols; ++j) at(i, j) = 1;
            }
        }
        return k;
    }
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
            bool keep = false;
            if (name == "dense") keep = true;
            else if (name == "causal") keep = j <= i;
            else if (name == "sliding") keep = std::abs(i - j) <= 37;
            else if (name == "global") keep = i < 13 || j < 13 || i == j;
            else if (name == "random_elem") keep = u(rng) < 0.15;
            else if (name == "empty_rows") keep = j <= i && i % 5 != 3 && !(i >= 64 && i < 128);
            else FAIL("unknown mask family " << name);
            at(i, j) = keep;
        }
    return k;
}

AttentionResult run_attention_case(const AttentionCase& c, std::mt19937_64& rng) {
    using kernels::ElemType;
    const int B = c.batch, H = c.heads, KH = c.kv_heads, SQ = c.seq_q, SK = c.seq_k, D = c.head_dim;
    const ElemType dt = c.dtype;
    REQUIRE(c.keep.size() == static_cast<size_t>(c.mask_batch) * c.mask_heads * SQ * SK);

    const Strides qs = strides_of(c.layout, B, H, SQ, D, 0), ks = strides_of(c.layout, B, KH, SK, D, 0);
    const Strides os = strides_of(c.layout, B, H, SQ, D, c.out_gap);
    const HostTensor q = random_tensor(dt, qs.elems, rng), k = random_tensor(dt, ks.elems, rng),
                     v = random_tensor(dt, ks.elems, rng);

    // Key validity.
    const int kv_words = (SK + 63) / 64;
    std::vector<uint64_t> valid_words;
    std::vector<uint8_t> valid(static_cast<size_t>(B) * SK, 1);
    if (!c.valid_len.empty()) {
        REQUIRE(c.valid_len.size() == static_cast<size_t>(B));
        std::uniform_real_distribution<double> u(0, 1);
        valid_words.assign(static_cast<size_t>(B) * kv_words, 0);
        for (int b = 0; b < B; ++b)
            for (int j = 0; j < SK; ++j) {
                const bool ok = j < c.valid_len[b] && !(u(rng) < c.invalid_fraction);
                valid[static_cast<size_t>(b) * SK + j] = ok;
                if (ok) valid_words[static_cast<size_t>(b) * kv_words + j / 64] |= uint64_t{1} << (j % 64);
            }
    }

    // Bias [H, SQ, SK].
    HostTensor bias;
    if (c.bias) {
        bias = random_tensor(dt, static_cast<int64_t>(H) * SQ * SK, rng);
        if (c.bias_inf_row >= 0 && c.bias_inf_row < SQ)
            for (int h = 0; h < H; ++h)
                for (int j = 0; j < SK; ++j) {
                    const size_t idx = (static_cast<size_t>(h) * SQ + c.bias_inf_row) * SK + j;
                    bias.bits[idx] = to_bits(dt, -std::numeric_limits<float>::infinity());
                    bias.val[idx] = -std::numeric_limits<float>::infinity();
                }
    }

    // The mask, uploaded as-is or folded with period c.fold.
    const int fold = std::max(c.fold, 1);
    REQUIRE(SQ % fold == 0);
    REQUIRE(SK % fold == 0);
    SparseMask mask = from_dense(c.keep.data(), c.mask_batch, c.mask_heads, SQ, SK, c.tile_m, 64);
    if (fold > 1) mask = fold_mask(mask, fold);
    mask.validate();
    DeviceBuffer d_row(mask.row_ptr.size() * 4), d_col(mask.col_idx.size() * 4), d_bmi(mask.bitmap_idx.size() * 4),
        d_bm(mask.bitmaps.size() * 8);
    upload(d_row, mask.row_ptr);
    upload(d_col, mask.col_idx);
    upload(d_bmi, mask.bitmap_idx);
    upload(d_bm, mask.bitmaps);

    DeviceBuffer d_q(qs.elems * 2), d_k(ks.elems * 2), d_v(ks.elems * 2), d_o(os.elems * 2);
    upload(d_q, q.bits);
    upload(d_k, k.bits);
    upload(d_v, v.bits);
    CUDA_REQUIRE(cudaMemset(d_o.ptr, 0xFF, os.elems * 2));  // NaN in f16 and bf16
    if (fold > 1 && !valid_words.empty()) {  // the folded layout [fold, B, ceil(SK / fold / 64)] (launch_key_valid)
        const int fk = SK / fold, fw = (fk + 63) / 64;
        valid_words.assign(static_cast<size_t>(fold) * B * fw, 0);
        for (int r = 0; r < fold; ++r)
            for (int b = 0; b < B; ++b)
                for (int j = 0; j < fk; ++j)
                    if (valid[static_cast<size_t>(b) * SK + j * fold + r])
                        valid_words[(static_cast<size_t>(r) * B + b) * fw + j / 64] |= uint64_t{1} << (j % 64);
    }
    // The bias as the kernels read it: [H, SQ, SK], or folded its residue blocks [fold, H, SQ / fold, SK / fold].
    std::vector<uint16_t> bias_bits = bias.bits;
    if (fold > 1 && c.bias) {
        const int fq = SQ / fold, fk = SK / fold;
        for (int r = 0; r < fold; ++r)
            for (int h = 0; h < H; ++h)
                for (int i = 0; i < fq; ++i)
                    for (int j = 0; j < fk; ++j)
                        bias_bits[((static_cast<size_t>(r) * H + h) * fq + i) * fk + j] =
                            bias.bits[(static_cast<size_t>(h) * SQ + i * fold + r) * SK + j * fold + r];
    }
    DeviceBuffer d_valid(valid_words.size() * 8), d_bias(bias_bits.size() * 2);
    upload(d_valid, valid_words);
    upload(d_bias, bias_bits);

    const TileRowLengths lengths = tile_row_lengths(mask);
    kernels::AttentionArgs a;
    a.dtype = dt;
    a.batch = B;
    a.heads = H;
    a.kv_heads = KH;
    a.seq_q = SQ;
    a.seq_k = SK;
    a.head_dim = D;
    a.q = {d_q.ptr, qs.b, qs.h, qs.s};
    a.k = {d_k.ptr, ks.b, ks.h, ks.s};
    a.v = {d_v.ptr, ks.b, ks.h, ks.s};
    a.o = {d_o.ptr, os.b, os.h, os.s};
    a.scale = 1.0f / std::sqrt(static_cast<float>(D));
    a.mask = {static_cast<const int32_t*>(d_row.ptr),
              static_cast<const int32_t*>(d_col.ptr),
              static_cast<const int32_t*>(d_bmi.ptr),
              static_cast<const uint64_t*>(d_bm.ptr),
              SQ / fold,
              SK / fold,
              c.tile_m,
              64,
              c.mask_batch,
              c.mask_heads,
              static_cast<float>(grouped_row_fill(mask, 3)),
              lengths.longest,
              static_cast<float>(lengths.mean),
              {lengths.long_rows[0], lengths.long_rows[1], lengths.long_rows[2], lengths.long_rows[3]}};
    a.key_valid = valid_words.empty() ? nullptr : static_cast<const uint64_t*>(d_valid.ptr);
    a.bias = c.bias ? d_bias.ptr : nullptr;
    a.bias_stride_h = static_cast<int64_t>(SQ / fold) * (SK / fold);
    a.bias_stride_s = SK / fold;
    a.block_m = c.block_m;
    DeviceBuffer d_queue(2 * sizeof(uint32_t));
    CUDA_REQUIRE(cudaMemset(d_queue.ptr, 0, d_queue.bytes));
    a.work_queue = d_queue.as<uint32_t>();
    DeviceBuffer d_split(kernels::kAttentionSplitBytes);
    CUDA_REQUIRE(cudaMemset(d_split.ptr, 0, d_split.bytes));
    a.split_workspace = d_split.ptr;

    const std::string why = fold > 1 ? kernels::check_folded_attention_args(a, c.kernel, fold)
                                     : kernels::check_attention_args(a, c.kernel);
    INFO("check_attention_args: " << why);
    REQUIRE(why.empty());
    std::string refusal;  // the first problem's reason for the sm_80 kernel, if any
    if (c.kernel == kernels::AttentionKernel::block_wise_sm90)
        for (const kernels::AttentionArgs& problem :
             fold > 1 ? kernels::folded_attention_problems(a, fold) : std::vector<kernels::AttentionArgs>{a})
            if (refusal.empty()) refusal = kernels::attention_sm90_refusal(problem);
    CUDA_REQUIRE(fold > 1 ? kernels::launch_folded_attention(a, c.kernel, fold, nullptr)
                          : kernels::launch_attention(a, c.kernel, nullptr));
    CUDA_REQUIRE(cudaGetLastError());
    CUDA_REQUIRE(cudaDeviceSynchronize());
    std::vector<uint16_t> out(static_cast<size_t>(os.elems));
    CUDA_REQUIRE(cudaMemcpy(out.data(), d_o.ptr, out.size() * 2, cudaMemcpyDeviceToHost));
    uint32_t queue[2] = {1, 1};
    CUDA_REQUIRE(cudaMemcpy(queue, d_queue.ptr, sizeof(queue), cudaMemcpyDeviceToHost));
    CHECK(queue[0] == 0);  // the launch leaves its work queue zeroed for the next
    CHECK(queue[1] == 0);
    std::vector<uint32_t> head(256, 1);  // and the first KiB of its split workspace
    CUDA_REQUIRE(cudaMemcpy(head.data(), d_split.ptr, head.size() * 4, cudaMemcpyDeviceToHost));
    CHECK(std::count(head.begin(), head.end(), 0u) == 256);

    AttentionResult r;
    r.sm90_refusal = refusal;
    // Every output row written and finite; nothing else touched.
    std::vector<uint8_t> is_out(out.size(), 0);
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < SQ; ++i)
                for (int d = 0; d < D; ++d) {
                    const size_t idx = static_cast<size_t>(b * os.b + h * os.h + i * os.s + d);
                    is_out[idx] = 1;
                    if (!std::isfinite(from_bits(dt, out[idx]))) ++r.unwritten;
                }
    for (size_t idx = 0; idx < out.size(); ++idx)
        if (!is_out[idx] && out[idx] != 0xFFFF) ++r.gap_touched;

    // Rows to compare.
    std::vector<int> rows;
    if (c.check_rows < 0 || c.check_rows >= SQ) {
        for (int i = 0; i < SQ; ++i) rows.push_back(i);
    } else {
        std::uniform_int_distribution<int> ui(0, SQ - 1);
        rows = {0, SQ - 1};
        while (static_cast<int>(rows.size()) < c.check_rows) rows.push_back(ui(rng));
    }
    const int64_t units = static_cast<int64_t>(B) * H;
    std::vector<double> num(units, 0), den(units, 0), maxabs(units, 0);
    std::vector<int64_t> nonzero_empty(units, 0);
    parallel_for(units, [&](int64_t u) {
        const int b = static_cast<int>(u / H), h = static_cast<int>(u % H), hk = h / (H / KH);
        const int p = (c.mask_batch == 1 ? 0 : b) * c.mask_heads + (c.mask_heads == 1 ? 0 : h);
        const uint8_t* keep = c.keep.data() + static_cast<size_t>(p) * SQ * SK;
        std::vector<double> s(SK);
        std::vector<double> o(D);
        for (int i : rows) {
            double mx = -std::numeric_limits<double>::infinity();
            for (int j = 0; j < SK; ++j) {
                s[j] = -std::numeric_limits<double>::infinity();
                if (!keep[static_cast<size_t>(i) * SK + j] || !valid[static_cast<size_t>(b) * SK + j]) continue;
                double dot = 0;
                for (int d = 0; d < D; ++d)
                    dot += static_cast<double>(q.val[b * qs.b + h * qs.h + i * qs.s + d]) *
                           k.val[b * ks.b + hk * ks.h + j * ks.s + d];
                s[j] = dot * a.scale + (c.bias ? bias.val[(static_cast<size_t>(h) * SQ + i) * SK + j] : 0.0);
                mx = std::max(mx, s[j]);
            }
            std::fill(o.begin(), o.end(), 0.0);
            if (mx != -std::numeric_limits<double>::infinity()) {
                double l = 0;
                for (int j = 0; j < SK; ++j) {
                    if (s[j] == -std::numeric_limits<double>::infinity()) continue;
                    const double e = std::exp(s[j] - mx);
                    l += e;
                    for (int d = 0; d < D; ++d) o[d] += e * v.val[b * ks.b + hk * ks.h + j * ks.s + d];
                }
                for (int d = 0; d < D; ++d) o[d] /= l;
            }
            for (int d = 0; d < D; ++d) {
                const double got = from_bits(dt, out[static_cast<size_t>(b * os.b + h * os.h + i * os.s + d)]);
                const double diff = std::isfinite(got) ? std::abs(got - o[d]) : std::numeric_limits<double>::infinity();
                num[u] += diff * diff;
                den[u] += o[d] * o[d];
                maxabs[u] = std::max(maxabs[u], diff);
                if (mx == -std::numeric_limits<double>::infinity() && got != 0.0) ++nonzero_empty[u];
            }
        }
    });
    double n = 0, dsum = 0;
    for (int64_t u = 0; u < units; ++u) {
        n += num[u];
        dsum += den[u];
        r.max_abs_error = std::max(r.max_abs_error, maxabs[u]);
        r.nonzero_empty_rows += nonzero_empty[u];
    }
    r.rel_error = dsum > 0 ? std::sqrt(n / dsum) : std::sqrt(n);
    return r;
}

}  // namespace stof::test
