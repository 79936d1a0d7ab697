// Block-wise sparse attention for Hopper (sm_90a): TMA, wgmma, warp specialisation.
//
// Work items are (64 C query rows, head, batch), C = 2 consumers, or 3 with 64-row mask
// tiles (the launcher's choice); in groups of heads whose K and V fit in L2 and, within a
// group, heaviest query blocks first as far as the first mask pattern's first and last tile
// rows tell (see `late_first`), the first block of every pair ahead of the groups where it is
// long (`heavy_first`); a persistent grid of at most one CTA per multiprocessor draws them from a
// work queue in global memory (AttnParams::work_queue), so a CTA that drew a long item draws
// fewer. A CTA has C + 1 warpgroups:
//   warpgroup 0, two threads: the producer, a planner (thread 32) and an issuer (thread 0). Per
//     item the planner draws the item, loads the Q tile into one of Q_BUFFERS (three at D 64
//     where shared memory holds them, else two; once the O of item n - Q_BUFFERS has left it)
//     and publishes the item's head, batch and first query row beside it (row -1, with no Q: the
//     consumers' loop ends), and walks the listed 64-column key tiles of the item's rows (the
//     union of the C 64-row mask tile rows' lists, ascending; one list for a tile_m = 128 mask),
//     putting one entry per tile, then an end-of-item entry, into a SCHED-deep schedule in shared
//     memory. Per entry the issuer writes the tile's TileInfo to the next stage of a STAGES-deep
//     shared-memory ring and issues bulk tensor copies of K and V (and bulk copies of the bitmaps
//     of its partial 64-row parts) into it (one mbarrier for all of them having landed, one for
//     the stage being free again), so that merging the lists and issuing the copies overlap. In the
//     SPLIT kernel (D = 64) a tile row that lists many times the tiles of the item's other rows
//     is shared: its first tiles are walked with the other rows, whose consumers then store
//     their O and help with the rest; its consumer merges their parts before its store. With a
//     split workspace, the rest of a long row the mask lists (AttnParams::long_rows) is cut in
//     pieces: the owning item keeps the first, and slice items (drawn before every other item)
//     walk one each with all their consumers and leave its merged (o, m, l) in a slot of the
//     workspace; the owning item's consumer waits for its row's counter and merges them too.
//     The ring runs on across items, so the next item's tiles load while the consumers
//     finish the current one.
//   warpgroups 1..C: the consumers; consumer w owns query rows 64w..64w+63 (its mask
//     tile row), its Q rows in registers (in its Q tile when Tr::Q_SHARED). Per tile:
//     S = Q K^T (wgmma, K from shared memory), scale, bias, mask (only when the tile is
//     partial or holds invalid keys; full tiles run no mask code), online softmax in the
//     log2 domain, then O += P V (wgmma, P from registers, V from shared memory); a tile its
//     own row does not list is released untouched. The MMAs are pipelined within a consumer: QK^T of its
//     next tile is issued before PV of the current one, and its softmax runs while PV does.
//     O / l goes back through the item's Q tile and a tensor store.
// Registers move from the producer warpgroup to the consumers by setmaxnreg (Sm90Traits).
//
// Shared memory (1024-byte aligned): Q [Q_BUFFERS][C consumers][TILE] | K [STAGES][TILE] |
// V [STAGES][TILE] | mbarriers | item [Q_BUFFERS] | TileInfo [STAGES] | bitmaps [STAGES][C][512 bytes] |
// SPLIT: parts [C][PARTIAL_FLOATS][128] | schedule Entry [SCHED]. A
// TILE is 64 rows x D, stored as D / 64 boxes of 64 rows x 128 bytes in the 128-byte
// swizzle (chunk c of row r at c ^ (r % 8)).
#pragma once

#include "mma.cuh"
#include "params.hpp"
#include "sm90.cuh"
#include "tile_list.cuh"

#include <climits>
#include <type_traits>
#include <cuda.h>
#include <cuda_runtime.h>

