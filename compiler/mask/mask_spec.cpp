#include "mask/mask_spec.hpp"

#include "stof/error.hpp"

#include <cctype>
#include <limits>

namespace stof {

namespace {

constexpr int64_t kMaxParam = std::numeric_limits<int32_t>::max();
// Deepest nesting of parentheses: the parser, builder and evaluator recurse once per level.
constexpr int kMaxDepth = 64;

bool is_delim(char c) { return c == '|' || c == '&' || c == '(' || c == ')' || std::isspace(static_cast<unsigned char>(c)); }

class Parser {
public:
    explicit Parser(const std::string& text) : s_(text) {}

    MaskSpec parse() {
        skip_ws();
        if (pos_ == s_.size()) fail("the spec is empty");
        MaskSpec m = parse_union();
        skip_ws();
        if (pos_ != s_.size()) fail(fmt::format("unexpected \"{}\" at column {}", s_.substr(pos_), pos_ + 1));
        return m;
    }

private:
    const std::string& s_;
    size_t pos_ = 0;
    int depth_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        const std::string shown = s_.size() > 120 ? s_.substr(0, 100) + "..." : s_;
        STOF_FAIL("bad mask spec \"{}\": {}; accepted forms: {}", shown, what, mask_spec_forms());
    }

    void skip_ws() {
        while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }

    MaskSpec parse_union() {
        MaskSpec m;
        m.kind = MaskSpec::Kind::any;
        m.children.push_back(parse_intersection());
        for (skip_ws(); pos_ < s_.size() && s_[pos_] == '|'; skip_ws()) {
            ++pos_;
            m.children.push_back(parse_intersection());
        }
        if (m.children.size() == 1) return std::move(m.children[0]);
        return m;
    }

    MaskSpec parse_intersection() {
        MaskSpec m;
        m.kind = MaskSpec::Kind::all;
        m.children.push_back(parse_factor());
        for (skip_ws(); pos_ < s_.size() && s_[pos_] == '&'; skip_ws()) {
            ++pos_;
            m.children.push_back(parse_factor());
        }
        if (m.children.size() == 1) return std::move(m.children[0]);
        return m;
    }

    MaskSpec parse_factor() {
        skip_ws();
        if (pos_ == s_.size()) {
            size_t q = pos_;
            while (q > 0 && std::isspace(static_cast<unsigned char>(s_[q - 1]))) --q;
            if (q > 0) fail(fmt::format("expected a pattern after \"{}\" at the end", s_[q - 1]));
            fail("the spec is empty");
        }
        if (s_[pos_] == '(') {
            const size_t open = pos_++;
            if (++depth_ > kMaxDepth) fail(fmt::format("\"(\" at column {} nests deeper than {} levels", open + 1, kMaxDepth));
            MaskSpec m = parse_union();
            --depth_;
            skip_ws();
            if (pos_ == s_.size() || s_[pos_] != ')')
                fail(fmt::format(
                    "\"(\" at column {} is not closed{}", open + 1,
                    pos_ == s_.size() ? "" : fmt::format(" (found \"{}\" at column {})", s_.substr(pos_), pos_ + 1)));
            ++pos_;
            return m;
        }
        if (!std::isalpha(static_cast<unsigned char>(s_[pos_])))
            fail(fmt::format("expected a pattern at column {}, found \"{}\"", pos_ + 1, s_.substr(pos_)));
        return parse_atom();
    }

    // name(:param)* ; file's one parameter is a path (quoted, or up to a delimiter).
    MaskSpec parse_atom() {
        const size_t start = pos_;
        while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
        const std::string name = s_.substr(start, pos_ - start);
        std::vector<std::string> params;
        while (pos_ < s_.size() && s_[pos_] == ':') {
            ++pos_;
            if (name == "file" && params.empty() && pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
                const char quote = s_[pos_];
                const size_t close = s_.find(quote, pos_ + 1);
                if (close == std::string::npos)
                    fail(fmt::format("unterminated quote in \"{}\" at column {}", s_.substr(start), start + 1));
                params.push_back(s_.substr(pos_ + 1, close - pos_ - 1));
                pos_ = close + 1;
                continue;
            }
            const size_t p0 = pos_;
            while (pos_ < s_.size() && !is_delim(s_[pos_]) && (name == "file" || s_[pos_] != ':')) ++pos_;
            params.push_back(s_.substr(p0, pos_ - p0));
        }
        const std::string atom = s_.substr(start, pos_ - start);
        const std::string where = fmt::format("\"{}\" at column {}", atom, start + 1);

        auto expect = [&](size_t n, const char* form) {
            if (params.size() != n)
                fail(fmt::format("{}: {} takes {} parameter{} ({}), got {}", where, name, n, n == 1 ? "" : "s", form,
                                 params.size()));
        };
        // A decimal in [lo, kMaxParam].
        auto integer = [&](size_t k, const char* what, int64_t lo) {
            const std::string& t = params[k];
            size_t d = t.size() > 1 && t[0] == '-' ? 1 : 0;
            bool digits = t.size() > d;
            for (size_t q = d; q < t.size(); ++q) digits = digits && std::isdigit(static_cast<unsigned char>(t[q]));
            if (!digits) fail(fmt::format("{}: {} must be an integer, got \"{}\"", where, what, t));
            if (d == 1) fail(fmt::format("{}: {} must be >= {}, got {}", where, what, lo, t));
            if (t.size() - d > 10 || std::stoll(t) > kMaxParam)
                fail(fmt::format("{}: {} = {} is too large (at most {})", where, what, t, kMaxParam));
            const int64_t v = std::stoll(t);
            if (v < lo) fail(fmt::format("{}: {} must be >= {}, got {}", where, what, lo, v));
            return v;
        };
        auto seed = [&](size_t k) {
            const std::string& t = params[k];
            bool digits = !t.empty();
            for (char c : t) digits = digits && std::isdigit(static_cast<unsigned char>(c));
            if (!digits) fail(fmt::format("{}: SEED must be a non-negative integer, got \"{}\"", where, t));
            uint64_t v = 0;
            for (char c : t) {
                const auto digit = static_cast<uint64_t>(c - '0');
                if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10)
                    fail(fmt::format("{}: SEED = {} does not fit in 64 bits", where, t));
                v = v * 10 + digit;
            }
            return v;
        };

