// The Hopper block-wise kernel's instances (f16, bf16 x head_dim 64, 128) and launcher:
// tensor maps for Q, K, V and O, the device check and the launch. A head dim below an
// instance's runs on it (sm90_instance_head_dim): its tensor maps are head_dim wide, so Q, K
// and V read zeros past head_dim and O's columns past it are not stored.
#include "block_wise_sm90.cuh"
#include "launch.cuh"

#include <cudaTypedefs.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace stof::kernels::attn {

namespace {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    return fn;
}

// [batch, heads, rows, d] with element strides (sb, sh, ss), boxes of 64 rows x 64
// elements in the 128-byte swizzle; out-of-range elements read as zeros and are not stored.
bool encode(CUtensorMap* map, const void* base, bool bf16, int d, int rows, int heads, int batch, int64_t sb, int64_t sh,
            int64_t ss) {
    const PFN_cuTensorMapEncodeTiled_v12000 fn = tensor_map_encoder();
    if (!fn) return false;
    // A dimension of extent 1 is never stepped along; give it a stride the encoder accepts.
    if (heads == 1) sh = ss;
    if (batch == 1) sb = ss;
    const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(heads),
                                static_cast<cuuint64_t>(batch)};
    const cuuint64_t strides[3] = {static_cast<cuuint64_t>(ss) * 2, static_cast<cuuint64_t>(sh) * 2,
                                   static_cast<cuuint64_t>(sb) * 2};
    const cuuint32_t box[4] = {64, 64, 1, 1};
    const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
    return fn(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, const_cast<void*>(base), dims,
              strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

struct TensorMaps {
    CUtensorMap q, k, v, o;
};

// nullptr when the kernel takes p on the current device (m encoded), else why it does not.
const char* refusal(const AttnParams& p, ElemType e, int head_dim, TensorMaps& m) {
    if (sm90_instance_head_dim(head_dim) == 0) return "no Hopper instance runs its head dim";
    if (!sm90_device()) return "the device is not of compute capability 9.0";
    // Tile bitmaps are bulk-copied into shared memory.
    if (reinterpret_cast<uintptr_t>(p.bitmaps) % 16 != 0) return "its mask bitmaps are not 16-byte aligned";
    if (!tensor_map_encoder()) return "the driver does not provide cuTensorMapEncodeTiled";
    const bool bf16 = e == ElemType::bf16;
    const int kv_heads = p.heads / p.group;
    if (!encode(&m.q, p.q, bf16, head_dim, p.seq_q, p.heads, p.batch, p.q_sb, p.q_sh, p.q_ss))
        return "the driver cannot encode a tensor map of q";
    if (!encode(&m.k, p.k, bf16, head_dim, p.seq_k, kv_heads, p.batch, p.k_sb, p.k_sh, p.k_ss))
        return "the driver cannot encode a tensor map of k";
    if (!encode(&m.v, p.v, bf16, head_dim, p.seq_k, kv_heads, p.batch, p.v_sb, p.v_sh, p.v_ss))
        return "the driver cannot encode a tensor map of v";
    if (!encode(&m.o, p.o, bf16, head_dim, p.seq_q, p.heads, p.batch, p.o_sb, p.o_sh, p.o_ss))
        return "the driver cannot encode a tensor map of o";
    return nullptr;
}

// `sms`: the current device's multiprocessors.
template <typename T, int D, int C, bool SPLIT = false>
cudaError_t launch(const AttnParams& p, const TensorMaps& m, int sms, cudaStream_t stream) {
    using Tr = Sm90Traits<D, C, SPLIT>;
    constexpr auto kernel = block_wise_sm90_kernel<T, D, C, SPLIT>;
    int dev = 0;
    cudaError_t e = configure_shared_memory<kernel>(Tr::SMEM_BYTES, dev);
    if (e != cudaSuccess) return e;
    int l2 = 0;
    e = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    if (e != cudaSuccess) return e;
    const int64_t hbs = static_cast<int64_t>(p.heads) * p.batch;
    const int64_t items = static_cast<int64_t>((p.seq_q + Tr::BM - 1) / Tr::BM) * hbs;
    // (head, batch) pairs per group of work items: all of them when their K and V fit in
    // half of L2, else as many as fit in a third.
    const int64_t kv_bytes = 2 * static_cast<int64_t>(p.seq_k) * D * sizeof(T);
    const int64_t hb_group = hbs * kv_bytes <= l2 / 2 ? hbs : std::clamp<int64_t>(l2 / 3 / kv_bytes, 1, hbs);
    const dim3 grid(static_cast<unsigned>(items < sms ? items : sms));
    kernel<<<grid, Tr::THREADS, Tr::SMEM_BYTES, stream>>>(p, m.q, m.k, m.v, m.o, static_cast<int>(hb_group));
    return cudaGetLastError();
}

}  // namespace

bool sm90_device() {
    static int cached[64] = {};  // 0 unknown, 1 yes, 2 no
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return false;
    if (dev < 64 && cached[dev]) return cached[dev] == 1;
    int major = 0, minor = 0;
    const bool yes = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                     cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess && major == 9 &&
                     minor == 0;
    if (dev < 64) cached[dev] = yes ? 1 : 2;
    return yes;
}