namespace stof::kernels::attn {

// The most consumer warpgroups of a CTA.
constexpr int kMaxConsumers = 4;

// What the producer tells the consumers about the tile in a stage.
struct TileInfo {
    int col;                  // tile column; INT_MAX: the end of a list
    int bm[kMaxConsumers];    // per consumer: -2 not listed, -1 full, >= 0 bitmap index; at an end, SPLIT only: an EndOf
    unsigned long long cols;  // keys valid and < seq_k (bit c = column c of the tile)
};

// A ring entry as the planner passes it to the issuer: the tile and the (kv head, batch) its K
// and V are read from; kv head -1: no entries follow.
struct Entry {
    TileInfo t;
    int hk, b;
};
static_assert(sizeof(TileInfo) == 32 && sizeof(Entry) == 40, "block-wise sm90 attention: TileInfo and Entry sizes");

// C consumer warpgroups (2 or 3; 3 with 64-row mask tiles; 4 with those at D 64), 64 query
// rows each. SPLIT: long tile rows are shared among the consumers (see SPLIT_MIN).
template <int D, int C, bool SPLIT = false> struct Sm90Traits {
    static_assert(D == 64 || D == 128, "block-wise sm90 attention: head_dim must be 64 or 128");
    static_assert(C == 2 || C == 3 || (C == 4 && D == 64 && !SPLIT),
                  "block-wise sm90 attention: 2 or 3 consumers, or 4 at D 64");
    static_assert(!SPLIT || D == 64, "block-wise sm90 attention: shared rows at head_dim 64 only (registers)");
    static constexpr int BM = 64 * C;  // query rows per CTA
    static constexpr int BN = 64;      // key columns per tile (mask tile_n)
    static constexpr int THREADS = 128 * (C + 1);
    // K/V ring stages: at D 64 eight, so that the producer runs further ahead of short items (the
    // SPLIT instance's helpers' parts leave room for six), else as many as shared memory holds.
    static constexpr int STAGES = D == 64 ? (SPLIT ? 6 : 8) : C == 2 ? 4 : 3;
    // S = Q K^T reads Q from the shared Q tile (wgmma A from shared memory) instead of
    // registers where the consumer's registers leave no room for it (D = 128, C = 3: 160; C = 4: 112).
    static constexpr bool Q_SHARED = (D == 128 && C == 3) || C == 4;
    static constexpr int BOXES = D / 64;        // 128-byte swizzle boxes per tile row
    static constexpr int BOX_BYTES = 64 * 128;  // 64 rows x 64 elements
    static constexpr int TILE_BYTES = BOXES * BOX_BYTES;
    // Q tiles of the items the producer has loaded ahead (their O leaves through them too):
    // three where shared memory holds them, so that a short item's Q has two items' time to land.
    static constexpr int Q_BUFFERS = D == 64 && C < 4 && (!SPLIT || C == 2) ? 3 : 2;
    static constexpr int Q_OFFSET = 0;  // [buffer][consumer] Q tiles
    static constexpr int K_OFFSET = Q_BUFFERS * C * TILE_BYTES;
    static constexpr int V_OFFSET = K_OFFSET + STAGES * TILE_BYTES;
    // mbarriers: q_full[Q_BUFFERS], q_empty[Q_BUFFERS], full[STAGES], empty[STAGES], and in SPLIT
    // parts_full, parts_empty
    static constexpr int BAR_OFFSET = V_OFFSET + STAGES * TILE_BYTES;
    static constexpr int RING_BAR = 2 * Q_BUFFERS;  // full[0]'s index
    // The planner's schedule of ring entries for the issuer: SCHED entries, each with its
    // sched_full and sched_empty mbarriers (after the others).
    static constexpr int SCHED = 16;
    static constexpr int SCHED_BAR = RING_BAR + 2 * STAGES + 2 * SPLIT;  // sched_full[0]'s index
    // int4 [Q_BUFFERS]: per Q buffer the item's (head, batch, first query row, parts: see
    // slice_item_code); row -1 ends the loop.
    static constexpr int ITEM_OFFSET = (BAR_OFFSET + 8 * (SCHED_BAR + 2 * SCHED) + 15) / 16 * 16;
    static constexpr int INFO_OFFSET = ITEM_OFFSET + 16 * Q_BUFFERS;
    // Per stage, the bitmaps of the tile's partial 64-row parts: consumer w's at 512 * w.
    static constexpr int BITMAP_BYTES = 512 * C;
    static constexpr int BITMAP_OFFSET = INFO_OFFSET + static_cast<int>(sizeof(TileInfo)) * STAGES;
    // SPLIT: where one 64-row tile row of an item lists at least SPLIT_MIN tiles and 4 times as
    // many as each other row, the other consumers help with it after their own rows. Each
    // helper leaves its part of the row's softmax state (o, m, l: PARTIAL_FLOATS per thread,
    // thread-major) at PARTIAL_OFFSET + its slot.
    static constexpr int SPLIT_MIN = 16;
    static constexpr int PARTIAL_FLOATS = D / 2 + 4;
    static constexpr int PARTIAL_BYTES = SPLIT ? C * PARTIAL_FLOATS * 128 * 4 : 0;
    // SPLIT with slice items (AttnParams::slices): the rest of a listed long row is shared with
    // other CTAs, each of which leaves its part in a slot of AttnParams::split_workspace:
    // uint32 counters [SPLIT_SLOTS] (per long row of a (head, batch): its parts left), then
    // parts [SPLIT_SLOTS][PARTIAL_FLOATS][128] fp32.
    static constexpr int SPLIT_SLOTS = 256;
    static constexpr int SLOT_BYTES = PARTIAL_FLOATS * 128 * 4;
    static constexpr int SLOTS_OFFSET = 4 * SPLIT_SLOTS;
    static constexpr int PARTIAL_OFFSET = BITMAP_OFFSET + BITMAP_BYTES * STAGES;
    static constexpr int SCHED_OFFSET = PARTIAL_OFFSET + PARTIAL_BYTES;                               // Entry [SCHED]
    static constexpr int SMEM_BYTES = SCHED_OFFSET + static_cast<int>(sizeof(Entry)) * SCHED + 1024;  // + alignment slack
    static constexpr int CONSUMER_THREADS = 128 * C;
    // Registers per thread after setmaxnreg: the producer warpgroup gives what the consumers take
    // (56 for the planner's walk of a shared row, which spills with 40).
    static constexpr int PRODUCER_REGS = SPLIT ? 56 : C == 2 ? 40 : 32;
    static constexpr int CONSUMER_REGS = C == 2 ? (SPLIT ? 224 : 232) : C == 3 ? (SPLIT ? 152 : 160) : 112;
    // setmaxnreg moves registers within what the CTA got at launch (65536 / THREADS per
    // thread, in multiples of 8): a consumer asking for more would wait forever.
    static constexpr int LAUNCH_REGS = 65536 / THREADS / 8 * 8;
    static_assert(PRODUCER_REGS * 128 + CONSUMER_REGS * CONSUMER_THREADS <= LAUNCH_REGS * THREADS,
                  "block-wise sm90 attention: registers");
    static_assert(SMEM_BYTES <= 227 * 1024, "block-wise sm90 attention: shared memory");
    static_assert(BITMAP_OFFSET % 16 == 0, "block-wise sm90 attention: bulk copies need 16-byte alignment");
    static_assert(!SPLIT || (SLOTS_OFFSET == 1024 && SLOTS_OFFSET + SPLIT_SLOTS * SLOT_BYTES <= kAttentionSplitBytes),
                  "block-wise sm90 attention: the split workspace holds the counters in its first KiB, then the parts");
};

// The SPLIT kernel's shared row of an item whose C tile rows list len[c] tiles: the row
// (-1: none) and `cut`, how many of its tiles are walked with the other rows (the most any
// other row lists).
template <int C, int SPLIT_MIN> __device__ __forceinline__ int shared_row(const int (&len)[C], int& cut) {
    int longest = 0, row = -1;
    cut = 0;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        cut = max(cut, min(len[c], longest));
        if (len[c] > longest) {
            longest = len[c];
            row = c;
        }
    }
    return longest < SPLIT_MIN || longest < 4 * cut ? -1 : row;
}

// With `slices` slice items per shared row, the W tiles of the row after its first `cut`, in
// slices + 1 pieces: piece 0 the owning item's (smaller by what its consumer walks before, so
// that it ends with the others), pieces 1..slices the slice items'. Its tiles [first, last).
template <int C> __device__ __forceinline__ void row_piece(int W, int cut, int slices, int k, int& first, int& last) {
    const int own = max(0, (W + C * cut) / (slices + 1) - C * cut);
    first = k == 0 ? 0 : own + (k - 1) * (W - own) / slices;
    last = k == 0 ? own : own + k * (W - own) / slices;
}

// An item's `parts` (the fourth word of its int4): -1, or (SPLIT) for an item whose shared row
// has pieces in slice items the row's counter (>= 0; the pieces' slots are counter * slices + k),
// or for a slice item -2 - (4 * its slot + the consumer whose row it is).
__device__ __forceinline__ int slice_item_code(int slot, int row) { return -2 - (4 * slot + row); }

// In the SPLIT kernel, what an end entry (col == INT_MAX) is to consumer c (TileInfo::bm[c]):
// the end of its walk (kEnd: store O; kMerge: merge its helpers' parts of its long row, then
// store O; kHelp0 - r: store O, then help with row r), or -2 where its own long row goes on.
enum EndOf : int { kEnd = -3, kMerge = -4, kHelp0 = -5 };

