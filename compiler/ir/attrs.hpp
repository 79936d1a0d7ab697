// Node attributes: ONNX-style named values, typed getters with defaults.
#pragma once

#include "stof/sparse_mask.hpp"
#include "stof/tensor.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace stof::ir {

// A mask pattern in the sparse format (SparseAttention's `keep_tiles`): shared, never copied.
using MaskTilesAttr = std::shared_ptr<const SparseMask>;

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor,
                               std::vector<std::string>, MaskTilesAttr>;

class Attrs {
public:
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    void set(const std::string& key, AttrValue v) { values_[key] = std::move(v); }
    void erase(const std::string& key) { values_.erase(key); }

    // Typed getters: the default when absent, a stof::Error when present with another type.
    int64_t i(const std::string& key, int64_t def) const;
    double f(const std::string& key, double def) const;
    std::string s(const std::string& key, const std::string& def) const;
    std::vector<int64_t> ints(const std::string& key, const std::vector<int64_t>& def = {}) const;
    std::vector<double> floats(const std::string& key, const std::vector<double>& def = {}) const;
    const Tensor* tensor(const std::string& key) const;      // nullptr when absent
    MaskTilesAttr mask_tiles(const std::string& key) const;  // null when absent

    const std::map<std::string, AttrValue>& all() const { return values_; }

private:
    template <class T> const T* get(const std::string& key) const;
    std::map<std::string, AttrValue> values_;
};

std::string attr_str(const AttrValue& v);  // stable text form for dumps

}  // namespace stof::ir
