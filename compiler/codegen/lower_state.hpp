// State shared by the lowering of one graph into a plan (codegen/lower.cpp).
#pragma once

#include "codegen/kernel_source.hpp"
#include "codegen/lower.hpp"
#include "ir/graph.hpp"
#include "stof/plan.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

namespace stof::codegen {

// Float constants below this size (in the plan's storage type) keep their contents in
// timing plans with placeholder weights: norm scales, biases, small tables.
constexpr uint64_t kPlaceholderMinBytes = uint64_t{1} << 20;

struct LowerState {
    const ir::Graph& g;
    plan::Plan& plan;
    std::string arch;     // "sm_90"
    Precision precision;  // of the plan's float tensors
    AttentionKernelChoice attention_kernel = AttentionKernelChoice::selector;
    std::vector<int32_t> tensor_of;  // value id → plan tensor index, -1 when not stored
    std::vector<char> inlined;       // value id → computed inside its consumer's kernel
    std::vector<int32_t> alias_of;   // plan tensor → tensor whose storage it shares, -1 if none
    std::vector<int> uses;           // value id → node inputs + graph outputs reading it
    std::vector<int> producer;       // value id → index of its node, -1 for inputs and constants
    std::vector<KernelJob> jobs;     // kernels of the launch steps, in step order
    std::map<std::pair<ir::ValueId, int32_t>, int32_t> key_valid_words;  // (padding input, fold) → its validity words
    std::map<ir::ValueId, int32_t> runtime_masks;  // run-time keep value → the plan mask converted from it
    // (constant keep value or kNoValue, keep_tiles or null, Sq, Sk) → its plan mask, attention
    // kernel (0 block-wise, 1 row-wise) and fold period (plan::AttentionStep::fold)
    struct StaticMask {
        int32_t mask = -1, kernel = 0, fold = 1;
    };
    std::map<std::tuple<ir::ValueId, const SparseMask*, int64_t, int64_t>, StaticMask> static_masks;
    std::multimap<uint32_t, int32_t> weights_by_checksum;      // weight bytes' checksum → weight tensors
    std::map<std::pair<int32_t, DType>, int32_t> conversions;  // (tensor, dtype) → its converted copy (emit_convert)
    std::set<std::string> names;                               // names of the plan's tensors
    // Placeholder weights (LowerOptions::placeholder_weights): on; their offsets from the
    // start of the placeholder region and its length so far (placed by finish_placeholders);
    // sampled hash of the constant → (the constant, its tensor).
    bool placeholder_weights = false;
    uint64_t placeholder_bytes = 0;
    std::multimap<uint64_t, std::pair<const Tensor*, int32_t>> placeholders_by_hash;

    LowerState(const ir::Graph& graph, plan::Plan& p, std::string target_arch, Precision plan_precision);

    // A new plan tensor (arena by default). A name already taken gets a
    // suffix ("x_f16_2"): plan tensor names are unique.
    int32_t add_tensor(const std::string& name, DType dtype, const Shape& shape, plan::TensorRole role);
    // A constant in the weights buffer; a weight with the same dtype, shape and
    // bytes as an earlier one is that one (T5's position bias read by every layer).
    int32_t add_weight(const Tensor& t, const std::string& name);
    // A weight of `dtype` and c's shape whose contents are placeholders (Plan::placeholders):
    // constant c is neither converted nor copied; a constant equal to an earlier one (dtype,
    // shape and bytes) is that one's tensor, as with add_weight.
    int32_t add_placeholder(const Tensor& c, DType dtype, const std::string& name);
    // Places the placeholder weights after the weights' contents (Plan::placeholder_end);
    // once, after the last weight is added.
    void finish_placeholders();
    // The plan tensor holding value v: its stored tensor, or for a constant a
    // weight in the plan's storage type (added on first use; a placeholder when
    // placeholder_weights and it is a float constant of at least kPlaceholderMinBytes
    // in the plan). A stof::Error names v when it is neither.
    int32_t tensor(ir::ValueId v);

    // Appends a launch step running `job`; the kernel is added at compile time.
    void add_launch(KernelJob job, const std::string& label, const std::string& nodes);
    void add_step(plan::Step s);
};

}  // namespace stof::codegen
