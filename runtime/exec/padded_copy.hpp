// Copies between tensors at their actual shapes and the same tensors in a shape bucket
// (stof/shape_ranges.hpp), every tensor of one direction in one launch of the box copy
// kernel (kernels/box_copy/README.md): row-major, the actual shape inside the bucket's
// (actual[d] <= bucket[d] for every d), at the same indices; padding is zero.
#pragma once

#include "stof/kernels/box_copy.hpp"
#include "stof/tensor.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace stof::exec {

// One tensor: dst (dst_shape) from src (src_shape), both row-major, the same rank, elements
// of elem_bytes bytes. Padding: src at the actual shape, dst at the bucket's; cutting the
// other way round.
struct BoxCopy {
    const void* src = nullptr;
    Shape src_shape;
    void* dst = nullptr;
    Shape dst_shape;
    size_t elem_bytes = 0;
};

// The kernel's entry for c: dimensions merged (a dimension joins the ones inside it when
// those are equal in both shapes; dimensions of size 1 in both vanish) and counted in the
// widest unit (16, 8, 4, 2 or 1 bytes) that divides both innermost rows and both
// addresses (an empty src: dst's alone, and the entry's src is null). False when dst is
// empty (nothing to copy). Throws stof::Error for shapes of
// different ranks, or more than kBoxCopyMaxRank dimensions left after merging.
bool box_copy_entry(const BoxCopy& c, kernels::BoxCopyEntry& entry);

// The tables for `copies`: kBoxCopyMaxEntries entries each, empty copies left out.
std::vector<kernels::BoxCopyTable> box_copy_tables(const std::vector<BoxCopy>& copies);

// Enqueues box_copy_tables' tables on `stream`, one launch each.
void enqueue_box_copy_tables(const std::vector<kernels::BoxCopyTable>& tables, cudaStream_t stream);

// Enqueues `copies` on `stream`: one launch per table (one for up to kBoxCopyMaxEntries
// tensors), none when every copy is empty. Pointers may be device, managed or page-locked
// host memory.
void enqueue_box_copies(const std::vector<BoxCopy>& copies, cudaStream_t stream);

}  // namespace stof::exec
