// `--mask [LAYERS=]SPEC` for attention layers: which spec each layer gets, and
// the keep pattern it gives together with the mask the model computes.
//   LAYERS  N or N-M (attention layers numbered from 0 in graph order);
//           without it the spec applies to every layer.
// A layer gets the LAYERS=SPEC values whose range covers it, intersected; a layer
// none covers gets the SPEC values without LAYERS, intersected.
#pragma once

#include "stof/tensor.hpp"

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace stof {

struct LayerMask {
    int first = 0, last = std::numeric_limits<int>::max();  // the layers it applies to, inclusive
    std::string spec;                                       // the SPEC text
    bool every_layer = false;                               // given without LAYERS
};

// The --mask values in order; a malformed layer range throws stof::Error naming it.
// The SPEC text itself is parsed where it is used (parse_mask_spec).
std::vector<LayerMask> parse_layer_masks(const std::vector<std::string>& args);

// The spec for attention layer `layer`, or nullopt.
std::optional<std::string> spec_for_layer(const std::vector<LayerMask>& masks, int layer);

// The keep mask of `spec_text` & `model_keep` (null: keeps all) as a bool
// [Bm, Hm, Sq, Sk], Bm and Hm the broadcast of the model's mask ([1|B, 1|H, Sq, Sk])
// and the spec's files.
Tensor layer_keep(const std::string& spec_text, const Tensor* model_keep, int64_t B, int64_t H, int64_t Sq, int64_t Sk);

}  // namespace stof
