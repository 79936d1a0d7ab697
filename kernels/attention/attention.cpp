// check_attention_args, launch_attention: argument checks and dispatch to the
// (dtype, head_dim, block_m) instances of the two kernels.
#include "params.hpp"
#include "stof/kernels/attention.hpp"

#include <cmath>
#include <cstdint>
#include <string>

namespace stof::kernels {

namespace {

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

std::string check_tensor(const char* name, const AttnTensor& t) {
    if (!t.data) return std::string(name) + " is null";
    if (!aligned16(t.data)) return std::string(name) + " data is not 16-byte aligned";
    if (t.stride_b % 8 || t.stride_h % 8 || t.stride_s % 8)
        return std::string(name) + " strides (" + std::to_string(t.stride_b) + ", " + std::to_string(t.stride_h) + ", " +
               std::to_string(t.stride_s) + ") must be multiples of 8 elements (16 bytes)";
    return "";
}

// Streaming multiprocessors of the current device (cached per device).
int sm_count() {
    static int cached[64] = {};
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 132;
    if (dev < 64 && cached[dev]) return cached[dev];
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    if (dev < 64) cached[dev] = n;
    return n;
}

// Query rows per CTA of the block-wise kernel.
int pick_block_m(const AttentionArgs& a) {
    if (a.block_m) return a.block_m;
    if (a.mask.tile_m == 128) return 128;
    // 128-row CTAs halve the K/V traffic; use them once they still fill the GPU twice over.
    const int64_t ctas128 = static_cast<int64_t>((a.seq_q + 127) / 128) * a.heads * a.batch;
    return ctas128 >= 2 * static_cast<int64_t>(sm_count()) ? 128 : 64;
}

}  // namespace

namespace attn {

AttnParams make_params(const AttentionArgs& a) {
    AttnParams p;
    p.q = a.q.data;
    p.k = a.k.data;
    p.v = a.v.data;
    p.o = a.o.data;
    p.q_sb = a.q.stride_b, p.q_sh = a.q.stride_h, p.q_ss = a.q.stride_s;
    p.k_sb = a.k.stride_b, p.k_sh = a.k.stride_h, p.k_ss = a.k.stride_s;
    p.v_sb = a.v.stride_b, p.v_sh = a.v.stride_h, p.v_ss = a.v.stride_s;
    p.o_sb = a.o.stride_b, p.o_sh = a.o.stride_h, p.o_ss = a.o.stride_s;
    p.batch = a.batch;
    p.heads = a.heads;
    p.group = a.heads / a.kv_heads;
    p.seq_q = a.seq_q;
    p.seq_k = a.seq_k;
    p.scale_log2 = a.scale * 1.4426950408889634f;
    p.row_ptr = a.mask.row_ptr;
    p.col_idx = a.mask.col_idx;
    p.bitmap_idx = a.mask.bitmap_idx;
    p.bitmaps = a.mask.bitmaps;
    p.tile_m = a.mask.tile_m;
    p.tile_rows = (a.mask.rows + a.mask.tile_m - 1) / a.mask.tile_m;
    p.words_per_tile = (a.mask.tile_m / 8) * (a.mask.tile_n / 8);
    p.mask_batch = a.mask.mask_batch;
    p.mask_heads = a.mask.mask_heads;
    p.fill3 = a.mask.fill3;
    for (const int32_t r : a.mask.long_rows)
        if (r >= 0 && r < p.tile_rows) p.long_rows[p.long_row_count++] = r;
    p.longest_row = a.mask.longest_row;
    p.mean_row = a.mask.mean_row;
    p.key_valid = a.key_valid;
    p.work_queue = a.work_queue;
    p.split_workspace = a.split_workspace;
    p.kv_words = (a.seq_k + 63) / 64;
    p.bias = a.bias;
    p.bias_sh = a.bias_stride_h;
    p.bias_ss = a.bias_stride_s;
    return p;
}

}  // namespace attn

std::string check_attention_args(const AttentionArgs& a, AttentionKernel kernel) {
    if (kernel != AttentionKernel::block_wise && kernel != AttentionKernel::row_wise &&
        kernel != AttentionKernel::block_wise_sm90)
        return "unknown attention kernel " + std::to_string(static_cast<int>(kernel));
    if (a.dtype != ElemType::f16 && a.dtype != ElemType::bf16)
        return "unsupported element type " + std::to_string(static_cast<int>(a.dtype)) + " (f16 = 0 or bf16 = 1)";
    if (!is_attention_head_dim(a.head_dim))
        return "head_dim " + std::to_string(a.head_dim) + " is not supported (the attention kernels take " +
               attention_head_dims_text() + ")";
    if (a.batch < 1 || a.heads < 1 || a.seq_q < 1 || a.seq_k < 1)
        return "batch, heads, seq_q and seq_k must be >= 1 (got " + std::to_string(a.batch) + ", " + std::to_string(a.heads) +
               ", " + std::to_string(a.seq_q) + ", " + std::to_string(a.seq_k) + ")";
    if (a.batch > 65535 || a.heads > 65535) return "batch and heads must be <= 65535";
    if (a.kv_heads < 1 || a.heads % a.kv_heads != 0)
        return "kv_heads " + std::to_string(a.kv_heads) + " does not divide heads " + std::to_string(a.heads);
    for (const auto& [name, t] : {std::pair<const char*, const AttnTensor&>{"q", a.q}, {"k", a.k}, {"v", a.v}, {"o", a.o}})
        if (std::string e = check_tensor(name, t); !e.empty()) return e;
    if (!std::isfinite(a.scale)) return "scale is not finite";

    const SparseMaskView& m = a.mask;
    if (m.rows != a.seq_q || m.cols != a.seq_k)
        return "mask is " + std::to_string(m.rows) + "x" + std::to_string(m.cols) + " but seq_q x seq_k is " +
               std::to_string(a.seq_q) + "x" + std::to_string(a.seq_k);
    if (!m.row_ptr) return "mask row_ptr is null";
    if (m.tile_n != 64) return "mask tile_n " + std::to_string(m.tile_n) + " is not supported (64)";
    if (kernel != AttentionKernel::row_wise) {
        if (m.tile_m != 64 && m.tile_m != 128)
            return "mask tile_m " + std::to_string(m.tile_m) + " is not supported by the block-wise kernel (64 or 128)";
        if (a.block_m != 0 && a.block_m != 64 && a.block_m != 128)
            return "block_m " + std::to_string(a.block_m) + " is not supported (0 = auto, 64 or 128)";
        if (m.tile_m == 128 && a.block_m == 64) return "a tile_m 128 mask needs block_m 128";
    } else if (m.tile_m < 8 || m.tile_m > 256 || m.tile_m % 8) {
        return "mask tile_m " + std::to_string(m.tile_m) + " is not a multiple of 8 in 8..256";
    }
    if (m.mask_batch != 1 && m.mask_batch != a.batch)
        return "mask_batch " + std::to_string(m.mask_batch) + " is neither 1 nor batch " + std::to_string(a.batch);
    if (m.mask_heads != 1 && m.mask_heads != a.heads)
        return "mask_heads " + std::to_string(m.mask_heads) + " is neither 1 nor heads " + std::to_string(a.heads);
    if (a.key_valid && (reinterpret_cast<uintptr_t>(a.key_valid) & 7u)) return "key_valid is not 8-byte aligned";
    if (a.bias && (reinterpret_cast<uintptr_t>(a.bias) & 1u)) return "bias is not 2-byte aligned";
    if (kernel == AttentionKernel::block_wise_sm90 && !a.work_queue)
        return "block_wise_sm90 needs a work queue (AttentionArgs::work_queue)";
    if (a.work_queue && (reinterpret_cast<uintptr_t>(a.work_queue) & 3u)) return "work_queue is not 4-byte aligned";
    if (a.split_workspace && (reinterpret_cast<uintptr_t>(a.split_workspace) & 15u))
        return "split_workspace is not 16-byte aligned";
    if (kernel == AttentionKernel::row_wise && static_cast<int64_t>(a.batch) * a.heads * a.seq_q > int64_t{0x7fffffff} * 4)
        return "too many query rows for the row-wise kernel";
    return "";
}

cudaError_t launch_attention(const AttentionArgs& a, AttentionKernel kernel, cudaStream_t stream) {
    if (!check_attention_args(a, kernel).empty()) return cudaErrorInvalidValue;
    const attn::AttnParams p = attn::make_params(a);
    const bool f16 = a.dtype == ElemType::f16;
    if (kernel == AttentionKernel::row_wise) {
        auto row_wise = [&]<int D>() {
            return f16 ? attn::launch_row_wise<ElemType::f16, D>(p, stream)
                       : attn::launch_row_wise<ElemType::bf16, D>(p, stream);
        };
        return with_attention_head_dim(a.head_dim, row_wise);
    }
    if (kernel == AttentionKernel::block_wise_sm90 && a.block_m != 64) {
        const cudaError_t e = attn::launch_block_wise_sm90(p, a.dtype, a.head_dim, stream);
        if (e != cudaErrorNotSupported) return e;
    }
    const int bm = pick_block_m(a);
    auto block_wise = [&]<int D>() {
        return f16 ? attn::launch_block_wise<ElemType::f16, D>(p, bm, stream)
                   : attn::launch_block_wise<ElemType::bf16, D>(p, bm, stream);
    };
    return with_attention_head_dim(a.head_dim, block_wise);
}

bool attention_sm90_available(int32_t head_dim) { return sm90_instance_head_dim(head_dim) != 0 && attn::sm90_device(); }

std::string attention_sm90_refusal(const AttentionArgs& a) {
    if (a.block_m == 64) return "block_m 64 was asked for";
    return attn::sm90_refusal(attn::make_params(a), a.dtype, a.head_dim);
}

}  // namespace stof::kernels