// v, the same in every lane of the warp, as a value ptxas knows to be warp-uniform (REDUX writes
// a uniform register): what the consumers compute from such values (stage index, barrier, TileInfo
// and wgmma descriptor addresses) stays in uniform registers instead of being moved there before
// every wgmma (R2UR). 1.02-1.06x at D 64 (docs/PERF.md).
__device__ __forceinline__ int warp_uniform(int v) { return __reduce_min_sync(0xffffffffu, v); }

template <typename T, int D, int C, bool SPLIT>
__global__ void __launch_bounds__(Sm90Traits<D, C, SPLIT>::THREADS, 1)
    block_wise_sm90_kernel(const __grid_constant__ AttnParams p, const __grid_constant__ CUtensorMap tq,
                           const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv,
                           const __grid_constant__ CUtensorMap to, int hb_group) {
    using Tr = Sm90Traits<D, C, SPLIT>;
    constexpr int STAGES = Tr::STAGES, TILE = Tr::TILE_BYTES, BOX = Tr::BOX_BYTES;
    extern __shared__ unsigned char smem_raw[];
    unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    const uint32_t sbase = smem_addr(smem);
    constexpr int QN = Tr::Q_BUFFERS, RB = Tr::RING_BAR;
    auto q_full = [&](int qb) { return sbase + Tr::BAR_OFFSET + 8 * qb; };
    auto q_empty = [&](int qb) { return sbase + Tr::BAR_OFFSET + 8 * (QN + qb); };
    // A stage's K, V and bitmaps landed (one barrier for all: a second wait per tile, for V,
    // measured 2-3 % slower at D 64).
    auto full = [&](int s) { return sbase + Tr::BAR_OFFSET + 8 * (RB + s); };
    auto empty = [&](int s) { return sbase + Tr::BAR_OFFSET + 8 * (RB + STAGES + s); };
    // The helpers' parts of a shared row are in shared memory, and read by its owner (one phase
    // per shared row).
    [[maybe_unused]] const uint32_t parts_full = sbase + Tr::BAR_OFFSET + 8 * (RB + 2 * STAGES);
    [[maybe_unused]] const uint32_t parts_empty = sbase + Tr::BAR_OFFSET + 8 * (RB + 1 + 2 * STAGES);
    auto sched_full = [&](int k) { return sbase + Tr::BAR_OFFSET + 8 * (Tr::SCHED_BAR + k); };
    auto sched_empty = [&](int k) { return sbase + Tr::BAR_OFFSET + 8 * (Tr::SCHED_BAR + Tr::SCHED + k); };
    Entry* sched = reinterpret_cast<Entry*>(smem + Tr::SCHED_OFFSET);
    TileInfo* info = reinterpret_cast<TileInfo*>(smem + Tr::INFO_OFFSET);
    int4* item_of_buffer = reinterpret_cast<int4*>(smem + Tr::ITEM_OFFSET);

    const int tid = threadIdx.x, wg = tid >> 7;
    // One 128-row mask tile row for both consumers (C = 2 only: the launcher's choice).
    const bool shared_list = C == 2 && p.tile_m == 128;
    // Consumer c walks its own tile list and gets its own bitmaps (else it shares consumer 0's).
    auto own_list = [&](int c) { return c == 0 || !shared_list; };

    if (tid == 0) {
        for (int qb = 0; qb < QN; ++qb) {
            sm90::mbar_init(q_full(qb), 1);
            sm90::mbar_init(q_empty(qb), Tr::CONSUMER_THREADS);
        }
        for (int s = 0; s < STAGES; ++s) {
            sm90::mbar_init(full(s), 1);
            sm90::mbar_init(empty(s), Tr::CONSUMER_THREADS);
        }
        if constexpr (SPLIT) {
            sm90::mbar_init(parts_full, Tr::CONSUMER_THREADS - 128);
            sm90::mbar_init(parts_empty, 128);
        }
        for (int k = 0; k < Tr::SCHED; ++k) {
            sm90::mbar_init(sched_full(k), 1);
            sm90::mbar_init(sched_empty(k), 1);
        }
        sm90::fence_mbar_init();
    }
    __syncthreads();

    if (wg == 0) {
        sm90::setmaxnreg_dec<Tr::PRODUCER_REGS>();
        if (tid == 0) {
            // The issuer: per schedule entry, once its stage is free, the tile's TileInfo and the
            // bulk copies of its bitmaps, K and V (an end entry completes its stage's full barrier).
            sm90::prefetch_tmap(&tk);
            sm90::prefetch_tmap(&tv);
            int s = 0;
            uint32_t phase = 0;
            for (int e = 0;; ++e) {
                const int k = e % Tr::SCHED;
                sm90::mbar_wait(sched_full(k), (e / Tr::SCHED) & 1);
                const Entry x = sched[k];
                sm90::mbar_arrive(sched_empty(k));
                if (x.hk < 0) return;
                const TileInfo& t = x.t;
                sm90::mbar_wait(empty(s), phase ^ 1);
                info[s] = t;
                if (t.col == INT_MAX) {
                    sm90::mbar_arrive(full(s));
                } else {
                    // The bitmaps of a partial tile travel with K and V: 64 words per 64 rows.
                    const uint32_t bms = sbase + Tr::BITMAP_OFFSET + s * Tr::BITMAP_BYTES;
                    const uint32_t wbytes = 8u * p.words_per_tile;
                    uint32_t bm_bytes = 0;
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        if (t.bm[c] >= 0 && own_list(c)) bm_bytes += wbytes;
                    sm90::mbar_arrive_expect_tx(full(s), 2 * TILE + bm_bytes);
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        if (t.bm[c] >= 0 && own_list(c))
                            sm90::bulk_load(bms + c * wbytes, p.bitmaps + static_cast<int64_t>(t.bm[c]) * p.words_per_tile,
                                            wbytes, full(s));
                    for (int xb = 0; xb < Tr::BOXES; ++xb)
                        sm90::tma_load_4d(sbase + Tr::K_OFFSET + s * TILE + xb * BOX, &tk, full(s), 64 * xb, t.col * Tr::BN,
                                          x.hk, x.b);
                    for (int xb = 0; xb < Tr::BOXES; ++xb)
                        sm90::tma_load_4d(sbase + Tr::V_OFFSET + s * TILE + xb * BOX, &tv, full(s), 64 * xb, t.col * Tr::BN,
                                          x.hk, x.b);
                }
                if (++s == STAGES) {
                    s = 0;
                    phase ^= 1;
                }
            }
        }
        if (tid != 32) return;
        // The planner: draws and decodes the items, loads their Q and merges their rows' lists
        // into schedule entries for the issuer.
        int entries = 0;
        auto put = [&](const TileInfo& t, int hk, int b) {
            const int k = entries % Tr::SCHED;
            sm90::mbar_wait(sched_empty(k), ((entries / Tr::SCHED) & 1) ^ 1);
            sched[k] = Entry{t, hk, b};
            sm90::mbar_arrive(sched_full(k));
            ++entries;
        };
        // Work items: (64 C query rows, head, batch) in groups of `hb_group` (head, batch) pairs,
        // sized by the launcher so that a group's K and V stay in L2 while the CTAs work on it (all
        // pairs in one group when they fit); within a group, the query blocks in heaviest-first
        // order as far as the ends of the first mask pattern tell: later blocks first when its last
        // tile row lists at least as many tiles as its first (causal), earlier first otherwise
        // (global rows at the top: longformer, bigbird). Where the first block of a pair is long
        // against a group's work (`heavy_first`: its longest tile row is at least 2.2 times the mean
        // tile row times the rounds of a group, hb_group (qblocks - 1) / gridDim.x), the first blocks
        // of all pairs come before the groups, which follow without them: drawn with its group, a
        // long first block of a late group would end last.
        const int hbs = p.heads * p.batch;
        const int qblocks = (p.seq_q + Tr::BM - 1) / Tr::BM;
        const int items = qblocks * hbs;
        const int first_len = __ldg(p.row_ptr + 1) - __ldg(p.row_ptr);
        const int last_len = __ldg(p.row_ptr + p.tile_rows) - __ldg(p.row_ptr + p.tile_rows - 1);
        const bool late_first = last_len >= first_len;
        // Causal-like patterns (a last tile row longer than the first) keep one group: the
        // heaviest-first order is what balances them. Every other pattern is grouped, dense ones
        // too (in one group, D 128 dense at B 2, S 4096 hit L2 for 28 % of its reads, grouped 83 %).
        const int hbg = last_len > first_len ? hbs : hb_group;
        bool heavy_first = false;
        if (hbg < hbs && qblocks > 1) {
            int longest = 0;
            for (int r = 0; r < Tr::BM / p.tile_m && r < p.tile_rows; ++r)
                longest = max(longest, __ldg(p.row_ptr + r + 1) - __ldg(p.row_ptr + r));
            const int64_t all = __ldg(p.row_ptr + p.tile_rows) - __ldg(p.row_ptr);
            heavy_first = 5ll * longest * gridDim.x * p.tile_rows >= 11ll * hbg * (qblocks - 1) * all;
        }
        int h = 0, b = 0, q0 = 0;
        auto decode = [&](int item) {
            // With heavy_first, items [0, hbs) are the pairs' first blocks and the groups hold the rest.
            const int skipped = heavy_first ? 1 : 0, first = skipped * hbs, ranks = qblocks - skipped;
            int hb = item, rank = 0;
            if (item >= first) {
                const int rest = item - first;
                const int group = rest / (hbg * ranks), hb0 = group * hbg;
                const int in_group = rest - hb0 * ranks, size = min(hbg, hbs - hb0);
                hb = hb0 + in_group % size;
                rank = skipped + in_group / size;
            }
            h = hb % p.heads;
            b = hb / p.heads;
            q0 = (late_first ? qblocks - 1 - rank : rank) * Tr::BM;
        };
        // SPLIT with slice items: items [0, slices_all) are the slice items, (head, batch) major,
        // then p.long_row_count rows, then p.slices pieces; the other items follow.
        const int slices_all = SPLIT ? hbs * p.long_row_count * p.slices : 0, all_items = slices_all + items;
        // The work queue: CTA c's first item is c, each later one gridDim.x + the next ticket of
        // work_queue[0]; with slice items every item is a ticket, so that a CTA whose item waits
        // for slice items' parts waits for items already drawn. A CTA whose draw is past the end
        // counts itself in work_queue[1]; the last to do so, when no draw is left, sets both words
        // back to zero for the next launch.
        auto draw = [&](int n) {
            if (n == 0 && slices_all == 0) return static_cast<int>(blockIdx.x);
            const int item = static_cast<int>((slices_all ? 0u : gridDim.x) + atomicAdd(p.work_queue, 1u));
            if (item >= all_items) {
                __threadfence();  // this CTA's last draw before its count
                if (atomicAdd(p.work_queue + 1, 1u) == gridDim.x - 1) {
                    atomicExch(p.work_queue, 0u);
                    atomicExch(p.work_queue + 1, 0u);
                }
            }
            return item;
        };
        sm90::prefetch_tmap(&tq);
        auto pattern_rows = [&] {
            const int pat = (p.mask_batch == 1 ? 0 : b) * p.mask_heads + (p.mask_heads == 1 ? 0 : h);
            return p.row_ptr + pat * (p.tile_rows + 1);
        };
        for (int n = 0;; ++n) {
            const int qb = n % QN;
            sm90::mbar_wait(q_empty(qb), ((n / QN) & 1) ^ 1);  // the O of item n - QN is stored
            // A slice item: its row's consumer and tiles [slice_first, slice_last) of col_idx;
            // passed over where its row is not the shared row of its item in this pattern.
            int item = 0, slice_row = -1, slice_first = 0, slice_last = 0;
            for (int again = 0;; again = 1) {
                item = draw(n + again);
                if (!SPLIT || item >= all_items || item >= slices_all) break;
                const int per_hb = p.long_row_count * p.slices, hb = item / per_hb, j = item % per_hb / p.slices;
                int r = p.long_rows[0];  // p.long_rows[j], without a local copy of the array
#pragma unroll
                for (int x = 1; x < kMaskLongRows; ++x)
                    if (x == j) r = p.long_rows[x];
                const int tr0 = r - r % C;
                h = hb % p.heads;
                b = hb / p.heads;
                q0 = tr0 * 64;
                const int32_t* rp = pattern_rows();
                int len[C], cut = 0;
#pragma unroll
                for (int c = 0; c < C; ++c) len[c] = tr0 + c < p.tile_rows ? __ldg(rp + tr0 + c + 1) - __ldg(rp + tr0 + c) : 0;
                if (shared_row<C, Tr::SPLIT_MIN>(len, cut) != r - tr0) continue;
                const int start = __ldg(rp + r) + cut;
                int first = 0, last = 0;
                row_piece<C>(__ldg(rp + r + 1) - start, cut, p.slices, item % p.slices + 1, first, last);
                slice_row = r - tr0;
                slice_first = start + first;
                slice_last = start + last;
                break;
            }
            if (item >= all_items) {
                item_of_buffer[qb] = make_int4(0, 0, -1, 0);
                sm90::mbar_arrive(q_full(qb));
                break;
            }
            if (slice_row < 0) decode(item - slices_all);
            const int hk = h / p.group;
            const int32_t* rp = pattern_rows();
            const int tr0 = q0 / p.tile_m;
            // SPLIT: an item whose shared row is a listed long row leaves the rest of it after
            // piece 0 to slice items.
            int parts = -1;
            if constexpr (SPLIT) {
                if (slice_row >= 0) parts = slice_item_code(item, slice_row);
                for (int j = 0; j < p.long_row_count && slices_all > 0 && slice_row < 0; ++j) {
                    const int r = p.long_rows[j];
                    if (r - r % C != tr0) continue;
                    int len[C], cut = 0;
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        len[c] = tr0 + c < p.tile_rows ? __ldg(rp + tr0 + c + 1) - __ldg(rp + tr0 + c) : 0;
                    if (shared_row<C, Tr::SPLIT_MIN>(len, cut) == r - tr0) parts = (b * p.heads + h) * p.long_row_count + j;
                }
            }
            item_of_buffer[qb] = make_int4(h, b, q0, parts);
            // A slice item reads only its row's Q.
            sm90::mbar_arrive_expect_tx(q_full(qb), (slice_row < 0 ? C : 1) * TILE);
            for (int w = 0; w < C; ++w)
                if (slice_row < 0 || w == slice_row)
                    for (int x = 0; x < Tr::BOXES; ++x)
                        sm90::tma_load_4d(sbase + Tr::Q_OFFSET + (C * qb + w) * TILE + x * BOX, &tq, q_full(qb), 64 * x,
                                          q0 + 64 * w, h, b);

            TileList lists[C];  // per consumer that walks its own list
#pragma unroll
            for (int c = 0; c < C; ++c) {
                if (c == 0 || (own_list(c) && tr0 + c < p.tile_rows))
                    lists[c].init(p, __ldg(rp + tr0 + c), __ldg(rp + tr0 + c + 1));
                else lists[c].init(p, 0, 0);
            }
            const unsigned long long* kv_row = p.key_valid ? reinterpret_cast<const unsigned long long*>(p.key_valid) +
                                                                 static_cast<int64_t>(b) * p.kv_words
                                                           : nullptr;
            // The long row (SPLIT): part 0 walks its first `cut` tiles (as many as the longest
            // other row lists) with the other rows and ends with an entry that sends the other
            // consumers to help; part 1 gives the rest of it (with slice items, piece 0 of the
            // rest) to the consumers in turn. A slice item is part 1 of its piece alone.
            int long_row = -1, long_end = 0;
            if constexpr (SPLIT) {
                if (slice_row >= 0) {
                    long_row = slice_row;
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        lists[c].init(p, c == slice_row ? slice_first : 0, c == slice_row ? slice_last : 0);
                } else if (!shared_list) {
                    int len[C], cut = 0;
#pragma unroll
                    for (int c = 0; c < C; ++c) len[c] = lists[c].end - lists[c].pos;
                    long_row = shared_row<C, Tr::SPLIT_MIN>(len, cut);
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        if (c == long_row) {
                            long_end = lists[c].end;
                            if (parts >= 0) {  // piece 0
                                int first = 0, last = 0;
                                row_piece<C>(len[c] - cut, cut, p.slices, 0, first, last);
                                long_end = lists[c].pos + cut + last;
                            }
                            lists[c].init(p, lists[c].pos, lists[c].pos + cut);
                        }
                }
            }

            for (int part = slice_row >= 0 ? 1 : 0, turn = 0;;) {
                TileInfo t;
                t.col = lists[0].col;
#pragma unroll
                for (int c = 1; c < C; ++c) t.col = min(t.col, lists[c].col);
#pragma unroll
                for (int c = 0; c < kMaxConsumers; ++c)
                    t.bm[c] = c >= C ? -2 : !own_list(c) ? t.bm[0] : lists[c].col == t.col ? lists[c].bm : -2;
                t.cols = ~0ull;
                if (t.col != INT_MAX) {
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        if (t.bm[c] != -2 && own_list(c)) lists[c].advance(p);
                    if (kv_row) t.cols = __ldg(kv_row + t.col);
                    const int rem = p.seq_k - t.col * Tr::BN;
                    if (rem < Tr::BN) t.cols &= (1ull << rem) - 1;
                    if (SPLIT && part == 1) {  // the long row's tile goes to consumer `turn`
                        const int bm = max(t.bm[0], max(t.bm[1], t.bm[2]));
#pragma unroll
                        for (int c = 0; c < C; ++c) t.bm[c] = c == turn ? bm : -2;
                        if (++turn == C) turn = 0;
                    }
                }
                if (SPLIT && t.col == INT_MAX) {
#pragma unroll
                    for (int c = 0; c < kMaxConsumers; ++c)
                        t.bm[c] = long_row < 0 ? kEnd
                                  : part == 0  ? (c == long_row ? -2 : kHelp0 - long_row)
                                               : (c == long_row ? kMerge : kEnd);
                }
                put(t, hk, b);
                if (t.col != INT_MAX) continue;
                if (!SPLIT || long_row < 0 || part == 1) break;
                part = 1;  // the other rows are done
#pragma unroll
                for (int c = 0; c < C; ++c)
                    if (c == long_row) lists[c].init(p, lists[c].end, long_end);
            }
        }
        put(TileInfo{}, -1, 0);
        return;
    }

    // ---- consumers ----
    sm90::setmaxnreg_inc<Tr::CONSUMER_REGS>();
    const int w = warp_uniform(wg - 1), ct = tid - 128 * wg;
    const int wq = ct >> 5, lane = ct & 31, g = lane >> 2, t4 = lane & 3;
    // Per work item: global query rows of this lane (row0, row0 + 8), this consumer's Q tile, bias.
    int row0 = 0;
    uint32_t qs = 0;
    const T* bias_h = nullptr;
    bool prescale = false;  // scores scaled before the softmax (a bias, or a scale that is not positive)
    float sl = 1.f;         // the scale the softmax folds into its exponent
    float o[D / 2];
    float m_r[2] = {-INFINITY, -INFINITY}, l_r[2] = {0.f, 0.f};
    // This warp's Q rows as wgmma A fragments, k-step kk: columns 16kk..16kk+15 (unused when Tr::Q_SHARED).
    uint32_t qf[Tr::Q_SHARED ? 1 : D / 16][4];

    // Waits for the stages in order from (s, phase), releasing tiles this consumer's row does
    // not list: 1 at a listed tile (s, phase name it; not released), 0 at the end of this
    // consumer's walk (SPLIT: s, phase name it, not released; else released, s, phase past it),
    // -1 after max_ahead unlisted tiles (s, phase name the next stage to look at). Every lane reads
    // the same TileInfo; the tests are warp votes so that s stays warp-uniform (see warp_uniform).
    auto next_listed = [&](int& s, uint32_t& phase, TileInfo& t, int& bm, int max_ahead) {
        for (int k = 0; k < max_ahead; ++k) {
            sm90::mbar_wait(full(s), phase);
            t = info[s];
            bm = info[s].bm[w];
            if constexpr (SPLIT) {
                if (__any_sync(0xffffffffu, bm != -2)) return bm >= -1 ? 1 : 0;
            } else if (__any_sync(0xffffffffu, t.col != INT_MAX && bm != -2)) {
                return 1;
            }
            sm90::mbar_arrive(empty(s));
            if (++s == STAGES) {
                s = 0;
                phase ^= 1;
            }
            if (!SPLIT && __any_sync(0xffffffffu, t.col == INT_MAX)) return 0;
        }
        return -1;
    };
    // S = Q K^T of the tile in stage s (issued and committed, not waited for): D / 16
    // k-steps of 32 bytes within a 128-byte row, BOX bytes per 64 columns.
    auto issue_qk = [&](float(&sc)[32], int s) {
        const uint64_t dk = sm90::desc_sw128(sbase + Tr::K_OFFSET + s * TILE, 16, 1024);
        sm90::fence_regs(sc);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint32_t off = (kk >> 2) * BOX + (kk & 3) * 32;
            if constexpr (Tr::Q_SHARED)
                sm90::Wgmma<T>::ss_n64(sc, sm90::desc_advance(sm90::desc_sw128(qs, 16, 1024), off), sm90::desc_advance(dk, off),
                                       kk > 0);
            else sm90::Wgmma<T>::template rs_n64<0>(sc, qf[kk], sm90::desc_advance(dk, off), kk > 0);
        }
        sm90::wgmma_commit();
        sm90::fence_regs(sc);
    };
    // The keep bits of this lane's scores when the tile needs masking: keep[r] bit 8m + 2h + c is
    // column 8(4h + m) + 2t4 + c of row g + 8r (score sc[4n + 2r + c] with n = 4h + m).
    auto load_keep = [&](const TileInfo& t, int bm, int s, uint32_t(&keep)[2]) {
        keep[0] = keep[1] = 0x0F0F0F0Fu;
        if (bm >= 0) {
            // Word 8 rb + n (8 bytes) is the 8x8 block (row block rb, column block n), byte i its
            // row i, bit c its column c: row g + 8r is byte g % 4 of 32-bit half g / 4 of the words
            // of row block 2wq + r.
            const uint32_t* half =
                reinterpret_cast<const uint32_t*>(smem + Tr::BITMAP_OFFSET + s * Tr::BITMAP_BYTES + 512 * w) + (g >> 2);
            const uint32_t pick = (g & 3) | ((g & 3) + 4) << 4;  // byte g % 4 of two words -> bytes 0, 1
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const uint32_t* row = half + 16 * (2 * wq + r);
                uint32_t q[4];  // column blocks 2k, 2k + 1 in bytes 0, 1
#pragma unroll
                for (int k = 0; k < 4; ++k) q[k] = __byte_perm(row[4 * k], row[4 * k + 2], pick);
                const uint32_t lo = __byte_perm(q[0], q[1], 0x5410), hi = __byte_perm(q[2], q[3], 0x5410);
                keep[r] = ((lo >> (2 * t4)) & 0x03030303u) | ((hi >> (2 * t4)) & 0x03030303u) << 2;
            }
        }
        if (t.cols != ~0ull) {
            const unsigned long long cb = (t.cols >> (2 * t4)) & 0x0303030303030303ull;
            const uint32_t c = static_cast<uint32_t>(cb) | static_cast<uint32_t>(cb >> 32) << 2;
            keep[0] &= c;
            keep[1] &= c;
        }
    };
    // Scores -> probabilities: mask (partial tiles and invalid keys only), online softmax in
    // the log2 domain; rows g (r = 0) and g + 8 (r = 1), reduced over the quad. Without a
    // bias the scale is folded into the exponent (exp2(s * sl - m), one FFMA; max(s) * sl is
    // max(s * sl) for sl > 0); with a bias the scores are scaled first and sl is 1. m_r is in
    // the scaled domain. alpha: the factor O must be rescaled by (exactly 1 when the row
    // maximum did not move). Returns whether either row's maximum moved (known before alpha).
    // `general`: std::true_type where the item may prescale or add a bias (else neither); `stage`:
    // the ring slot holding the tile's bitmap.
    auto softmax = [&](auto general, float(&sc)[32], const TileInfo& t, int bm, int stage, float(&alpha)[2]) {
        if (decltype(general)::value && prescale) {
#pragma unroll
            for (int i = 0; i < 32; ++i) sc[i] *= p.scale_log2;
        }
        if (decltype(general)::value && bias_h) {
            const int j0 = t.col * Tr::BN + 2 * t4;
#pragma unroll
            for (int n = 0; n < 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int i = row0 + (e >> 1) * 8, j = j0 + n * 8 + (e & 1);
                    if (i < p.seq_q && j < p.seq_k) sc[4 * n + e] += load_elem(bias_h + i * p.bias_ss + j) * kLog2e;
                }
        }
        if (bm >= 0 || t.cols != ~0ull) {
            uint32_t keep[2];
            load_keep(t, bm, stage, keep);
#pragma unroll
            for (int n = 0; n < 8; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (!((keep[e >> 1] >> (8 * (n & 3) + 2 * (n >> 2) + (e & 1))) & 1u)) sc[4 * n + e] = -INFINITY;
        }
        float mx[2] = {fmaxf(sc[0], sc[1]), fmaxf(sc[2], sc[3])};
#pragma unroll
        for (int n = 1; n < 8; ++n) {
            mx[0] = fmaxf(mx[0], fmaxf(sc[4 * n + 0], sc[4 * n + 1]));
            mx[1] = fmaxf(mx[1], fmaxf(sc[4 * n + 2], sc[4 * n + 3]));
        }
        float base[2];
        bool moved = false;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float m_new = fmaxf(m_r[r], mx[r] * sl);
            moved |= m_new != m_r[r];
            base[r] = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing kept yet stays at zero
            alpha[r] = exp2_approx(m_r[r] - base[r]);
            m_r[r] = m_new;
        }
        float rs[2];
#pragma unroll
        for (int n = 0; n < 8; ++n) {
            sc[4 * n + 0] = exp2_approx(fmaf(sc[4 * n + 0], sl, -base[0]));
            sc[4 * n + 1] = exp2_approx(fmaf(sc[4 * n + 1], sl, -base[0]));
            sc[4 * n + 2] = exp2_approx(fmaf(sc[4 * n + 2], sl, -base[1]));
            sc[4 * n + 3] = exp2_approx(fmaf(sc[4 * n + 3], sl, -base[1]));
            rs[0] = n == 0 ? sc[0] + sc[1] : rs[0] + (sc[4 * n + 0] + sc[4 * n + 1]);
            rs[1] = n == 0 ? sc[2] + sc[3] : rs[1] + (sc[4 * n + 2] + sc[4 * n + 3]);
        }
        l_r[0] = l_r[0] * alpha[0] + rs[0];
        l_r[1] = l_r[1] * alpha[1] + rs[1];
        return moved;
    };
    // P as the register A operand of the PV k-steps: step kk covers keys 16kk..16kk+15
    // (score blocks 2kk and 2kk + 1).
    auto pack_p = [&](const float(&sc)[32], uint32_t(&pa)[4][4]) {
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            pa[kk][0] = pack2<T>(sc[8 * kk + 0], sc[8 * kk + 1]);
            pa[kk][1] = pack2<T>(sc[8 * kk + 2], sc[8 * kk + 3]);
            pa[kk][2] = pack2<T>(sc[8 * kk + 4], sc[8 * kk + 5]);
            pa[kk][3] = pack2<T>(sc[8 * kk + 6], sc[8 * kk + 7]);
        }
    };

    // O += P V of the tile in stage s: 16 V rows of 128 bytes per k-step (committed, not waited for).
    auto issue_pv = [&](const uint32_t(&pa)[4][4], int s) {
        const uint64_t dv0 = sm90::desc_sw128(sbase + Tr::V_OFFSET + s * TILE, BOX, 1024);
        sm90::fence_regs(o);
        sm90::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const uint64_t dv = sm90::desc_advance(dv0, kk * 16 * 128);
            if constexpr (D == 128) sm90::Wgmma<T>::template rs_n128<1>(o, pa[kk], dv, 1);
            else sm90::Wgmma<T>::template rs_n64<1>(o, pa[kk], dv, 1);
        }
        sm90::wgmma_commit();
        sm90::fence_regs(o);
    };
    auto rescale_o = [&](const float(&alpha)[2]) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
            o[4 * n + 0] *= alpha[0];
            o[4 * n + 1] *= alpha[0];
            o[4 * n + 2] *= alpha[1];
            o[4 * n + 3] *= alpha[1];
        }
    };

    int s = 0;  // the ring's next stage (and its phase), continued across work items
    uint32_t phase = 0;
    [[maybe_unused]] float* const partial = reinterpret_cast<float*>(smem + Tr::PARTIAL_OFFSET);
    [[maybe_unused]] uint32_t parts_phase = 0;  // of parts_full
    for (int n = 0;; ++n) {
        const int qb = n % QN;
        sm90::mbar_wait(q_full(qb), (n / QN) & 1);
        const int4 item = item_of_buffer[qb];
        const int h = item.x, b = item.y, q0 = warp_uniform(item.z), parts = warp_uniform(item.w);
        if (q0 < 0) break;
        // SPLIT: a slice item's slot and row (-1: not a slice item).
        const int slice = SPLIT && parts <= -2 ? -2 - parts : -1, slice_row = slice < 0 ? -1 : slice & 3;
        // Part 0: this consumer's 64 rows; part 1 (SPLIT, a helper): its tiles of the item's long row
        // `rows`, in a slice item from the start.
        for (int part = slice_row >= 0 && slice_row != w, rows = slice_row >= 0 ? slice_row : w;; part = 1) {
            row0 = q0 + 64 * rows + 16 * wq + g;
            qs = sbase + Tr::Q_OFFSET + (C * qb + rows) * TILE;
            bias_h = p.bias ? static_cast<const T*>(p.bias) + h * p.bias_sh : nullptr;
            prescale = bias_h || !(p.scale_log2 > 0.f);
            sl = prescale ? 1.f : p.scale_log2;
#pragma unroll
            for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
            m_r[0] = m_r[1] = -INFINITY;
            l_r[0] = l_r[1] = 0.f;

            // Q fragments, read once from the swizzled Q tile: S = Q K^T then streams only K
            // from shared memory.
            if constexpr (!Tr::Q_SHARED) {
                const int r = 16 * wq + (lane & 15);
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk) {
                    const int c = 2 * (kk & 3) + (lane >> 4);
                    ldmatrix_x4(qf[kk], qs + (kk >> 2) * BOX + r * 128 + ((c ^ (r & 7)) << 4));
                }
            }

            // This consumer's walk of the item: its tiles from the ring, instantiated apart for
            // items that neither prescale nor add a bias, without those branches per tile
            // (1.03-1.07x at D 64, 1.02-1.03x at D 128: docs/PERF.md).
            auto walk = [&](auto general) {
                TileInfo t;
                int bm = -2;
                if (next_listed(s, phase, t, bm, INT_MAX) == 1) {
                    // Pipelined: while PV of tile j runs, QK^T of tile j + 1 is issued first and its
                    // softmax computed; O is rescaled once PV of tile j is done.
                    float sc[32];
                    uint32_t pa[4][4];
                    float alpha[2];
                    issue_qk(sc, s);
                    sm90::wgmma_wait<0>();
                    sm90::fence_regs(sc);
                    softmax(general, sc, t, bm, s, alpha);
                    pack_p(sc, pa);
                    int s2;
                    uint32_t phase2;
                    bool pending = true;  // PV of the tile in stage s is still to be done
                    for (;;) {
                        s2 = s == STAGES - 1 ? 0 : s + 1;
                        phase2 = s2 == 0 ? phase ^ 1 : phase;
                        TileInfo t2;
                        int bm2 = -2;
                        // While stage s is held, only STAGES - 1 stages ahead can fill.
                        const int found = next_listed(s2, phase2, t2, bm2, STAGES - 1);
                        if (found == 1) {  // tested first: one branch a tile on the common path
                            issue_qk(sc, s2);
                            issue_pv(pa, s);
                            sm90::wgmma_wait<1>();
                            sm90::fence_regs(sc);
                            const bool moved = softmax(general, sc, t2, bm2, s2, alpha);
                            // O is rescaled only when a row maximum moved. The branch also keeps the
                            // wait for PV after the softmax: within one block ptxas hoists it above
                            // the exponentials.
                            if (__any_sync(0xffffffffu, moved)) {
                                sm90::wgmma_wait<0>();
                                sm90::fence_regs(o);
                                rescale_o(alpha);
                            } else {
                                sm90::wgmma_wait<0>();
                                sm90::fence_regs(o);
                            }
                            sm90::mbar_arrive(empty(s));
                        } else {
                            if (found == 0) break;
                            // This row's next tile is further ahead than the ring reaches: finish tile j first.
                            issue_pv(pa, s);
                            sm90::wgmma_wait<0>();
                            sm90::fence_regs(o);
                            sm90::mbar_arrive(empty(s));
                            if (next_listed(s2, phase2, t2, bm2, INT_MAX) == 0) {
                                pending = false;
                                break;
                            }
                            issue_qk(sc, s2);
                            sm90::wgmma_wait<0>();
                            sm90::fence_regs(sc);
                            softmax(general, sc, t2, bm2, s2, alpha);
                            rescale_o(alpha);
                        }
                        pack_p(sc, pa);
                        s = s2;
                        phase = phase2;
                    }
                    if (pending) {
                        issue_pv(pa, s);
                        sm90::wgmma_wait<0>();
                        sm90::fence_regs(o);
                        sm90::mbar_arrive(empty(s));
                    }
                    s = s2;  // at (SPLIT) or past the end of this consumer's walk
                    phase = phase2;
                }
            };
            if (!prescale) walk(std::false_type{});
            else walk(std::true_type{});

            // SPLIT: at the end entry of this consumer's walk, held until a long row's parts are merged.
            int end = kEnd;
            if constexpr (SPLIT) {
                end = warp_uniform(info[s].bm[w]);
                constexpr int PF = Tr::PARTIAL_FLOATS;
                // Parts of the long row's softmax state, thread-major: float k of this thread's at k * 128.
                auto put_part = [&](float* mine) {
#pragma unroll
                    for (int i = 0; i < D / 2; ++i) mine[i * 128] = o[i];
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        mine[(D / 2 + r) * 128] = m_r[r];
                        mine[(D / 2 + 2 + r) * 128] = l_r[r];
                    }
                };
                auto merge_part = [&](auto part_at) {  // part_at(k): float k of the part
                    float a[2], a_c[2];
#pragma unroll
                    for (int r = 0; r < 2; ++r) {
                        const float m_c = part_at(D / 2 + r), m_new = fmaxf(m_r[r], m_c);
                        const float base = m_new == -INFINITY ? 0.f : m_new;
                        a[r] = exp2_approx(m_r[r] - base);
                        a_c[r] = exp2_approx(m_c - base);
                        l_r[r] = l_r[r] * a[r] + part_at(D / 2 + 2 + r) * a_c[r];
                        m_r[r] = m_new;
                    }
#pragma unroll
                    for (int i = 0; i < D / 2; ++i) o[i] = o[i] * a[(i >> 1) & 1] + part_at(i) * a_c[(i >> 1) & 1];
                };
                uint32_t* const counters = static_cast<uint32_t*>(p.split_workspace);
                float* const slots = reinterpret_cast<float*>(static_cast<unsigned char*>(p.split_workspace) + Tr::SLOTS_OFFSET);
                if (part == 1) {
                    // This helper's (o, m, l) of the long row, for its owner, once the owner has read its last.
                    sm90::mbar_wait(parts_empty, parts_phase ^ 1);
                    put_part(partial + w * PF * 128 + ct);
                    sm90::mbar_arrive(parts_full);
                    parts_phase ^= 1;
                } else if (end == kMerge) {  // the owner of the long row: merge every helper's part
                    sm90::mbar_wait(parts_full, parts_phase);
                    parts_phase ^= 1;
#pragma unroll
                    for (int c = 0; c < C; ++c)
                        if (c != w) merge_part([&](int k) { return partial[(c * PF + k) * 128 + ct]; });
                    sm90::mbar_arrive(parts_empty);
                    if (slice >= 0) {  // a slice item's piece, for the owning item's CTA
                        put_part(slots + static_cast<int64_t>(slice >> 2) * PF * 128 + ct);
                        sm90::named_barrier(1 + w, 128);
                        if (ct == 0) {
                            __threadfence();
                            atomicAdd(counters + (slice >> 2) / p.slices, 1u);
                        }
                    } else if (parts >= 0) {  // merge the slice items' pieces of this row
                        if (ct == 0) {
                            while (sm90::ld_acquire(counters + parts) < static_cast<uint32_t>(p.slices)) __nanosleep(256);
                            counters[parts] = 0;  // for the next launch
                        }
                        sm90::named_barrier(1 + w, 128);
                        for (int k = 0; k < p.slices; ++k) {
                            const float* theirs = slots + (static_cast<int64_t>(parts) * p.slices + k) * PF * 128 + ct;
                            merge_part([&](int x) { return __ldcg(theirs + x * 128); });
                        }
                    }
                }
                sm90::mbar_arrive(empty(s));
                if (++s == STAGES) {
                    s = 0;
                    phase ^= 1;
                }
                if (slice >= 0) {  // nothing to store: this consumer is done with the item's Q
                    sm90::mbar_arrive(q_empty(qb));
                    break;
                }
                if (part == 1) break;
            }

            // O / l (zero for a row with nothing kept) -> this consumer's Q tile (same swizzled
            // layout) -> tensor store (rows past seq_q are not written); the producer may then
            // load the Q tile of a later work item into it.
            float inv[2];
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                l_r[r] += __shfl_xor_sync(0xffffffffu, l_r[r], 1);
                l_r[r] += __shfl_xor_sync(0xffffffffu, l_r[r], 2);
                inv[r] = l_r[r] > 0.f ? 1.f / l_r[r] : 0.f;
            }
            sm90::named_barrier(1 + w, 128);  // every warp of this consumer is done with its Q tile
            const int r = 16 * wq + g;        // rows r and r + 8 share one swizzle
            unsigned char* qtile = smem + Tr::Q_OFFSET + (C * qb + w) * TILE;
#pragma unroll
            for (int n8 = 0; n8 < D / 8; ++n8) {
                unsigned char* at = qtile + (n8 >> 3) * BOX + r * 128 + (((n8 & 7) ^ (r & 7)) << 4) + 4 * t4;
                *reinterpret_cast<uint32_t*>(at) = pack2<T>(o[4 * n8 + 0] * inv[0], o[4 * n8 + 1] * inv[0]);
                *reinterpret_cast<uint32_t*>(at + 8 * 128) = pack2<T>(o[4 * n8 + 2] * inv[1], o[4 * n8 + 3] * inv[1]);
            }
            sm90::fence_proxy_async();
            sm90::named_barrier(1 + w, 128);
            if (ct == 0) {
                for (int x = 0; x < Tr::BOXES; ++x) sm90::tma_store_4d(&to, qs + x * BOX, 64 * x, q0 + 64 * w, h, b);
                sm90::tma_store_commit_and_wait();
            }
            sm90::mbar_arrive(q_empty(qb));  // every consumer thread: done with the item's Q buffer and record
            if (!SPLIT || end >= kMerge) break;
            rows = kHelp0 - end;
        }
    }
}

}  // namespace stof::kernels::attn
