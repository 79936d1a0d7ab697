#include "shape_ranges.hpp"

#include "stof/cli_util.hpp"
#include "stof/error.hpp"
#include "stof/shape_ranges.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>

namespace stof {

namespace {

int64_t parse_size(const std::string& text, const std::string& arg) {
    STOF_CHECK(!text.empty() && text.size() < 12 && text.find_first_not_of("0123456789") == std::string::npos,
               "--shape {}: '{}' is not a positive size", arg, text);
    const int64_t v = std::stoll(text);
    STOF_CHECK(v > 0, "--shape {}: sizes must be positive", arg);
    return v;
}

}  // namespace

ShapeArgs parse_shape_args(const std::vector<std::string>& args) {
    ShapeArgs out;
    std::vector<std::string> names;
    for (const std::string& a : args) {
        auto [name, dims] = cli::split_assignment(a, "--shape");
        STOF_CHECK(std::find(names.begin(), names.end(), name) == names.end(), "--shape gives '{}' twice", name);
        names.push_back(name);
        ShapeArgs::Ranged r{name, {}};
        bool ranged = false;
        size_t p = 0;
        while (true) {
            const size_t end = dims.find_first_of("x,", p);
            const std::string part = dims.substr(p, end == std::string::npos ? std::string::npos : end - p);
            const size_t dots = part.find("..");
            if (dots == std::string::npos) {
                const int64_t v = parse_size(part, a);
                r.dims.push_back({v, v});
            } else {
                const int64_t lo = parse_size(part.substr(0, dots), a), hi = parse_size(part.substr(dots + 2), a);
                STOF_CHECK(lo <= hi, "--shape {}: the range {} has MIN > MAX", a, part);
                r.dims.push_back({lo, hi});
                ranged = ranged || lo < hi;
            }
            if (end == std::string::npos) break;
            p = end + 1;
        }
        if (ranged) {
            out.ranged.push_back(std::move(r));
        } else {
            Shape s;
            for (const auto& [lo, hi] : r.dims) s.push_back(lo);
            out.fixed[name] = s;
        }
    }
    return out;
}

std::string bucket_limit_problem(const plan::ShapeRanges& r, int per_doubling) {
    size_t product = 1;
    std::string counts;
    for (const plan::ShapeVar& v : r.vars) {
        const size_t n = plan::bucket_sizes(v.min, v.max, per_doubling).size();
        product *= n;
        counts += fmt::format("{}{}: {}", counts.empty() ? "" : ", ", v.name, n);
    }
    if (product <= plan::kMaxBuckets) return "";
    return fmt::format(
        "the --shape ranges need {} buckets ({}), more than the {} a plan holds: narrow a range or fix a dimension", product,
        counts, plan::kMaxBuckets);
}

RangeBinding bind_ranges(const ir::Graph& g, const ShapeArgs& args) {
    RangeBinding b;
    b.fixed = args.fixed;
    plan::ShapeRanges& r = b.ranges;
    std::string inputs;
    for (ir::ValueId i : g.inputs) {
        b.input_names.push_back(g.value(i).name);
        inputs += (inputs.empty() ? "" : ", ") + g.value(i).name;
    }
    auto is_dim_name = [&](const std::string& n) {
        for (ir::ValueId i : g.inputs)
            for (const std::string& d : g.value(i).dim_names)
                if (d == n) return true;
        return false;
    };
    // A variable named `name` of range [lo, hi]; the same name twice must give the same range.
    auto add_var = [&](const std::string& name, int64_t lo, int64_t hi, const std::string& input, int32_t dim,
                       const std::string& arg) {
        for (size_t v = 0; v < r.vars.size(); ++v)
            if (r.vars[v].name == name) {
                STOF_CHECK(r.vars[v].min == lo && r.vars[v].max == hi, "--shape {}: '{}' is given the ranges {}..{} and {}..{}",
                           arg, name, r.vars[v].min, r.vars[v].max, lo, hi);
                return;
            }
        STOF_CHECK(!b.fixed.count(name), "--shape {}: '{}' is also given a fixed size", arg, name);
        r.vars.push_back({name, lo, hi});
        b.var_input.push_back(input);
        b.var_dim.push_back(dim);
    };
    for (const ShapeArgs::Ranged& a : args.ranged) {
        const std::string arg = a.name + "=" + [&] {
            std::string s;
            for (const auto& [lo, hi] : a.dims)
                s += (s.empty() ? "" : "x") + (lo == hi ? std::to_string(lo) : fmt::format("{}..{}", lo, hi));
            return s;
        }();
        const ir::ValueId id = g.find_value(a.name);
        const bool is_input = std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end() && id != ir::kNoValue;
        if (!is_input) {
            STOF_CHECK(is_dim_name(a.name),
                       "--shape names '{}', which is neither a model input (inputs: {}) nor a symbolic dimension", a.name,
                       inputs);
            STOF_CHECK(a.dims.size() == 1, "--shape {}: a symbolic dimension takes one size or one range MIN..MAX", arg);
            add_var(a.name, a.dims[0].first, a.dims[0].second, "", -1, arg);
            continue;
        }
        const ir::Value& v = g.value(id);
        if (v.shape_known || !v.shape.empty())
            STOF_CHECK(v.shape.size() == a.dims.size(), "--shape {}: the model declares rank {} ({})", arg, v.shape.size(),
                       shape_str(v.shape));
        for (size_t d = 0; d < a.dims.size(); ++d) {
            const auto [lo, hi] = a.dims[d];
            const int64_t declared = d < v.shape.size() ? v.shape[d] : -1;
            if (lo == hi) {
                STOF_CHECK(declared < 0 || declared == lo, "--shape {}: dimension {} is fixed to {} by the model", arg, d,
                           declared);
                continue;
            }
            STOF_CHECK(declared < 0, "--shape {}: dimension {} is fixed to {} by the model; it takes no range", arg, d,
                       declared);
            const std::string dim_name = d < v.dim_names.size() ? v.dim_names[d] : "";
            if (!dim_name.empty()) add_var(dim_name, lo, hi, "", -1, arg);
            else add_var(fmt::format("{}[{}]", a.name, d), lo, hi, a.name, static_cast<int32_t>(d), arg);
            if (dim_name.empty()) {
                Shape base;
                for (const auto& [l, h] : a.dims) base.push_back(l == h ? l : -1);
                b.input_base[a.name] = base;
            }
        }
        // Its fixed dimensions that the model names size those names for the other inputs.
        for (size_t d = 0; d < a.dims.size(); ++d) {
            const std::string dim_name = d < v.dim_names.size() ? v.dim_names[d] : "";
            if (a.dims[d].first == a.dims[d].second && !dim_name.empty() && !b.fixed.count(dim_name))
                b.fixed[dim_name] = {a.dims[d].first};
        }
    }
    // Which input dimensions follow each variable.
    for (ir::ValueId i : g.inputs) {
        const ir::Value& v = g.value(i);
        std::vector<int32_t> dims(v.shape.size(), -1);
        for (size_t d = 0; d < v.shape.size(); ++d)
            for (size_t k = 0; k < r.vars.size(); ++k) {
                const bool named = b.var_input[k].empty() && d < v.dim_names.size() && v.dim_names[d] == r.vars[k].name &&
                                   !b.fixed.count(v.name);
                const bool own = b.var_input[k] == v.name && b.var_dim[k] == static_cast<int32_t>(d);
                if (named || own) dims[d] = static_cast<int32_t>(k);
            }
        r.input_dims.push_back(std::move(dims));
    }
    for (size_t k = 0; k < r.vars.size(); ++k) {
        bool used = false;
        for (const std::vector<int32_t>& dims : r.input_dims) used = used || std::count(dims.begin(), dims.end(), k);
        STOF_CHECK(used, "--shape {}={}..{}: no input dimension follows it (an input given a fixed --shape overrides it)",
                   r.vars[k].name, r.vars[k].min, r.vars[k].max);
    }
    const std::string limit = bucket_limit_problem(r, args.per_doubling);
    STOF_CHECK(limit.empty(), "{}", limit);
    // Buckets: the product in lexicographic order.
    std::vector<std::vector<int64_t>> sizes;
    for (const plan::ShapeVar& v : r.vars) sizes.push_back(plan::bucket_sizes(v.min, v.max, args.per_doubling));
    std::vector<size_t> idx(sizes.size(), 0);
    while (true) {
        std::vector<int64_t> values;
        for (size_t k = 0; k < sizes.size(); ++k) values.push_back(sizes[k][idx[k]]);
        r.bucket_values.push_back(std::move(values));
        size_t k = sizes.size();
        while (k > 0 && ++idx[k - 1] == sizes[k - 1].size()) idx[--k] = 0;
        if (k == 0) break;
    }
    return b;
}

std::map<std::string, Shape> RangeBinding::shapes_for(const std::vector<int64_t>& values) const {
    std::map<std::string, Shape> out = fixed;
    for (size_t k = 0; k < ranges.vars.size(); ++k)
        if (var_input[k].empty()) out[ranges.vars[k].name] = {values[k]};
    // Inputs with unnamed ranged dimensions: their whole shape.
    for (const auto& [name, base] : input_base) {
        const size_t i = static_cast<size_t>(std::find(input_names.begin(), input_names.end(), name) - input_names.begin());
        Shape s = base;
        for (size_t d = 0; d < s.size(); ++d)
            if (ranges.input_dims[i][d] >= 0) s[d] = values[static_cast<size_t>(ranges.input_dims[i][d])];
        out[name] = s;
    }
    return out;
}

std::pair<std::map<std::string, Shape>, std::string> default_shapes(const ir::Graph& g) {
    std::map<std::string, Shape> out;
    std::string named;
    for (ir::ValueId i : g.inputs) {
        const ir::Value& v = g.value(i);
        if (v.shape_known) continue;
        bool anonymous = v.dim_names.size() != v.shape.size();
        for (size_t d = 0; d < v.shape.size(); ++d) anonymous = anonymous || (v.shape[d] <= 0 && v.dim_names[d].empty());
        for (size_t d = 0; d < v.shape.size(); ++d) {
            if (v.shape[d] > 0) continue;
            const std::string name = d < v.dim_names.size() ? v.dim_names[d] : "";
            const int64_t size = name.find("batch") != std::string::npos || (name.empty() && d == 0) ? 1 : 128;
            if (!anonymous && !out.count(name)) {
                out[name] = {size};
                named += fmt::format("{}{}={}", named.empty() ? "" : ", ", name, size);
            }
        }
        if (anonymous) {
            Shape s = v.shape;
            for (size_t d = 0; d < s.size(); ++d)
                if (s[d] <= 0) s[d] = d == 0 ? 1 : 128;
            out[v.name] = s;
            named += fmt::format("{}{}={}", named.empty() ? "" : ", ", v.name, fmt::join(s, "x"));
        }
    }
    return {out, named};
}

namespace {

// Copies the box `small` between dense tensors of shapes `small` and `big` (same rank).
void copy_box(uint8_t* big, const Shape& big_shape, uint8_t* small, const Shape& small_shape, size_t elem, bool to_big) {
    STOF_CHECK(big_shape.size() == small_shape.size(), "shape {} and {} differ in rank", shape_str(small_shape),
               shape_str(big_shape));
    for (size_t d = 0; d < big_shape.size(); ++d)
        STOF_CHECK(small_shape[d] <= big_shape[d], "shape {} does not fit in {}", shape_str(small_shape), shape_str(big_shape));
    const int64_t n = numel(small_shape);
    if (n == 0) return;
    const size_t rank = small_shape.size();
    const size_t row = rank ? static_cast<size_t>(small_shape.back()) * elem : elem;
    const int64_t rows = rank ? n / small_shape.back() : 1;
    std::vector<int64_t> idx(rank ? rank - 1 : 0, 0);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t bo = 0, so = 0;
        for (size_t d = 0; d < idx.size(); ++d) {
            bo = bo * big_shape[d] + idx[d];
            so = so * small_shape[d] + idx[d];
        }
        uint8_t* b = big + static_cast<size_t>(bo) * static_cast<size_t>(rank ? big_shape.back() : 1) * elem;
        uint8_t* s = small + static_cast<size_t>(so) * row;
        if (to_big) std::memcpy(b, s, row);
        else std::memcpy(s, b, row);
        for (size_t d = idx.size(); d-- > 0;) {
            if (++idx[d] < small_shape[d]) break;
            idx[d] = 0;
        }
    }
}

}  // namespace

Tensor pad_tensor(const Tensor& t, const Shape& bucket) {
    Tensor out(t.dtype, bucket);
    copy_box(out.bytes.data(), bucket, const_cast<uint8_t*>(t.bytes.data()), t.shape, dtype_size(t.dtype), true);
    return out;
}

Tensor cut_tensor(const Tensor& t, const Shape& actual) {
    Tensor out(t.dtype, actual);
    copy_box(const_cast<uint8_t*>(t.bytes.data()), t.shape, out.bytes.data(), actual, dtype_size(t.dtype), false);
    return out;
}

}  // namespace stof