        MaskSpec m;
        if (name == "dense" || name == "causal") {
            expect(0, name.c_str());
            m.kind = name == "dense" ? MaskSpec::Kind::dense : MaskSpec::Kind::causal;
        } else if (name == "sliding") {
            expect(1, "sliding:W");
            m.kind = MaskSpec::Kind::sliding;
            m.window = integer(0, "W", 0);
        } else if (name == "global") {
            expect(1, "global:G");
            m.kind = MaskSpec::Kind::global;
            m.global = integer(0, "G", 0);
        } else if (name == "strided") {
            expect(1, "strided:P");
            m.kind = MaskSpec::Kind::strided;
            m.stride = integer(0, "P", 1);
        } else if (name == "random") {
            expect(3, "random:B:R:SEED");
            m.kind = MaskSpec::Kind::random;
            m.block = integer(0, "B", 1);
            m.count = integer(1, "R", 0);
            m.seed = seed(2);
        } else if (name == "longformer") {
            expect(2, "longformer:W:G");
            MaskSpec band, glob;
            band.kind = MaskSpec::Kind::sliding;
            band.window = integer(0, "W", 0);
            glob.kind = MaskSpec::Kind::global;
            glob.global = integer(1, "G", 0);
            m.kind = MaskSpec::Kind::any;
            m.shorthand = fmt::format("longformer:{}:{}", band.window, glob.global);
            m.children = {band, glob};
        } else if (name == "bigbird") {
            expect(5, "bigbird:B:W:G:R:SEED");
            MaskSpec band, glob, rnd;
            band.kind = MaskSpec::Kind::block_band;
            band.block = integer(0, "B", 1);
            band.window = integer(1, "W", 0);
            glob.kind = MaskSpec::Kind::global;
            glob.global = integer(2, "G", 0) * band.block;  // G block rows and block columns
            rnd.kind = MaskSpec::Kind::random;
            rnd.block = band.block;
            rnd.count = integer(3, "R", 0);
            rnd.seed = seed(4);
            m.kind = MaskSpec::Kind::any;
            m.shorthand = fmt::format("bigbird:{}:{}:{}:{}:{}", band.block, band.window, glob.global / band.block, rnd.count,
                                      rnd.seed);
            m.children = {band, glob, rnd};
        } else if (name == "file") {
            expect(1, "file:PATH.npy");
            if (params[0].empty()) fail(fmt::format("{}: the file path is empty", where));
            m.kind = MaskSpec::Kind::file;
            m.path = params[0];
        } else {
            fail(fmt::format("unknown pattern {}", where));
        }
        return m;
    }
};

void append(std::string& out, const MaskSpec& s, bool inside_all) {
    using K = MaskSpec::Kind;
    switch (s.kind) {
        case K::dense: out += "dense"; return;
        case K::causal: out += "causal"; return;
        case K::sliding: out += fmt::format("sliding:{}", s.window); return;
        case K::global: out += fmt::format("global:{}", s.global); return;
        case K::strided: out += fmt::format("strided:{}", s.stride); return;
        case K::random: out += fmt::format("random:{}:{}:{}", s.block, s.count, s.seed); return;
        case K::block_band: out += fmt::format("band:{}:{}", s.block, s.window); return;
        case K::file: {
            bool plain = !s.path.empty();
            for (char c : s.path) plain = plain && !is_delim(c) && c != '\'' && c != '"';
            out += plain ? "file:" + s.path
                         : (s.path.find('\'') == std::string::npos ? "file:'" + s.path + "'" : "file:\"" + s.path + "\"");
            return;
        }
        case K::any:
        case K::all: {
            if (!s.shorthand.empty()) {
                out += s.shorthand;
                return;
            }
            const bool parens = s.kind == K::any && inside_all;
            if (parens) out += '(';
            for (size_t k = 0; k < s.children.size(); ++k) {
                if (k > 0) out += s.kind == K::any ? " | " : " & ";
                append(out, s.children[k], s.kind == K::all);
            }
            if (parens) out += ')';
            return;
        }
    }
}

}  // namespace

MaskSpec parse_mask_spec(const std::string& text) { return Parser(text).parse(); }

std::string to_string(const MaskSpec& spec) {
    std::string out;
    append(out, spec, false);
    return out;
}

const char* mask_spec_forms() {
    return "dense, causal, sliding:W, global:G, strided:P, random:B:R:SEED, longformer:W:G, bigbird:B:W:G:R:SEED, "
           "file:PATH.npy, A|B (union), A&B (intersection), (A)";
}

bool has_file_atom(const MaskSpec& spec) {
    if (spec.kind == MaskSpec::Kind::file) return true;
    for (const MaskSpec& c : spec.children)
        if (has_file_atom(c)) return true;
    return false;
}

}  // namespace stof
