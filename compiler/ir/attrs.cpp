#include "ir/attrs.hpp"

#include "stof/error.hpp"

#include <fmt/ranges.h>

namespace stof::ir {

template <class T> const T* Attrs::get(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return nullptr;
    const T* v = std::get_if<T>(&it->second);
    STOF_CHECK(v != nullptr, "attribute '{}' has the wrong type ({})", key, attr_str(it->second));
    return v;
}

int64_t Attrs::i(const std::string& key, int64_t def) const {
    const int64_t* v = get<int64_t>(key);
    return v ? *v : def;
}

double Attrs::f(const std::string& key, double def) const {
    auto it = values_.find(key);
    if (it != values_.end()) {
        if (const int64_t* iv = std::get_if<int64_t>(&it->second)) return static_cast<double>(*iv);
    }
    const double* v = get<double>(key);
    return v ? *v : def;
}

std::string Attrs::s(const std::string& key, const std::string& def) const {
    const std::string* v = get<std::string>(key);
    return v ? *v : def;
}

std::vector<int64_t> Attrs::ints(const std::string& key, const std::vector<int64_t>& def) const {
    const auto* v = get<std::vector<int64_t>>(key);
    return v ? *v : def;
}

std::vector<double> Attrs::floats(const std::string& key, const std::vector<double>& def) const {
    const auto* v = get<std::vector<double>>(key);
    return v ? *v : def;
}

const Tensor* Attrs::tensor(const std::string& key) const { return get<Tensor>(key); }

MaskTilesAttr Attrs::mask_tiles(const std::string& key) const {
    const MaskTilesAttr* v = get<MaskTilesAttr>(key);
    return v ? *v : nullptr;
}

std::string attr_str(const AttrValue& v) {
    struct Visitor {
        std::string operator()(int64_t x) const { return std::to_string(x); }
        std::string operator()(double x) const { return fmt::format("{:g}", x); }
        std::string operator()(const std::string& x) const { return "\"" + x + "\""; }
        std::string operator()(const std::vector<int64_t>& x) const { return fmt::format("[{}]", fmt::join(x, ",")); }
        std::string operator()(const std::vector<double>& x) const { return fmt::format("[{}]", fmt::join(x, ",")); }
        std::string operator()(const Tensor& x) const { return "tensor " + x.describe(); }
        std::string operator()(const std::vector<std::string>& x) const {
            return fmt::format("[\"{}\"]", fmt::join(x, "\",\""));
        }
        std::string operator()(const MaskTilesAttr& m) const {
            if (!m) return "tiles none";
            return fmt::format("tiles {}x{}x{}x{} ({}x{}): {} listed, {} partial", m->mask_batch, m->mask_heads, m->rows,
                               m->cols, m->tile_m, m->tile_n, m->col_idx.size(),
                               m->bitmaps.size() / static_cast<size_t>(m->words_per_tile()));
        }
    };
    return std::visit(Visitor{}, v);
}

}  // namespace stof::ir
