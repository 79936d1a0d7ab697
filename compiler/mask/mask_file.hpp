// file:PATH.npy masks: loading and checking them against the attention sizes.
#pragma once

#include "mask/mask_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace stof {

// A checked mask file: keep[((b * heads + h) * rows + i) * cols + j], 1 = keep.
struct MaskFile {
    std::string path;
    int64_t batch = 1, heads = 1, rows = 0, cols = 0;
    std::vector<uint8_t> keep;

    bool at(int64_t b, int64_t h, int64_t i, int64_t j) const {
        const int64_t bb = batch == 1 ? 0 : b, hh = heads == 1 ? 0 : h;
        return keep[static_cast<size_t>(((bb * heads + hh) * rows + i) * cols + j)] != 0;
    }
};

// Reads a .npy of dtype bool or uint8 (nonzero = keep) and shape [seq_q, seq_k],
// [H, seq_q, seq_k] or [B, H, seq_q, seq_k]. H must be 1 or `heads`, B 1 or
// `batch` (0 = any). Anything else throws stof::Error naming the file, what it
// holds and what was expected.
MaskFile read_mask_file(const std::string& path, int64_t seq_q, int64_t seq_k, int64_t heads = 0, int64_t batch = 0);

// Loads every file: atom of `spec` not loaded yet in place (MaskSpec::file),
// checked as above; atoms loaded before are checked against these sizes.
void load_mask_files(MaskSpec& spec, int64_t seq_q, int64_t seq_k, int64_t heads = 0, int64_t batch = 0);

// How many distinct patterns a loaded spec has: {mask_batch, mask_heads}, the
// broadcast of its files' [B, H] ({1, 1} without files). Files that disagree
// (neither 1 nor equal) throw stof::Error.
std::pair<int64_t, int64_t> mask_pattern_dims(const MaskSpec& spec);

}  // namespace stof
