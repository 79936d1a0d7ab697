// Shape ranges at compile time (stofc compile --shape NAME=MIN..MAX): parsing the
// --shape arguments, binding their ranges to the model's inputs as shape variables
// (plan::ShapeRanges), the sizes each bucket compiles for, and the defaults for
// symbolic dimensions nobody sized.
#pragma once

#include "interp/interpreter.hpp"
#include "ir/graph.hpp"
#include "stof/plan.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace stof {

// --shape arguments: NAME=DIMS where each dimension is N or MIN..MAX ("1..8x128..4096").
struct ShapeArgs {
    std::map<std::string, Shape> fixed;  // no range: as before (input shapes or DIM=N)
    struct Ranged {
        std::string name;
        std::vector<std::pair<int64_t, int64_t>> dims;  // [min, max] per dimension; min == max: fixed
    };
    std::vector<Ranged> ranged;  // the arguments with at least one MIN..MAX, in order
    int per_doubling = 1;        // bucket sizes per doubling of a range (--shape-buckets; plan::bucket_sizes)
};

// Throws stof::Error naming the argument for a bad size or range (0, MIN > MAX, "8..",
// "a..b"), a name given twice.
ShapeArgs parse_shape_args(const std::vector<std::string>& args);

// The ranges of `args` bound to the inputs of `g` (imported, before the passes).
// A range on a symbolic dimension (seq=128..1024), or on an input dimension the model
// names (input_ids=1..8x128..4096 with input_ids [batch, seq]), is the variable of that
// name and every input dimension of that name follows it; a range on an unnamed input
// dimension is the variable "NAME[d]". Buckets: the product of the variables' bucket
// sizes (plan::bucket_sizes with args.per_doubling), in lexicographic order (the last
// is every maximum).
struct RangeBinding {
    plan::ShapeRanges ranges;  // vars, input_dims (per graph input), bucket_values; output_dims empty
    std::map<std::string, Shape> fixed;
    std::vector<std::string> input_names;  // graph inputs, in order (input_dims' order)
    // Per variable: the input it belongs to when it is an unnamed input dimension, else "".
    std::vector<std::string> var_input;
    std::vector<int32_t> var_dim;
    // Inputs with an unnamed ranged dimension: their --shape sizes, -1 where ranged.
    std::map<std::string, Shape> input_base;

    // The --shape bindings (PassOptions::input_shapes) that compile variables of sizes `values`.
    std::map<std::string, Shape> shapes_for(const std::vector<int64_t>& values) const;
};
RangeBinding bind_ranges(const ir::Graph& g, const ShapeArgs& args);

// The bucket count limit's message, or "" when the product is within plan::kMaxBuckets.
std::string bucket_limit_problem(const plan::ShapeRanges& r, int per_doubling);

// Symbolic dimensions of g's inputs that no --shape sizes: the defaults (batch 1 for a
// dimension whose name contains "batch" or an unnamed first dimension, else 128) as
// DIM=N / NAME=DIMS bindings, and one line naming them. Empty when every dimension is sized.
std::pair<std::map<std::string, Shape>, std::string> default_shapes(const ir::Graph& g);

// Host tensors between an actual shape and a bucket's (zeros pad; the cut keeps the
// actual shape's indices).
Tensor pad_tensor(const Tensor& t, const Shape& bucket);
Tensor cut_tensor(const Tensor& t, const Shape& actual);

}  // namespace stof
