#include "stof/shape_ranges.hpp"

#include "stof/error.hpp"

#include <fmt/ranges.h>

#include <algorithm>

namespace stof::plan {

std::vector<int64_t> bucket_sizes(int64_t min, int64_t max, int per_doubling) {
    STOF_CHECK(min >= 1 && min <= max && max <= (int64_t{1} << 40), "shape range {}..{}: need 1 <= MIN <= MAX <= 2^40", min,
               max);
    STOF_CHECK(per_doubling >= 1 && per_doubling <= kMaxBucketsPerDoubling, "{} buckets per doubling: take 1..{}", per_doubling,
               kMaxBucketsPerDoubling);
    std::vector<int64_t> out;
    for (int64_t p = 1; p < max; p *= 2)
        for (int64_t k = 0; k < per_doubling; ++k) {
            const int64_t size = (p * (per_doubling + k) + per_doubling - 1) / per_doubling;
            if (size >= min && size < max && (out.empty() || size > out.back())) out.push_back(size);
        }
    out.push_back(max);
    return out;
}

std::vector<int64_t> var_buckets(const ShapeRanges& r, size_t v) {
    std::vector<int64_t> sizes;
    for (const std::vector<int64_t>& b : r.bucket_values)
        if (v < b.size()) sizes.push_back(b[v]);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

Shape bound_shape(const Shape& bucket_shape, const std::vector<int32_t>& dims, const std::vector<int64_t>& values) {
    Shape s = bucket_shape;
    for (size_t d = 0; d < s.size() && d < dims.size(); ++d)
        if (dims[d] >= 0) s[d] = values.at(static_cast<size_t>(dims[d]));
    return s;
}

void bind_input_shape(const ShapeRanges& r, size_t index, const std::string& name, const Shape& bucket_shape,
                      const Shape& actual, std::vector<int64_t>& values) {
    const std::vector<int32_t>& dims = r.input_dims.at(index);
    std::string form;
    for (size_t d = 0; d < dims.size(); ++d) {
        const int32_t v = dims[d];
        form += (d ? "x" : "") +
                (v < 0 ? std::to_string(bucket_shape[d])
                       : fmt::format("{}..{}", r.vars[static_cast<size_t>(v)].min, r.vars[static_cast<size_t>(v)].max));
    }
    STOF_CHECK(actual.size() == dims.size(), "input '{}': shape {} has rank {}; the plan takes {} ({})", name,
               shape_str(actual), actual.size(), dims.size(), form);
    std::vector<int64_t> next = values;
    std::vector<bool> set(values.size(), false);
    for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] < 0) {
            STOF_CHECK(actual[d] == bucket_shape[d], "input '{}': shape {}: dimension {} is fixed to {} ({})", name,
                       shape_str(actual), d, bucket_shape[d], form);
            continue;
        }
        const auto v = static_cast<size_t>(dims[d]);
        const ShapeVar& var = r.vars[v];
        STOF_CHECK(actual[d] >= var.min && actual[d] <= var.max,
                   "input '{}': shape {}: dimension {} ({}) is {}, outside the plan's range {}..{}", name, shape_str(actual), d,
                   var.name, actual[d], var.min, var.max);
        STOF_CHECK(!set[v] || next[v] == actual[d], "input '{}': shape {}: dimensions of '{}' differ", name, shape_str(actual),
                   var.name);
        next[v] = actual[d];
        set[v] = true;
    }
    values = std::move(next);
}

size_t pick_bucket(const ShapeRanges& r, const std::vector<int64_t>& values) {
    STOF_CHECK(values.size() == r.vars.size(), "{} shape sizes given for {} shape variables", values.size(), r.vars.size());
    std::vector<int64_t> want(values.size());
    for (size_t v = 0; v < values.size(); ++v) {
        const ShapeVar& var = r.vars[v];
        STOF_CHECK(values[v] >= var.min && values[v] <= var.max, "'{}' is {}, outside the plan's range {}..{}", var.name,
                   values[v], var.min, var.max);
        for (int64_t b : var_buckets(r, v))
            if (b >= values[v]) {
                want[v] = b;
                break;
            }
    }
    for (size_t b = 0; b < r.bucket_values.size(); ++b)
        if (r.bucket_values[b] == want) return b;
    STOF_FAIL("the plan has no bucket for {}", fmt::join(want, "x"));
}

bool BucketBinding::all_in_place() const {
    for (bool b : input_in_place)
        if (!b) return false;
    for (bool b : output_in_place)
        if (!b) return false;
    return true;
}

BucketBinding bind_bucket(const Plan& bucket, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) {
    STOF_CHECK(inputs.size() == bucket.inputs.size() && outputs.size() == bucket.outputs.size(),
               "{} input and {} output shapes for a bucket of {} inputs and {} outputs", inputs.size(), outputs.size(),
               bucket.inputs.size(), bucket.outputs.size());
    BucketBinding b;
    for (size_t i = 0; i < inputs.size(); ++i)
        b.input_in_place.push_back(bucket.tensors.at(static_cast<size_t>(bucket.inputs[i])).shape == inputs[i]);
    for (size_t i = 0; i < outputs.size(); ++i)
        b.output_in_place.push_back(bucket.tensors.at(static_cast<size_t>(bucket.outputs[i])).shape == outputs[i]);
    return b;
}

std::string describe_ranges(const ShapeRanges& r) {
    std::string s;
    for (size_t k = 0; k < r.vars.size(); ++k)
        s += fmt::format("{}{}={}..{} (buckets {})", s.empty() ? "" : "; ", r.vars[k].name, r.vars[k].min, r.vars[k].max,
                         fmt::join(var_buckets(r, k), ", "));
    return s;
}

std::string describe_bucket(const ShapeRanges& r, size_t b) {
    std::string s;
    for (size_t v = 0; v < r.vars.size(); ++v)
        s += fmt::format("{}{}={}", v ? ", " : "", r.vars[v].name, r.bucket_values.at(b).at(v));
    return s;
}

}  // namespace stof::plan
