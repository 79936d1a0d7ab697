// Padding mask → per-key validity words, the form the attention kernels read
// (AttentionArgs::key_valid). See kernels/key_valid/README.md.
//
//   mask   [batch, seq] row-major, elements of `elem_bytes` bytes (1: bool/int8/uint8,
//          4: int32, 8: int64); an element whose bytes are not all zero = key valid
//   words  [batch, ceil(seq / 64)] uint64: bit j % 64 of words[b, j / 64] = mask[b, j] != 0;
//          bits of j >= seq are 0
// Folded with period p (stof/mask_fold.hpp; the keys of residue r are j'p + r):
//   words  [p, batch, ceil(seq / p / 64)]: bit j' % 64 of words[r, b, j' / 64] = mask[b, j'p + r] != 0
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace stof::kernels {

// Asynchronous on `stream` (one launch, capturable in a CUDA graph). Invalid
// arguments (batch or seq < 1, elem_bytes not 1, 2, 4 or 8, null pointers, a fold below 1
// or not dividing seq) return cudaErrorInvalidValue; launch failures return the CUDA error.
cudaError_t launch_key_valid(const void* mask, int32_t elem_bytes, int32_t batch, int32_t seq, uint64_t* words,
                             cudaStream_t stream, int32_t fold = 1);

}  // namespace stof::kernels
