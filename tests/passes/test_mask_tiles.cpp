// The mask classified tile by tile (passes/mask_tiles.hpp) against the same mask
// evaluated entry by entry with the reference interpreter: the same pattern,
// bias, padding and verdict for every zoo model, for causal, sliding, offset,
// global, padding and bidirectional masks computed from Range, and for additive
// position biases (T5's bucketed relative positions gathered from a table, with
// padding, causal and -inf entries), at sizes that are no multiple of the tile;
// a bias of j - i alone is evaluated once per distance, one that also varies
// with i or j alone entry by entry, both bit for bit as the entries' reference;
// forms it must not take fall back or are refused.
#include "interp/interpreter.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "passes/attention_mask.hpp"
#include "pipeline.hpp"
#include "test_util.hpp"
#include "zoo_model.hpp"

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

using namespace stof;
namespace fs = std::filesystem;

namespace {

// The graph after the passes before fuse-attention.
ir::Graph prepared(ir::Graph g, const PassOptions& opt) {
    for (const PassInfo& p : pipeline_passes()) {
        if (std::string(p.name) == "fuse-attention") break;
        p.run(g, opt);
    }
    return g;
}

// keep(b, h, i, j) of a meaning (true where it keeps every key).
bool keeps(const passes::MaskMeaning& m, int64_t b, int64_t h, int64_t i, int64_t j) {
    if (m.tiles) return m.tiles->keep(m.tiles->pattern_of(int32_t(b), int32_t(h)), int32_t(i), int32_t(j));
    if (!m.keep) return true;
    const Shape& s = m.keep->shape;
    return m.keep->get_i64((((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * s[2] + i) * s[3] + j) != 0;
}

// bias(b, h, i, j) of a meaning (0 without one).
double bias_at(const passes::MaskMeaning& m, int64_t b, int64_t h, int64_t i, int64_t j) {
    if (!m.bias) return 0;
    const Shape& s = m.bias->shape;
    return m.bias->get_f64((((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * s[2] + i) * s[3] + j);
}

struct Verdict {
    int blocks = 0, by_tiles = 0, refused = 0, by_distance = 0;
};

// Every attention block of g: tile by tile equals entry by entry.
Verdict compare_methods(ir::Graph g, const PassOptions& opt) {
    Verdict v;
    passes::Matcher m(g);
    for (const ir::Node& n : g.nodes) {
        if (n.op != ir::Op::Softmax) continue;
        const std::optional<passes::AttentionMatch> a = passes::match_attention(m, n);
        if (!a) continue;
        const Shape &qs = g.value(a->q).shape, &ks = g.value(a->kt).shape;
        const passes::ScoreDims d{qs[0], qs[1], qs[2], ks[3]};
        INFO(n.label() << " " << d.b << "x" << d.h << "x" << d.sq << "x" << d.sk);
        const passes::MaskMeaning t = passes::analyse_mask(m, *a, d, opt);
        const passes::MaskMeaning e = passes::analyse_mask(m, *a, d, opt, passes::MaskMethod::entries);
        ++v.blocks;
        v.by_tiles += t.by_tiles;
        v.by_distance += t.bias_by_distance;
        CHECK(!e.by_tiles);
        CHECK(!e.bias_by_distance);
        CHECK(t.why_not.empty() == e.why_not.empty());
        if (!e.why_not.empty()) {
            ++v.refused;
            continue;
        }
        CHECK(t.padding == e.padding);
        CHECK(t.full == e.full);
        CHECK((t.bias != nullptr) == (e.bias != nullptr));
        CHECK((t.tiles != nullptr || t.keep.has_value()) == e.keep.has_value());
        if (t.bias && e.bias) CHECK(t.bias->shape == e.bias->shape);
        int64_t wrong = 0, wrong_bias = 0;
        for (int64_t b = 0; b < d.b; ++b)
            for (int64_t h = 0; h < d.h; ++h)
                for (int64_t i = 0; i < d.sq; ++i)
                    for (int64_t j = 0; j < d.sk; ++j) {
                        wrong += keeps(t, b, h, i, j) != keeps(e, b, h, i, j);
                        wrong_bias += bias_at(t, b, h, i, j) != bias_at(e, b, h, i, j);
                    }
        CHECK(wrong == 0);
        CHECK(wrong_bias == 0);
        if (t.tiles) {
            t.tiles->validate();
            CHECK(t.tiles->tile_m == 64);
        }
    }
    return v;
}

Tensor scalar_i64(int64_t x) {
    Tensor t(DType::i64, {});
    t.set_i64(0, x);
    return t;
}

Tensor scalar_f32(double x) {
    Tensor t(DType::f32, {});
    t.set_f64(0, x);
    return t;
}

constexpr int64_t kB = 2, kH = 2, kD = 8;

// Attention over S positions whose mask `combine` builds from the scores "s" into
// "masked": row and column indices "ri" [S,1] and "cj" [1,S] (Range), a padding
// input "pad" [B,S] (int64), constants "neg_inf", "lowest", "zero", "one", "w" (5),
// "two", "three".
ir::Graph mask_model(int64_t S, const std::function<void(test::OnnxBuilder&)>& combine) {
    test::OnnxBuilder b;
    b.input("q", onnx::TensorProto::FLOAT, {kB, kH, S, kD}).input("kt", onnx::TensorProto::FLOAT, {kB, kH, kD, S});
    b.input("v", onnx::TensorProto::FLOAT, {kB, kH, S, kD}).input("pad", onnx::TensorProto::INT64, {kB, S});
    b.initializer("start", scalar_i64(0)).initializer("limit", scalar_i64(S)).initializer("delta", scalar_i64(1));
    b.initializer("ax0", test::ints({0})).initializer("ax1", test::ints({1})).initializer("ax12", test::ints({1, 2}));
    b.initializer("neg_inf", scalar_f32(-std::numeric_limits<double>::infinity())).initializer("lowest", scalar_f32(-3.4e38));
    b.initializer("zero", scalar_f32(0)).initializer("one", scalar_f32(1)).initializer("w", scalar_i64(5));
    b.initializer("two", scalar_i64(2)).initializer("three", scalar_i64(3)).initializer("big", scalar_f32(-1e4));
    b.node("Range", {"start", "limit", "delta"}, {"r"});
    b.node("Unsqueeze", {"r", "ax1"}, {"ri"});
    b.node("Unsqueeze", {"r", "ax0"}, {"cj"});
    test::set_attr(b.node("Cast", {"pad"}, {"pad_b"}), "to", int64_t{9});
    b.node("Unsqueeze", {"pad_b", "ax12"}, {"pad_keys"});  // [B,1,1,S]
    b.node("MatMul", {"q", "kt"}, {"s"});
    combine(b);
    b.node("Softmax", {"masked"}, {"p"});
    b.node("MatMul", {"p", "v"}, {"o"});
    b.output("o");
    return import_onnx_bytes(b.bytes(), "", "mask_model");
}

}  // namespace

TEST_CASE("tile classification equals entry evaluation on every zoo model", "[cpu][passes][attention][mask]") {
    const fs::path zoo = fs::path(test::source_dir()) / "models";
    int models = 0;
    for (const auto& d : fs::directory_iterator(zoo)) {
        if (!fs::exists(d.path() / "model.onnx")) continue;
        const std::string name = d.path().filename().string();
        const bool text = name.rfind("vit", 0) != 0;
        // The stored inputs' shapes, and for text models batch 3 x 200 positions (tiles of 64, 64, 64, 8).
        for (const bool resized : {false, true}) {
            if (resized && !text) continue;
            INFO(name << (resized ? " at 3x200" : ""));
            PassOptions opt;
            opt.input_shapes = test::stored_input_shapes(d.path());
            if (resized)
                for (auto& [input, shape] : opt.input_shapes) shape = Shape{3, 200};
            const Verdict v = compare_methods(prepared(import_onnx_file((d.path() / "model.onnx").string()), opt), opt);
            CHECK(v.blocks == 2);
            CHECK(v.refused == 0);
            CHECK(v.by_tiles == 2);
            CHECK(v.by_distance == (name.rfind("t5", 0) == 0 ? 2 : 0));  // T5's bucketed relative positions
        }
        ++models;
    }
    CHECK(models >= 10);
}

TEST_CASE("masks computed from Range are classified tile by tile as evaluated entry by entry",
          "[cpu][passes][attention][mask]") {
    // fold_limit 64: the query-by-key values stay ops, the classifier's expression.
    PassOptions opt;
    opt.fold_limit = 64;
    struct Family {
        const char* name;
        std::function<void(test::OnnxBuilder&)> combine;
        bool padding;
    };
    const std::vector<Family> families = {
        {"causal: Where(j <= i, s, -inf)",
         [](test::OnnxBuilder& b) {
             b.node("LessOrEqual", {"cj", "ri"}, {"keep"});
             b.node("Where", {"keep", "s", "neg_inf"}, {"masked"});
         },
         false},
        {"causal additive: s + Where(j <= i, 0, lowest), with padding (LLaMA)",
         [](test::OnnxBuilder& b) {
             b.node("LessOrEqual", {"cj", "ri"}, {"causal"});
             b.node("And", {"causal", "pad_keys"}, {"keep"});
             b.node("Where", {"keep", "zero", "lowest"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         true},
        {"sliding: |i - j| <= 5",
         [](test::OnnxBuilder& b) {
             b.node("Sub", {"ri", "cj"}, {"diff"});
             b.node("Abs", {"diff"}, {"dist"});
             b.node("LessOrEqual", {"dist", "w"}, {"keep"});
             b.node("Where", {"keep", "s", "neg_inf"}, {"masked"});
         },
         false},
        {"offset causal: j <= i + 3, float indices",
         [](test::OnnxBuilder& b) {
             b.node("Add", {"ri", "three"}, {"ri3"});
             test::set_attr(b.node("Cast", {"ri3"}, {"ri3f"}), "to", int64_t{1});
             test::set_attr(b.node("Cast", {"cj"}, {"cjf"}), "to", int64_t{1});
             b.node("Greater", {"cjf", "ri3f"}, {"drop"});
             b.node("Where", {"drop", "lowest", "s"}, {"masked"});
         },
         false},
        {"global & causal: (i < 2 or j < 2) and j <= i, padding",
         [](test::OnnxBuilder& b) {
             b.node("Less", {"ri", "two"}, {"gr"});
             b.node("Less", {"cj", "two"}, {"gc"});
             b.node("Or", {"gr", "gc"}, {"global"});
             b.node("LessOrEqual", {"cj", "ri"}, {"causal"});
             b.node("And", {"global", "causal"}, {"both"});
             b.node("Not", {"both"}, {"drop"});
             b.node("Where", {"drop", "neg_inf", "s"}, {"m0"});
             b.node("Where", {"pad_keys", "m0", "neg_inf"}, {"masked"});
         },
         true},
        {"bidirectional padding: s + (1 - pad) * -1e4 (BERT)",
         [](test::OnnxBuilder& b) {
             test::set_attr(b.node("Cast", {"pad_keys"}, {"pf"}), "to", int64_t{1});
             b.node("Sub", {"one", "pf"}, {"inv"});
             b.node("Mul", {"inv", "big"}, {"term"});
             b.node("Add", {"s", "term"}, {"masked"});
         },
         true},
        {"every key kept: j >= 0",
         [](test::OnnxBuilder& b) {
             b.node("GreaterOrEqual", {"cj", "start"}, {"all"});
             b.node("Where", {"all", "s", "neg_inf"}, {"masked"});
         },
         false},
    };
    for (const int64_t S : {int64_t{100}, int64_t{64}, int64_t{130}}) {
        for (const Family& f : families) {
            INFO(f.name << ", S = " << S);
            ir::Graph g = prepared(mask_model(S, f.combine), opt);
            const Verdict v = compare_methods(g, opt);
            CHECK(v.blocks == 1);
            CHECK(v.by_tiles == 1);
            CHECK(v.refused == 0);
            passes::Matcher m(g);
            for (const ir::Node& n : g.nodes)
                if (n.op == ir::Op::Softmax) {
                    const passes::MaskMeaning t = passes::analyse_mask(m, *passes::match_attention(m, n), {kB, kH, S, S}, opt);
                    CHECK((t.padding != ir::kNoValue) == f.padding);
                }
        }
    }
}

TEST_CASE("masks the tile classifier must not take: entry evaluation decides", "[cpu][passes][attention][mask]") {
    PassOptions opt;
    opt.fold_limit = 64;
    const int64_t S = 100;
    SECTION("query-side padding is no key padding mask") {
        const ir::Graph g = prepared(mask_model(S,
                                                [](test::OnnxBuilder& b) {
                                                    b.initializer("rows", test::ints({kB, 1, S, 1}));
                                                    b.node("Reshape", {"pad_keys", "rows"}, {"pad_rows"});
                                                    b.node("LessOrEqual", {"cj", "ri"}, {"causal"});
                                                    b.node("And", {"causal", "pad_rows"}, {"keep"});
                                                    b.node("Where", {"keep", "s", "neg_inf"}, {"masked"});
                                                }),
                                     opt);
        const Verdict v = compare_methods(g, opt);
        CHECK(v.blocks == 1);
        CHECK(v.by_tiles == 0);
        CHECK(v.refused == 1);
    }
    SECTION("a pattern moved by a Transpose (not elementwise) is evaluated entry by entry") {
        const ir::Graph g = prepared(mask_model(S,
                                                [](test::OnnxBuilder& b) {
                                                    b.node("LessOrEqual", {"cj", "ri"}, {"causal"});
                                                    b.node("Transpose", {"causal"}, {"upper"});
                                                    b.node("Where", {"upper", "s", "neg_inf"}, {"masked"});
                                                }),
                                     opt);
        const Verdict v = compare_methods(g, opt);
        CHECK(v.blocks == 1);
        CHECK(v.by_tiles == 0);
        CHECK(v.refused == 0);
    }
    SECTION("a bias added inside a selection (not probe + bias) is evaluated entry by entry") {
        const ir::Graph g = prepared(mask_model(S,
                                                [](test::OnnxBuilder& b) {
                                                    b.node("Sub", {"ri", "cj"}, {"diff"});
                                                    test::set_attr(b.node("Cast", {"diff"}, {"bias"}), "to", int64_t{1});
                                                    b.node("Add", {"s", "bias"}, {"biased"});
                                                    b.node("LessOrEqual", {"cj", "ri"}, {"keep"});
                                                    b.node("Where", {"keep", "biased", "neg_inf"}, {"masked"});
                                                }),
                                     opt);
        const Verdict v = compare_methods(g, opt);
        CHECK(v.blocks == 1);
        CHECK(v.by_tiles == 0);
        CHECK(v.refused == 0);
    }
    SECTION("a finite fill is refused by both") {
        ir::Graph g = prepared(mask_model(S,
                                          [](test::OnnxBuilder& b) {
                                              b.node("LessOrEqual", {"cj", "ri"}, {"keep"});
                                              b.node("Where", {"keep", "s", "zero"}, {"masked"});
                                          }),
                               opt);
        const Verdict v = compare_methods(g, opt);
        CHECK(v.blocks == 1);
        CHECK(v.by_tiles == 1);
        CHECK(v.refused == 1);
    }
}

namespace {

constexpr int64_t kBuckets = 9;  // relative positions -4..4, clamped

// A relative position bias table [kBuckets, heads] (0.25 * (bucket + 1) * (head + 1) - 1,
// one bucket exactly 0), with `far` in the first and last bucket (the clamped ones).
Tensor bias_table(int64_t heads, double far) {
    Tensor t(DType::f32, {kBuckets, heads});
    for (int64_t k = 0; k < kBuckets; ++k)
        for (int64_t h = 0; h < heads; ++h)
            t.set_f64(k * heads + h, k == 0 || k == kBuckets - 1 ? far : 0.25 * double(k + 1) * double(h + 1) - 1);
    return t;
}

// T5's position bias: "rel_bias" [1, heads, S, S] = table[clamp(j - i, -4, 4) + 4, h], gathered and
// moved to [heads, S, S] by Transpose(perm 2,0,1) as both exporters spell it.
void position_bias(test::OnnxBuilder& b, int64_t heads, double far) {
    b.initializer("table", bias_table(heads, far)).initializer("four", scalar_i64(4)).initializer("mfour", scalar_i64(-4));
    b.node("Sub", {"cj", "ri"}, {"rel"});
    b.node("Min", {"rel", "four"}, {"rel_hi"});
    b.node("Max", {"rel_hi", "mfour"}, {"rel_c"});
    b.node("Add", {"rel_c", "four"}, {"bucket"});
    b.node("Gather", {"table", "bucket"}, {"gathered"});  // [S, S, heads]
    test::set_attr(b.node("Transpose", {"gathered"}, {"by_head"}), "perm", std::vector<int64_t>{2, 0, 1});
    b.node("Unsqueeze", {"by_head", "ax0"}, {"rel_bias"});
}

// T5's bidirectional bucket of the relative position j - i (32 buckets, max distance 128):
// 16 * (j > i) + (|j - i| < 8 ? |j - i| : min(8 + int(log(|j - i| / 8) / log(16) * 8), 15)),
// the bound 15 as full_like (ConstantOfShape) like the exports,
// gathered from a [32, heads] table into "rel_bias" [1, heads, S, S].
void t5_position_bias(test::OnnxBuilder& b) {
    Tensor table(DType::f32, {32, kH});
    for (int64_t k = 0; k < table.numel(); ++k) table.set_f64(k, 0.125 * double(k % 7) - 0.3);
    b.initializer("table", table).initializer("i0", scalar_i64(0)).initializer("i8", scalar_i64(8));
    b.initializer("i15", scalar_i64(15)).initializer("i16", scalar_i64(16)).initializer("f8", scalar_f32(8));
    b.initializer("log16", scalar_f32(std::log(16.0)));
    b.node("Sub", {"cj", "ri"}, {"rel"});
    b.node("Greater", {"rel", "i0"}, {"after"});
    test::set_attr(b.node("Cast", {"after"}, {"after_i"}), "to", int64_t{7});
    b.node("Mul", {"after_i", "i16"}, {"half"});
    b.node("Abs", {"rel"}, {"dist"});
    b.node("Less", {"dist", "i8"}, {"small"});
    test::set_attr(b.node("Cast", {"dist"}, {"dist_f"}), "to", int64_t{1});
    b.node("Div", {"dist_f", "f8"}, {"ratio"});
    b.node("Log", {"ratio"}, {"log_ratio"});
    b.node("Div", {"log_ratio", "log16"}, {"scaled"});
    b.node("Mul", {"scaled", "f8"}, {"steps_f"});
    test::set_attr(b.node("Cast", {"steps_f"}, {"steps"}), "to", int64_t{7});
    b.node("Add", {"steps", "i8"}, {"large"});
    b.node("Shape", {"large"}, {"large_shape"});  // the bound as full_like(large, 15)
    b.node("ConstantOfShape", {"large_shape"}, {"zeros_f"});
    test::set_attr(b.node("Cast", {"zeros_f"}, {"zeros"}), "to", int64_t{7});
    b.node("Add", {"zeros", "i15"}, {"bound"});
    b.node("Min", {"large", "bound"}, {"large_c"});
    b.node("Where", {"small", "dist", "large_c"}, {"within"});
    b.node("Add", {"half", "within"}, {"bucket"});
    b.node("Gather", {"table", "bucket"}, {"gathered"});
    test::set_attr(b.node("Transpose", {"gathered"}, {"by_head"}), "perm", std::vector<int64_t>{2, 0, 1});
    b.node("Unsqueeze", {"by_head", "ax0"}, {"rel_bias"});
}

}  // namespace

TEST_CASE("additive position biases are classified tile by tile as evaluated entry by entry", "[cpu][passes][attention][mask]") {
    struct Family {
        const char* name;
        std::function<void(test::OnnxBuilder&)> combine;
        bool padding, masked, by_distance;
    };
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<Family> families = {
        {"T5: s + Where(valid key, position bias, lowest)",
         [](test::OnnxBuilder& b) {
             position_bias(b, kH, -0.5);
             b.node("Where", {"pad_keys", "rel_bias", "lowest"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         true, false, true},
        {"T5's log-spaced buckets: s + Where(valid key, position bias, lowest)",
         [](test::OnnxBuilder& b) {
             t5_position_bias(b);
             b.node("Where", {"pad_keys", "rel_bias", "lowest"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         true, false, true},
        {"T5, one head, the bias first: Where(valid key, position bias, lowest) + s",
         [](test::OnnxBuilder& b) {
             position_bias(b, 1, 2.0);
             b.node("Where", {"pad_keys", "rel_bias", "lowest"}, {"add"});
             b.node("Add", {"add", "s"}, {"masked"});
         },
         true, false, true},
        {"T5 before transformers 5: s + (position bias + (1 - pad) * lowest)",
         [](test::OnnxBuilder& b) {
             position_bias(b, kH, 1.5);
             test::set_attr(b.node("Cast", {"pad_keys"}, {"pf"}), "to", int64_t{1});
             b.node("Sub", {"one", "pf"}, {"inv"});
             b.node("Mul", {"inv", "lowest"}, {"term"});
             b.node("Add", {"rel_bias", "term"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         true, false, true},
        {"a local position bias: -inf beyond 3 positions (a band), with padding",
         [&](test::OnnxBuilder& b) {
             position_bias(b, kH, -inf);
             b.node("Where", {"pad_keys", "rel_bias", "neg_inf"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         true, true, true},
        {"a position bias on a causal mask: s + Where(j <= i, bias, -inf)",
         [](test::OnnxBuilder& b) {
             position_bias(b, kH, 0.75);
             b.node("LessOrEqual", {"cj", "ri"}, {"causal"});
             b.node("Where", {"causal", "rel_bias", "neg_inf"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         false, true, true},
        {"a linear bias from the indices: s + float(i - j)",
         [](test::OnnxBuilder& b) {
             b.node("Sub", {"ri", "cj"}, {"diff"});
             test::set_attr(b.node("Cast", {"diff"}, {"bias"}), "to", int64_t{1});
             b.node("Add", {"s", "bias"}, {"masked"});
         },
         false, false, true},
        {"a bias masking far keys by -2e4 (finite), from the table",
         [](test::OnnxBuilder& b) {
             position_bias(b, kH, -2e4);
             b.node("Add", {"s", "rel_bias"}, {"masked"});
         },
         false, true, true},
        {"a position bias on a band of keys computed from the indices: s + Where(|j - 3 - i| <= 9, bias, -inf)",
         [](test::OnnxBuilder& b) {
             position_bias(b, kH, 0.5);
             b.node("Sub", {"cj", "three"}, {"cj3"});
             b.node("Sub", {"cj3", "ri"}, {"rel3"});
             b.node("Abs", {"rel3"}, {"dist3"});
             b.initializer("nine", scalar_i64(9));
             b.node("LessOrEqual", {"dist3", "nine"}, {"band"});
             b.node("Where", {"band", "rel_bias", "neg_inf"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         false, true, true},
        // Not functions of j - i: evaluated entry by entry.
        {"a position bias plus the query's index: s + (position bias + float(i))",
         [](test::OnnxBuilder& b) {
             position_bias(b, kH, -0.5);
             test::set_attr(b.node("Cast", {"ri"}, {"rif"}), "to", int64_t{1});
             b.node("Add", {"rel_bias", "rif"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         false, false, false},
        {"T5's buckets on the first rows only: s + Where(i < 2 or j < 2, position bias, 0)",
         [](test::OnnxBuilder& b) {
             t5_position_bias(b);
             b.node("Less", {"ri", "two"}, {"gr"});
             b.node("Less", {"cj", "two"}, {"gc"});
             b.node("Or", {"gr", "gc"}, {"global"});
             b.node("Where", {"global", "rel_bias", "zero"}, {"add"});
             b.node("Add", {"s", "add"}, {"masked"});
         },
         false, false, false},
        {"a linear bias of i + j: s + float(i + j)",
         [](test::OnnxBuilder& b) {
             b.node("Add", {"ri", "cj"}, {"sum"});
             test::set_attr(b.node("Cast", {"sum"}, {"bias"}), "to", int64_t{1});
             b.node("Add", {"s", "bias"}, {"masked"});
         },
         false, false, false},
    };
    // fold_limit 64: the bias stays a Gather of the table (a lookup per tile); the default
    // folds it into a constant [1, H, S, S] at these sizes.
    for (const int64_t fold : {int64_t{64}, PassOptions{}.fold_limit}) {
        PassOptions opt;
        opt.fold_limit = fold;
        for (const int64_t S : {int64_t{100}, int64_t{64}, int64_t{130}}) {
            for (const Family& f : families) {
                INFO(f.name << ", S = " << S << ", fold limit " << fold);
                ir::Graph g = prepared(mask_model(S, f.combine), opt);
                const Verdict v = compare_methods(g, opt);
                CHECK(v.blocks == 1);
                CHECK(v.by_tiles == 1);
                CHECK(v.refused == 0);
                CHECK(v.by_distance == int(f.by_distance));
                passes::Matcher m(g);
                for (const ir::Node& n : g.nodes)
                    if (n.op == ir::Op::Softmax) {
                        const passes::MaskMeaning t = passes::analyse_mask(m, *passes::match_attention(m, n), {kB, kH, S, S},
                                                                           opt);
                        CHECK((t.padding != ir::kNoValue) == f.padding);
                        CHECK(t.bias != nullptr);
                        CHECK((t.tiles != nullptr) == f.masked);
                        if (t.bias) CHECK(t.bias->shape[0] == 1);
                    }
            }
        }
    }
}

TEST_CASE("position biases with NaN or +inf entries are refused, tile by tile as entry by entry",
          "[cpu][passes][attention][mask]") {
    for (const double far : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
        for (const int64_t fold : {int64_t{64}, PassOptions{}.fold_limit}) {
            INFO("far bucket " << far << ", fold limit " << fold);
            PassOptions opt;
            opt.fold_limit = fold;
            const ir::Graph g = prepared(mask_model(100,
                                                    [&](test::OnnxBuilder& b) {
                                                        position_bias(b, kH, far);
                                                        b.node("Add", {"s", "rel_bias"}, {"masked"});
                                                    }),
                                         opt);
            const Verdict v = compare_methods(g, opt);
            CHECK(v.blocks == 1);
            CHECK(v.by_tiles == 1);
            CHECK(v.refused == 1);
        }
    }
}
