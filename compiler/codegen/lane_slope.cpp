#include "codegen/lane_slope.hpp"

#include <cctype>
#include <optional>
#include <vector>

namespace stof::codegen {

namespace {

constexpr int kUnknown = -1;

// A recursive-descent reader of the index grammar that returns each
// subexpression's slope (0, 1 or kUnknown); any syntax it does not know fails.
class SlopeParser {
public:
    SlopeParser(const std::string& s, const std::string& lane) : s_(s), lane_(lane) {}

    std::optional<int> run() {
        const std::optional<int> r = ternary();
        skip();
        if (!r || pos_ != s_.size()) return std::nullopt;
        return r;
    }

private:
    void skip() {
        while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    bool eat(const char* tok) {
        skip();
        const std::string t(tok);
        if (s_.compare(pos_, t.size(), t) != 0) return false;
        pos_ += t.size();
        return true;
    }
    static int add(int a, int b) { return a == kUnknown || b == kUnknown || a + b > 1 ? kUnknown : a + b; }
    static int flat(int a, int b) { return a == 0 && b == 0 ? 0 : kUnknown; }

    std::optional<int> ternary() {
        std::optional<int> c = logical();
        if (!c) return std::nullopt;
        if (!eat("?")) return c;
        const std::optional<int> a = ternary();
        if (!a || !eat(":")) return std::nullopt;
        const std::optional<int> b = ternary();
        if (!b) return std::nullopt;
        return flat(flat(*c, *a), *b);
    }
    std::optional<int> logical() {
        std::optional<int> a = comparison();
        while (a) {
            if (!eat("&&") && !eat("||")) return a;
            const std::optional<int> b = comparison();
            if (!b) return std::nullopt;
            a = flat(*a, *b);
        }
        return a;
    }
    std::optional<int> comparison() {
        std::optional<int> a = additive();
        while (a) {
            if (!eat("<=") && !eat(">=") && !eat("==") && !eat("!=") && !eat("<") && !eat(">")) return a;
            const std::optional<int> b = additive();
            if (!b) return std::nullopt;
            a = flat(*a, *b);
        }
        return a;
    }
    std::optional<int> additive() {
        std::optional<int> a = multiplicative();
        while (a) {
            const bool plus = eat("+");
            if (!plus && !eat("-")) return a;
            const std::optional<int> b = multiplicative();
            if (!b) return std::nullopt;
            a = plus ? add(*a, *b) : (*b == 0 ? *a : kUnknown);
        }
        return a;
    }
    std::optional<int> multiplicative() {
        std::optional<int> a = unary();
        while (a) {
            if (!eat("*") && !eat("/") && !eat("%")) return a;
            const std::optional<int> b = unary();
            if (!b) return std::nullopt;
            a = flat(*a, *b);
        }
        return a;
    }
    std::optional<int> unary() {
        if (eat("-") || eat("!")) {
            const std::optional<int> a = unary();
            if (!a) return std::nullopt;
            return *a == 0 ? 0 : kUnknown;
        }
        return postfix();
    }
    // Arguments of a call or subscript: their slopes must be 0.
    std::optional<int> arguments(const char* close) {
        int r = 0;
        if (eat(close)) return r;
        while (true) {
            const std::optional<int> a = ternary();
            if (!a) return std::nullopt;
            r = flat(r, *a);
            if (eat(close)) return r;
            if (!eat(",")) return std::nullopt;
        }
    }
    std::optional<int> postfix() {
        std::optional<int> a = primary();
        while (a) {
            if (eat("(")) {
                const std::optional<int> b = arguments(")");
                if (!b) return std::nullopt;
                a = flat(*a, *b);
            } else if (eat("[")) {
                const std::optional<int> b = arguments("]");
                if (!b) return std::nullopt;
                a = flat(*a, *b);
            } else {
                return a;
            }
        }
        return a;
    }
    std::optional<int> primary() {
        skip();
        if (pos_ >= s_.size()) return std::nullopt;
        if (eat("(")) {
            const std::optional<int> a = ternary();
            if (!a || !eat(")")) return std::nullopt;
            return a;
        }
        const char c = s_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c))) {
            while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
            return 0;
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            const size_t start = pos_;
            while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                        (s_[pos_] == ':' && pos_ + 1 < s_.size() && s_[pos_ + 1] == ':'))) {
                pos_ += s_[pos_] == ':' ? 2 : 1;
            }
            const std::string id = s_.substr(start, pos_ - start);
            if (id == "static_cast" || id == "reinterpret_cast") {  // <type>( ... )
                if (!eat("<")) return std::nullopt;
                int depth = 1;
                while (pos_ < s_.size() && depth > 0) depth += s_[pos_] == '<' ? 1 : s_[pos_] == '>' ? -1 : 0, ++pos_;
                if (depth != 0 || !eat("(")) return std::nullopt;
                const std::optional<int> a = ternary();
                if (!a || !eat(")")) return std::nullopt;
                return *a == 0 ? 0 : kUnknown;
            }
            return id == lane_ ? 1 : 0;
        }
        return std::nullopt;
    }

    const std::string& s_;
    const std::string& lane_;
    size_t pos_ = 0;
};

}  // namespace

int lane_slope(const std::string& expr, const std::string& lane) {
    const std::optional<int> r = SlopeParser(expr, lane).run();
    return r ? *r : kUnknown;
}

}  // namespace stof::codegen
