// libFuzzer target: parse_mask_spec on arbitrary text. Contract: only stof::Error
// comes out (no deep recursion, no overflow); an accepted spec without file: atoms
// prints (to_string) to text that parses to the same canonical text, and its sparse
// build for a small attention keeps exactly what the direct evaluator (eval_keep)
// keeps, tile by tile, in a mask that passes validate(); where it folds (stof/mask_fold.hpp),
// the folded mask keeps exactly the same entries.
#include "mask/mask_builder.hpp"
#include "mask/mask_eval.hpp"
#include "mask/mask_spec.hpp"
#include "stof/error.hpp"
#include "stof/mask_fold.hpp"
#include "stof/sparse_mask.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& spec) {
    std::fprintf(stderr, "fuzz_mask_spec: %s (spec \"%s\")\n", what.c_str(), spec.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    stof::MaskSpec spec;
    try {
        spec = stof::parse_mask_spec(text);
    } catch (const stof::Error&) {
        return 0;
    }
    if (stof::has_file_atom(spec)) return 0;  // a file: atom names a path; the fuzzer reads no files
    const std::string canon = stof::to_string(spec);
    try {
        if (stof::to_string(stof::parse_mask_spec(canon)) != canon) fail("to_string does not round-trip: " + canon, text);
    } catch (const stof::Error& e) {
        fail(std::string("the canonical text does not parse: ") + e.what(), text);
    }
    // Sizes that are not multiples of the tiles: edge tiles are partial.
    constexpr int64_t kRows = 37, kCols = 45;
    stof::SparseMask m;
    try {
        m = stof::build_mask(spec, kRows, kCols, 8, 16, 0, 0);
        m.validate();
    } catch (const stof::Error& e) {
        fail(std::string("an accepted spec does not build: ") + e.what(), text);
    }
    for (int32_t i = 0; i < kRows; ++i)
        for (int32_t j = 0; j < kCols; ++j)
            if (m.keep(0, i, j) != stof::eval_keep(spec, i, j, kCols)) fail("the sparse build differs from eval_keep", text);
    // Sizes with many divisors: a mask that folds is its folded form on every residue.
    constexpr int32_t kFoldRows = 48, kFoldCols = 96;
    stof::SparseMask g, f;
    int32_t p = 1;
    try {
        g = stof::build_mask(spec, kFoldRows, kFoldCols, 8, 16, 0, 0);
        p = stof::fold_period(g);
        if (p > 1) {
            f = stof::fold_mask(g, p);
            f.validate();
        }
    } catch (const stof::Error& e) {
        fail(std::string("an accepted spec does not build or fold: ") + e.what(), text);
    }
    if (p > 1) {
        for (int32_t i = 0; i < kFoldRows; ++i)
            for (int32_t j = 0; j < kFoldCols; ++j)
                if (g.keep(0, i, j) != (i % p == j % p && f.keep(0, i / p, j / p)))
                    fail("the folded mask differs from the mask", text);
    }
    return 0;
}
