#include "stof/shape_ranges.hpp"

#include "stof/error.hpp"

#include <fmt/ranges.h>

namespace stof::plan {

std::vector<int64_t> bucket_sizes(int64_t min, int64_t max) {
    STOF_CHECK(min >= 1 && min <= max, "shape range {}..{}: need 1 <= MIN <= MAX", min, max);
    std::vector<int64_t> out;
    for (int64_t p = 1; p < max && p <= (int64_t{1} << 61); p *= 2)
        if (p >= min) out.push_back(p);
    out.push_back(max);
    return out;
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
        for (int64_t b : bucket_sizes(var.min, var.max))
            if (b >= values[v]) {
                want[v] = b;
                break;
            }
    }
    for (size_t b = 0; b < r.bucket_values.size(); ++b)
        if (r.bucket_values[b] == want) return b;
    STOF_FAIL("the plan has no bucket for {}", fmt::join(want, "x"));
}

std::string describe_ranges(const ShapeRanges& r) {
    std::string s;
    for (const ShapeVar& v : r.vars)
        s += fmt::format("{}{}={}..{} (buckets {})", s.empty() ? "" : "; ", v.name, v.min, v.max,
                         fmt::join(bucket_sizes(v.min, v.max), ", "));
    return s;
}

std::string describe_bucket(const ShapeRanges& r, size_t b) {
    std::string s;
    for (size_t v = 0; v < r.vars.size(); ++v)
        s += fmt::format("{}{}={}", v ? ", " : "", r.vars[v].name, r.bucket_values.at(b).at(v));
    return s;
}

}  // namespace stof::plan
