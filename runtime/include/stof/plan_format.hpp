// The plan file: how a stof::plan::Plan (plan.hpp) is laid out on disk.
// Written by serialize_plan (compiler/plan/plan_writer.hpp), read by
// parse_plan / read_plan (runtime/plan/plan_reader.hpp).
//
// All integers are little-endian; f32 values are stored as their IEEE bits.
//
// File (format version 7):
//   offset  size
//   0       8     magic "STOFPLAN"
//   8       4     u32 format version (kFormatVersion)
//   12      32    stofc version that wrote the file, ASCII, NUL-padded
//   --- bytes [0, 44) keep this layout in every format version, so a reader
//   --- of any version can say which stofc wrote a plan it cannot read.
//   44      4     u32 section count (1..kMaxSections)
//   48      8     u64 file size in bytes
//   56      4     u32 crc32 of bytes [0, 56) followed by the section table
//   60      4     u32 reserved, 0
//   64      40*n  section table, one entry per section:
//                   0   16  name, ASCII, NUL-padded ("meta", "tensors", ...)
//                   16  8   u64 offset of the payload from the start of the file
//                   24  8   u64 payload size in bytes
//                   32  4   u32 crc32 of the payload
//                   36  4   u32 reserved, 0
//   payloads, each at an offset that is a multiple of kSectionAlignment (256),
//   in table order, zero bytes between them; the file ends with the last payload.
//
// Checksums are zlib's crc32; payloads do not overlap each other or the header.
// A static plan (one shape) has each of the seven sections meta, tensors, kernels,
// masks, schedule, segments and weights exactly once, and a timing plan of the tuning
// worker (Plan::placeholders) also the section placeholders. A plan for shape ranges
// (plan::ShapeRanges) has instead, in this order: meta, shapes, and bucket.0 ..
// bucket.N-1 (N <= kMaxBuckets), each bucket section holding a whole static plan
// file of this format version (its own header, table and checksums) for that bucket.
//
// Structured payloads (meta, tensors, kernels, masks, schedule) are sequences of
//   u8 / u32 / i32 / u64 / i64   fixed width
//   f32                          u32 bits
//   str                          u32 length, then that many bytes (no NUL)
//   T[]                          u32 count, then count elements
// and must be consumed exactly (no trailing bytes).
//
//   meta      str model, str stofc_version, str target_arch, str nvrtc_version,
//             str precision, str created, str notes
//   tensors   u64 arena_bytes,
//             tensor[] { str name, u8 dtype (stof::DType), i64[] shape, u8 buffer (BufferKind),
//                        u64 offset, u8 role (TensorRole), i64 int_lo, i64 int_hi },
//             i32[] inputs, i32[] outputs
//   kernels   index: kernel[] { str key, str entry, str arch, u8[] params (ParamKind),
//                               u64 cubin_offset, u64 cubin_size, u64 ptx_offset, u64 ptx_size },
//             then the blob area: every kernel's cubin and PTX (no NUL) bytes; offsets are
//             relative to the start of the blob area, which runs to the end of the section.
//   masks     mask[] { str spec, str kernel_reason, u8 runtime, i32 rows, i32 cols, i32 tile_m,
//                      i32 tile_n, i32 mask_batch, i32 mask_heads, i32[] row_ptr, i32[] col_idx,
//                      i32[] bitmap_idx, u64[] bitmaps }   (a runtime mask has empty arrays)
//   schedule  step[] { u8 kind (StepKind), str label, str nodes, then the payload of that
//                      kind only:
//     launch     i32 kernel, u32 grid[3], u32 block[3], u32 shared_bytes,
//                arg[] { u8 kind (ParamKind), i32 tensor, u64 byte_offset, i64 i, f32 f }
//     gemm       i32 a, b, c, d, bias; u64 a_offset, b_offset, c_offset, d_offset;
//                u8 trans_a, u8 trans_b; i64 m, n, k, batch; i64 lda, ldb, ldc, ldd;
//                i64 batch_stride_a, _b, _c, _d; f32 alpha, f32 beta; u8 epilogue (Epilogue), u8 algo;
//                rotary { i32 cos, sin; i64 rows, cols; i32 head_dim }
//     attention  operand q, k, v, o { i32 tensor, u64 byte_offset, i64 stride_b, stride_h, stride_s };
//                i32 batch, heads, kv_heads, seq_q, seq_k, head_dim; f32 scale;
//                i32 mask, key_valid, bias; i64 bias_stride_h, bias_stride_s; i32 kernel, fold
//     key_valid  i32 mask, words, batch, seq, fold
//     copy       i32 src, dst; u64 src_offset, dst_offset, bytes
//     mask_convert  i32 keep, mask }
//   segments  segment[] { str kind, str template, str config, str source, f32 time_us, str moves, str nodes,
//                         u32 sweep_space, f32 stage2_us, str stage2_config, f32 sweep_us, str sweep_config }
//   shapes    var[] { str name, i64 min, i64 max },
//             u32 input count, then per input i32[] (per dimension: variable index or -1),
//             u32 output count, then per output i32[] likewise,
//             bucket[] { i64[] values (one per variable), i32 weights_from }
//             weights_from >= 0: that earlier bucket's weights are this bucket's too, and
//             this bucket's plan stores an empty weights section; -1: its own.
//   placeholders  u64 placeholder_end, i32[] tensors (Plan::placeholders; absent when empty)
//   weights   the raw contents of the weights buffer (its payload is 256-byte aligned in
//             the file, so it can be uploaded from a mapping of the file as is)
//
// Any change to this layout increments kFormatVersion.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stof::plan {

constexpr char kMagic[8] = {'S', 'T', 'O', 'F', 'P', 'L', 'A', 'N'};
constexpr uint32_t kFormatVersion = 8;

constexpr uint64_t kVersionFieldOffset = 12;
constexpr uint64_t kVersionFieldBytes = 32;
constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kCrcCoveredHeaderBytes = 56;  // header bytes covered by the table checksum
constexpr uint64_t kSectionEntryBytes = 40;
constexpr uint64_t kSectionNameBytes = 16;
constexpr uint64_t kSectionAlignment = 256;
constexpr uint32_t kMaxSections = 64;

// The sections of a static plan, in the order the writer emits them (weights last).
constexpr const char* kSectionNames[] = {"meta", "tensors", "kernels", "masks", "schedule", "segments", "weights"};
constexpr size_t kSectionCount = sizeof(kSectionNames) / sizeof(kSectionNames[0]);
// The optional section of a static plan whose weights are placeholders (Plan::placeholders).
constexpr const char* kPlaceholdersSection = "placeholders";
// A ranged plan's sections: meta, kShapesSection, then kBucketSectionPrefix + "0", "1", ...
constexpr const char* kShapesSection = "shapes";
constexpr const char* kBucketSectionPrefix = "bucket.";

// zlib crc32 of `size` bytes; `crc` continues a running checksum (0 to start).
uint32_t checksum(const void* data, size_t size, uint32_t crc = 0);

}  // namespace stof::plan
