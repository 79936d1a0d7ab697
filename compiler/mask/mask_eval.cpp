#include "mask/mask_eval.hpp"

#include "mask/mask_file.hpp"
#include "mask/mask_random.hpp"
#include "stof/error.hpp"

#include <algorithm>

namespace stof {

bool eval_keep(const MaskSpec& spec, int64_t i, int64_t j, int64_t seq_k, int64_t b, int64_t h) {
    using K = MaskSpec::Kind;
    switch (spec.kind) {
        case K::dense: return true;
        case K::causal: return j <= i;
        case K::sliding: return i - j <= spec.window && j - i <= spec.window;
        case K::global: return i < spec.global || j < spec.global;
        case K::strided: return (i - j) % spec.stride == 0;
        case K::random: {
            const int64_t block_cols = (seq_k + spec.block - 1) / spec.block;
            const auto cols = random_block_columns(spec.seed, i / spec.block, block_cols, spec.count);
            return std::binary_search(cols.begin(), cols.end(), j / spec.block);
        }
        case K::block_band: {
            const int64_t d = i / spec.block - j / spec.block;
            return d <= spec.window && -d <= spec.window;
        }
        case K::file:
            STOF_CHECK(spec.file != nullptr, "mask file {} was not loaded (load_mask_files)", spec.path);
            return spec.file->at(b, h, i, j);
        case K::any:
            for (const MaskSpec& c : spec.children)
                if (eval_keep(c, i, j, seq_k, b, h)) return true;
            return false;
        case K::all:
            for (const MaskSpec& c : spec.children)
                if (!eval_keep(c, i, j, seq_k, b, h)) return false;
            return true;
    }
    return false;
}

}  // namespace stof
