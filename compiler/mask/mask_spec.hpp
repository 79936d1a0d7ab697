// Attention mask specifications: the text given to `--mask` and `stofc mask`, and its tree.
//
//   spec   := term ('|' term)*          union
//   term   := factor ('&' factor)*      intersection; binds tighter than '|'
//   factor := '(' spec ')' | atom
//   atom   := dense | causal | sliding:W | global:G | strided:P | random:B:R:SEED
//           | longformer:W:G | bigbird:B:W:G:R:SEED | file:PATH
// Whitespace may surround any token. PATH runs to the next whitespace, '|', '&',
// '(' or ')', or is quoted with '...' or "...". Integer parameters are decimal
// in [0, 2^31 - 1] (B >= 1); SEED is a decimal in [0, 2^64 - 1].
// The meaning of each form for query row i, key column j: compiler/mask/README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stof {

struct MaskFile;  // mask/mask_eval.hpp

struct MaskSpec {
    enum class Kind : uint8_t {
        dense,       // every (i, j)
        causal,      // j <= i
        sliding,     // |i - j| <= window
        global,      // i < global or j < global
        strided,     // (i - j) % stride == 0
        random,      // block (i / block, j / block) is among random_block_columns(seed, i / block, ..., count)
        block_band,  // |i / block - j / block| <= window   (only inside bigbird)
        file,        // keep[b, h, i, j] != 0 of a .npy file
        any,         // union of children
        all,         // intersection of children
    };
    Kind kind = Kind::dense;
    int64_t window = 0;                    // sliding, block_band
    int64_t global = 0;                    // global
    int64_t stride = 0;                    // strided
    int64_t block = 0;                     // random, block_band
    int64_t count = 0;                     // random
    uint64_t seed = 0;                     // random
    std::string path;                      // file
    std::shared_ptr<const MaskFile> file;  // file: the checked data once load_mask_files ran, else null
    std::vector<MaskSpec> children;        // any, all (two or more)
    std::string shorthand;                 // "longformer:W:G" / "bigbird:B:W:G:R:SEED" for the union it stands for
};

// Parses a spec; a bad one throws stof::Error quoting the offending part and
// listing mask_spec_forms().
MaskSpec parse_mask_spec(const std::string& text);

// Canonical text; parse_mask_spec(to_string(s)) describes the same mask.
std::string to_string(const MaskSpec& spec);

// The accepted forms, one line (for error messages and --help).
const char* mask_spec_forms();

// True when a file: atom occurs anywhere in spec.
bool has_file_atom(const MaskSpec& spec);

}  // namespace stof
