#include "mask/layer_masks.hpp"

#include "mask/mask_eval.hpp"
#include "mask/mask_file.hpp"
#include "mask/mask_spec.hpp"
#include "stof/error.hpp"

#include <algorithm>

namespace stof {

namespace {

LayerMask parse_layer_mask(const std::string& m) {
    const size_t eq = m.find('=');
    const size_t colon = m.find(':');
    if (eq == std::string::npos || (colon != std::string::npos && colon < eq))
        return LayerMask{0, std::numeric_limits<int>::max(), m, true};
    const std::string range = m.substr(0, eq);
    const size_t dash = range.find('-');
    int lo = 0, hi = 0;
    try {
        size_t used = 0;
        lo = std::stoi(range.substr(0, dash), &used);
        STOF_CHECK(used == (dash == std::string::npos ? range.size() : dash), "");
        hi = dash == std::string::npos ? lo : std::stoi(range.substr(dash + 1), &used);
        STOF_CHECK(dash == std::string::npos || used == range.size() - dash - 1, "");
    } catch (const std::exception&) {
        STOF_FAIL("--mask {}: '{}' is no layer range (use N or N-M, e.g. 0-5=sliding:64)", m, range);
    }
    STOF_CHECK(lo >= 0 && lo <= hi, "--mask {}: empty layer range {}", m, range);
    return LayerMask{lo, hi, m.substr(eq + 1)};
}

}  // namespace

std::vector<LayerMask> parse_layer_masks(const std::vector<std::string>& args) {
    std::vector<LayerMask> r;
    for (const std::string& m : args) r.push_back(parse_layer_mask(m));
    return r;
}

std::optional<std::string> spec_for_layer(const std::vector<LayerMask>& masks, int layer) {
    std::optional<std::string> ranged, every;
    auto intersect = [](std::optional<std::string>& into, const std::string& spec) {
        into = into ? "(" + *into + ")&(" + spec + ")" : spec;
    };
    for (const LayerMask& m : masks) {
        if (m.every_layer) intersect(every, m.spec);
        else if (layer >= m.first && layer <= m.last) intersect(ranged, m.spec);
    }
    return ranged ? ranged : every;
}

Tensor layer_keep(const std::string& spec_text, const Tensor* model_keep, int64_t B, int64_t H, int64_t Sq, int64_t Sk) {
    MaskSpec spec = parse_mask_spec(spec_text);
    load_mask_files(spec, Sq, Sk, H, B);
    const auto [fb, fh] = mask_pattern_dims(spec);
    const Shape ms = model_keep ? model_keep->shape : Shape{1, 1, Sq, Sk};
    const Shape ks{std::max(ms[0], fb), std::max(ms[1], fh), Sq, Sk};
    Tensor keep(DType::boolean, ks);
    for (int64_t x = 0; x < ks[0]; ++x)
        for (int64_t y = 0; y < ks[1]; ++y)
            for (int64_t i = 0; i < Sq; ++i)
                for (int64_t j = 0; j < Sk; ++j) {
                    bool k = eval_keep(spec, i, j, Sk, x, y);
                    if (k && model_keep)
                        k = model_keep->get_i64((((ms[0] == 1 ? 0 : x) * ms[1] + (ms[1] == 1 ? 0 : y)) * Sq + i) * Sk + j) != 0;
                    keep.set_i64(((x * ks[1] + y) * Sq + i) * Sk + j, k);
                }
    return keep;
}

}  // namespace stof
