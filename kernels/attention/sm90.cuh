// Hopper (sm_90a) primitives of the attention kernels: mbarriers, bulk tensor copies
// (TMA), wgmma with shared-memory descriptors, register reallocation, named barriers and
// acquire loads.
//
// wgmma m64nNk16 (one warpgroup = 4 warps, 64 rows): warp w of the group owns rows
// 16w..16w+15; with g = lane / 4 and t = lane % 4, accumulator d[4j + e] of n8 block j is
//   e = 0, 1: (row 16w + g,     columns 8j + 2t, 8j + 2t + 1)
//   e = 2, 3: (row 16w + g + 8, columns 8j + 2t, 8j + 2t + 1)
// and a register A fragment of one k16 step is laid out as mma.sync's m16n8k16 A.
// Only compiled for sm_90a (-gencode=arch=compute_90a,code=sm_90a).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace stof::kernels::attn::sm90 {

// ---- mbarriers (shared-memory addresses) ----

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Arrives and adds `bytes` to the transaction count the current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Blocks until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// ---- bulk tensor copies ----

// Box at coordinates (c0 innermost .. c3) of the 4-D tensor map -> shared memory,
// completing `bytes` (the whole box, zeros for out-of-range elements) on `bar`.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const void* tmap, uint32_t bar, int c0, int c1, int c2, int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(
            dst),
        "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
        : "memory");
}
// `bytes` (a multiple of 16) from global `src` to shared `dst`, both 16-byte aligned,
// completing `bytes` on `bar`.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}
// Shared memory -> the box at (c0..c3); elements outside the tensor are not written.
__device__ __forceinline__ void tma_store_4d(const void* tmap, uint32_t src, int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(tmap), "r"(c0),
                 "r"(c1), "r"(c2), "r"(c3), "r"(src)
                 : "memory");
}
__device__ __forceinline__ void tma_store_commit_and_wait() {
    asm volatile("cp.async.bulk.commit_group;\ncp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void prefetch_tmap(const void* tmap) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(tmap) : "memory");
}
// Orders this thread's generic shared-memory writes before later async-proxy (TMA, wgmma) reads.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- warpgroups ----

template <int N> __device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Barrier `id` (1..15) over `threads` threads of the CTA.
__device__ __forceinline__ void named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// A 32-bit word of global memory, read with acquire semantics at GPU scope.
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accesses of accumulator registers across wgmma fences and waits.
template <int N> __device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// Shared-memory matrix descriptor, 128-byte swizzle (the layout TMA writes with
// CU_TENSOR_MAP_SWIZZLE_128B: rows of 128 bytes, 16-byte chunk c of row r at c ^ (r % 8),
// 1024-byte aligned groups of 8 rows). `lbo`, `sbo` in bytes:
//   K-major operand: sbo = 1024 (next 8 rows); lbo unused.
//   MN-major operand: sbo = 1024 (next 8 rows along K); lbo = next 64 elements along MN.
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16 |
           static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32 | uint64_t{1} << 62;
}

// desc_sw128(addr + offset, ...) from desc_sw128(addr, ...), `offset` a multiple of 16 that
// keeps the address in shared memory: the start-address field (bits 0..13, addr / 16) takes
// offset / 16 without a carry, so one 32-bit add on the low word does it.
__device__ __forceinline__ uint64_t desc_advance(uint64_t desc, uint32_t offset) {
    return (desc & 0xFFFFFFFF00000000ull) | (static_cast<uint32_t>(desc) + (offset >> 4));
}

// wgmma for T = __half or __nv_bfloat16, fp32 accumulators, d = (accumulate ? d : 0) + A B:
//   rs_n64, rs_n128: A (64 x 16, registers) * B (16 x N, shared; TransB 0: K-major, 1: N-major);
//   ss_n64: A (64 x 16, shared, K-major) * B (16 x 64, shared, K-major).
template <typename T> struct Wgmma;

// The members of Wgmma<T>, TY its PTX element type.
#define STOF_SM90_WGMMA_RS(TY)                                                                                            \
    template <int TransB>                                                                                                 \
    static __device__ __forceinline__ void rs_n64(float(&d)[32], const uint32_t(&a)[4], uint64_t b, int accumulate) {     \
        asm volatile(                                                                                                     \
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                                  \
            "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                       \
            " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                    \
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                           \
            "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"                                                               \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
              "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
              "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                   \
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(TransB));                          \
    }                                                                                                                     \
                                                                                                                          \
    static __device__ __forceinline__ void ss_n64(float(&d)[32], uint64_t a, uint64_t b, int accumulate) {                \
        asm volatile(                                                                                                     \
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                                  \
            "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                       \
            " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                    \
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                           \
            "%32, %33, p, 1, 1, 0, 0;\n}\n"                                                                               \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
              "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
              "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                   \
            : "l"(a), "l"(b), "r"(accumulate));                                                                           \
    }                                                                                                                     \
                                                                                                                          \
    template <int TransB>                                                                                                 \
    static __device__ __forceinline__ void rs_n128(float(&d)[64], const uint32_t(&a)[4], uint64_t b, int accumulate) {    \
        asm volatile(                                                                                                     \
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                                  \
            "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                                      \
            " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                    \
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                            \
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                            \
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "                           \
            "{%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"                                                               \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
              "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),      \
              "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),     \
              "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),     \
              "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),     \
              "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),     \
              "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),     \
              "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                   \
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(TransB));                          \
    }

template <> struct Wgmma<__half> { STOF_SM90_WGMMA_RS("f16") };

template <> struct Wgmma<__nv_bfloat16> { STOF_SM90_WGMMA_RS("bf16") };

#undef STOF_SM90_WGMMA_RS

}  // namespace stof::kernels::attn::sm90