std::string sm90_refusal(const AttnParams& p, ElemType e, int head_dim) {
    TensorMaps m;
    const char* why = refusal(p, e, head_dim, m);
    return why ? why : "";
}

cudaError_t launch_block_wise_sm90(const AttnParams& params, ElemType e, int head_dim, cudaStream_t stream) {
    TensorMaps m;
    if (refusal(params, e, head_dim, m)) return cudaErrorNotSupported;
    AttnParams p = params;
    const int d = sm90_instance_head_dim(head_dim);  // the instance; the tensor maps keep head_dim
    const bool bf16 = e == ElemType::bf16;
    // Three consumer warpgroups with 64-row mask tiles when their larger work items still give
    // every multiprocessor one, at head dim 128 only when the three tile rows of an item list
    // mostly the same tiles (dense, causal, bands, bands with global rows: 1.01-1.06x two on
    // sliding windows, level to 1.02x on longformer masks; with random blocks, bigbird at fill
    // 0.54-0.57, a consumer skipping tiles of the item's list stalls the 3-stage ring: 0.90-0.94x;
    // docs/PERF.md); two otherwise (more, smaller items). Four at D 64 (below).
    int dev = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err != cudaSuccess) return err;
    constexpr int BM3 = Sm90Traits<64, 3>::BM;
    const int64_t items3 = static_cast<int64_t>((p.seq_q + BM3 - 1) / BM3) * p.heads * p.batch;
    constexpr float kMinFill128 = 0.7f;  // SparseMaskView::fill3 that takes three consumers at D 128
    const bool three = p.tile_m == 64 && items3 >= sms && (d == 64 || p.fill3 >= kMinFill128);
    // At D 64 with 64-row tiles, the kernel that shares long tile rows among its consumers where
    // the longest tile row outlasts a consumer's share of all the work (the grid's C consumers
    // per multiprocessor): at batch 1 a global row is otherwise one consumer's whole walk.
    const int consumers = three ? 3 : 2;
    const bool split = d == 64 && p.tile_m == 64 && p.longest_row >= Sm90Traits<64, 2, true>::SPLIT_MIN &&
                       static_cast<double>(p.longest_row) * sms * consumers >
                           static_cast<double>(p.mean_row) * p.tile_rows * p.heads * p.batch;
    // With a split workspace, the long rows the mask lists are shared with other CTAs too: each
    // has `slices` pieces besides its own item's, walked by slice items of about half a
    // consumer's share of all the work per consumer (at least 2 tiles per consumer), as many as
    // the workspace's slots hold. (Pieces of a whole share: 8 % slower at batch 1, S 2048 on the
    // paper's longformer mask; of two shares: 12 % slower at S 4096; docs/PERF.md.)
    p.slices = 0;
    if (split && p.split_workspace && p.long_row_count > 0) {
        const int64_t hbs = static_cast<int64_t>(p.heads) * p.batch;
        const double share = static_cast<double>(p.mean_row) * p.tile_rows * hbs / (static_cast<double>(sms) * consumers);
        int64_t n = static_cast<int64_t>(std::ceil(p.longest_row / (consumers * std::max(share / 2, 1.0)))) - 1;
        n = std::min<int64_t>(n, p.longest_row / (2 * consumers));
        n = std::min<int64_t>(n, Sm90Traits<64, 2, true>::SPLIT_SLOTS / (hbs * p.long_row_count));
        p.slices = static_cast<int32_t>(std::max<int64_t>(n, 0));
    }
    // Four consumers at D 64 where their larger work items still give every multiprocessor one
    // and no row is shared: 1.07× three on dense, 1.04–1.11× on causal, 1.05× on sliding and
    // 1.20–1.29× on longformer and bigbird masks (B 4, S 4096; docs/PERF.md).
    constexpr int BM4 = Sm90Traits<64, 4>::BM;
    const int64_t items4 = static_cast<int64_t>((p.seq_q + BM4 - 1) / BM4) * p.heads * p.batch;
    const bool four = d == 64 && p.tile_m == 64 && !split && items4 >= sms;
    if (four) return bf16 ? launch<__nv_bfloat16, 64, 4>(p, m, sms, stream) : launch<__half, 64, 4>(p, m, sms, stream);
    if (three) {
        if (d == 64) {
            if (split)
                return bf16 ? launch<__nv_bfloat16, 64, 3, true>(p, m, sms, stream)
                            : launch<__half, 64, 3, true>(p, m, sms, stream);
            return bf16 ? launch<__nv_bfloat16, 64, 3>(p, m, sms, stream) : launch<__half, 64, 3>(p, m, sms, stream);
        }
        return bf16 ? launch<__nv_bfloat16, 128, 3>(p, m, sms, stream) : launch<__half, 128, 3>(p, m, sms, stream);
    }
    if (d == 64) {
        if (split)
            return bf16 ? launch<__nv_bfloat16, 64, 2, true>(p, m, sms, stream)
                        : launch<__half, 64, 2, true>(p, m, sms, stream);
        return bf16 ? launch<__nv_bfloat16, 64, 2>(p, m, sms, stream) : launch<__half, 64, 2>(p, m, sms, stream);
    }
    return bf16 ? launch<__nv_bfloat16, 128, 2>(p, m, sms, stream) : launch<__half, 128, 2>(p, m, sms, stream);
}

}  // namespace stof::kernels::attn
