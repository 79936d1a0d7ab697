#include "codegen/lane_slope.hpp"

#include <cctype>
#include <optional>
#include <vector>

namespace stof::codegen {

namespace {

constexpr int kUnknown = -1;

// What the reader knows of a subexpression: its slope (0, 1 or kUnknown) and
// whether it is a multiple of `multiple` whenever the lane is one.
struct Term {
    int slope = 0;
    bool aligned = false;
};

// A recursive-descent reader of the index grammar that returns each
// subexpression's Term; any syntax it does not know fails.
class SlopeParser {
public:
    SlopeParser(const std::string& s, const std::string& lane, int64_t multiple) : s_(s), lane_(lane), multiple_(multiple) {}

    std::optional<Term> run() {
        const std::optional<Term> r = ternary();
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
    // A term about which nothing but its slope is known.
    static Term opaque(int slope) { return {slope, false}; }

    std::optional<Term> ternary() {
        std::optional<Term> c = logical();
        if (!c) return std::nullopt;
        if (!eat("?")) return c;
        const std::optional<Term> a = ternary();
        if (!a || !eat(":")) return std::nullopt;
        const std::optional<Term> b = ternary();
        if (!b) return std::nullopt;
        return opaque(flat(flat(c->slope, a->slope), b->slope));
    }
    std::optional<Term> logical() {
        std::optional<Term> a = comparison();
        while (a) {
            if (!eat("&&") && !eat("||")) return a;
            const std::optional<Term> b = comparison();
            if (!b) return std::nullopt;
            a = opaque(flat(a->slope, b->slope));
        }
        return a;
    }
    std::optional<Term> comparison() {
        std::optional<Term> a = additive();
        while (a) {
            if (!eat("<=") && !eat(">=") && !eat("==") && !eat("!=") && !eat("<") && !eat(">")) return a;
            const std::optional<Term> b = additive();
            if (!b) return std::nullopt;
            a = opaque(flat(a->slope, b->slope));
        }
        return a;
    }
    std::optional<Term> additive() {
        std::optional<Term> a = multiplicative();
        while (a) {
            const bool plus = eat("+");
            if (!plus && !eat("-")) return a;
            const std::optional<Term> b = multiplicative();
            if (!b) return std::nullopt;
            a = Term{plus ? add(a->slope, b->slope) : (b->slope == 0 ? a->slope : kUnknown), a->aligned && b->aligned};
        }
        return a;
    }
    std::optional<Term> multiplicative() {
        std::optional<Term> a = unary();
        while (a) {
            const bool times = eat("*");
            if (!times && !eat("/") && !eat("%")) return a;
            const std::optional<Term> b = unary();
            if (!b) return std::nullopt;
            a = Term{flat(a->slope, b->slope), times && (a->aligned || b->aligned)};
        }
        return a;
    }
    std::optional<Term> unary() {
        const bool minus = eat("-");
        if (minus || eat("!")) {
            const std::optional<Term> a = unary();
            if (!a) return std::nullopt;
            return Term{a->slope == 0 ? 0 : kUnknown, minus && a->aligned};
        }
        return postfix();
    }
    // Arguments of a call or subscript: their slopes must be 0.
    std::optional<int> arguments(const char* close) {
        int r = 0;
        if (eat(close)) return r;
        while (true) {
            const std::optional<Term> a = ternary();
            if (!a) return std::nullopt;
            r = flat(r, a->slope);
            if (eat(close)) return r;
            if (!eat(",")) return std::nullopt;
        }
    }
    std::optional<Term> postfix() {
        std::optional<Term> a = primary();
        while (a) {
            if (eat("(")) {
                const std::optional<int> b = arguments(")");
                if (!b) return std::nullopt;
                a = opaque(flat(a->slope, *b));
            } else if (eat("[")) {
                const std::optional<int> b = arguments("]");
                if (!b) return std::nullopt;
                a = opaque(flat(a->slope, *b));
            } else {
                return a;
            }
        }
        return a;
    }
    std::optional<Term> primary() {
        skip();
        if (pos_ >= s_.size()) return std::nullopt;
        if (eat("(")) {
            const std::optional<Term> a = ternary();
            if (!a || !eat(")")) return std::nullopt;
            return a;
        }
        const char c = s_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c))) {
            // An integer literal (digits, then an optional LL / U suffix) is aligned when it is a multiple.
            const size_t start = pos_;
            int64_t value = 0;
            bool small = true;
            while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
                small = small && value < (int64_t{1} << 58);
                value = value * 10 + (s_[pos_++] - '0');
            }
            bool integer = true;
            while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) {
                const char x = s_[pos_++];
                integer = integer && (x == 'L' || x == 'l' || x == 'U' || x == 'u');
            }
            const bool aligned = integer && small && pos_ > start && multiple_ > 0 && value % multiple_ == 0;
            return Term{0, aligned};
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
                const std::optional<Term> a = ternary();
                if (!a || !eat(")")) return std::nullopt;
                return opaque(a->slope == 0 ? 0 : kUnknown);
            }
            return id == lane_ ? Term{1, true} : Term{0, false};
        }
        return std::nullopt;
    }

    const std::string& s_;
    const std::string& lane_;
    int64_t multiple_;
    size_t pos_ = 0;
};

}  // namespace

int lane_slope(const std::string& expr, const std::string& lane) {
    const std::optional<Term> r = SlopeParser(expr, lane, 0).run();
    return r ? r->slope : kUnknown;
}

bool lane_aligned(const std::string& expr, const std::string& lane, int64_t multiple) {
    if (multiple < 1) return false;
    const std::optional<Term> r = SlopeParser(expr, lane, multiple).run();
    return r && r->slope == 1 && r->aligned;
}

}  // namespace stof::codegen
