#include "mask/mask_spec.hpp"
#include "test_util.hpp"

using namespace stof;
using K = MaskSpec::Kind;

TEST_CASE("mask spec atoms parse to their parameters", "[cpu][mask]") {
    CHECK(parse_mask_spec("dense").kind == K::dense);
    CHECK(parse_mask_spec("causal").kind == K::causal);
    const MaskSpec s = parse_mask_spec("sliding:17");
    CHECK(s.kind == K::sliding);
    CHECK(s.window == 17);
    const MaskSpec g = parse_mask_spec("global:0");
    CHECK(g.kind == K::global);
    CHECK(g.global == 0);
    const MaskSpec r = parse_mask_spec("random:64:3:18446744073709551615");
    CHECK(r.kind == K::random);
    CHECK(r.block == 64);
    CHECK(r.count == 3);
    CHECK(r.seed == 18446744073709551615ull);
    const MaskSpec f = parse_mask_spec("file:/tmp/a:b.npy");
    CHECK(f.kind == K::file);
    CHECK(f.path == "/tmp/a:b.npy");
    CHECK(parse_mask_spec("file:'my mask.npy'").path == "my mask.npy");
}

TEST_CASE("mask spec shorthands expand to unions", "[cpu][mask]") {
    const MaskSpec l = parse_mask_spec("longformer:5:2");
    REQUIRE(l.kind == K::any);
    REQUIRE(l.children.size() == 2);
    CHECK(l.children[0].kind == K::sliding);
    CHECK(l.children[0].window == 5);
    CHECK(l.children[1].kind == K::global);
    CHECK(l.children[1].global == 2);
    const MaskSpec b = parse_mask_spec("bigbird:64:1:2:3:7");
    REQUIRE(b.kind == K::any);
    REQUIRE(b.children.size() == 3);
    CHECK(b.children[0].kind == K::block_band);
    CHECK(b.children[0].block == 64);
    CHECK(b.children[0].window == 1);
    CHECK(b.children[1].kind == K::global);
    CHECK(b.children[1].global == 128);
    CHECK(b.children[2].kind == K::random);
    CHECK(b.children[2].block == 64);
    CHECK(b.children[2].count == 3);
    CHECK(b.children[2].seed == 7);
    CHECK(to_string(b) == "bigbird:64:1:2:3:7");
}

TEST_CASE("mask spec precedence parentheses and whitespace", "[cpu][mask]") {
    const MaskSpec a = parse_mask_spec(" causal | sliding:2 & global:1 ");
    REQUIRE(a.kind == K::any);
    REQUIRE(a.children.size() == 2);
    CHECK(a.children[0].kind == K::causal);
    REQUIRE(a.children[1].kind == K::all);
    CHECK(a.children[1].children[0].kind == K::sliding);
    CHECK(a.children[1].children[1].kind == K::global);

    const MaskSpec b = parse_mask_spec("( causal|sliding:2 )&global:1");
    REQUIRE(b.kind == K::all);
    CHECK(b.children[0].kind == K::any);
    CHECK(b.children[1].kind == K::global);
    CHECK(to_string(b) == "(causal | sliding:2) & global:1");

    const MaskSpec c = parse_mask_spec("dense|causal|global:3");
    CHECK(c.kind == K::any);
    CHECK(c.children.size() == 3);
}

TEST_CASE("mask spec text round trips", "[cpu][mask]") {
    for (const char* text : {"dense", "causal", "sliding:0", "global:4", "strided:8", "random:16:2:99", "longformer:8:1",
                             "bigbird:32:2:1:3:5", "causal & sliding:4 | global:2",
                             "(causal | global:1) & (sliding:3 | random:8:1:2)", "file:x.npy & causal", "file:'a b.npy'"}) {
        INFO(text);
        const std::string once = to_string(parse_mask_spec(text));
        CHECK(to_string(parse_mask_spec(once)) == once);
    }
    CHECK(has_file_atom(parse_mask_spec("causal | (global:1 & file:m.npy)")));
    CHECK(!has_file_atom(parse_mask_spec("causal | global:1")));
}

TEST_CASE("bad mask specs are rejected with the bad part quoted", "[cpu][mask]") {
    const std::pair<const char*, const char*> cases[] = {
        {"slidng:4", "unknown pattern \"slidng:4\" at column 1"},
        {"causal|slidng:4", "unknown pattern \"slidng:4\" at column 8"},
        {"causal|", "expected a pattern after \"|\" at the end"},
        {"causal &", "expected a pattern after \"&\" at the end"},
        {"", "the spec is empty"},
        {"   ", "the spec is empty"},
        {"sliding:-1", "\"sliding:-1\" at column 1: W must be >= 0, got -1"},
        {"global:-3", "G must be >= 0, got -3"},
        {"strided:0", "\"strided:0\" at column 1: P must be >= 1, got 0"},
        {"random:0:1:2", "\"random:0:1:2\" at column 1: B must be >= 1, got 0"},
        {"random:4:-1:2", "R must be >= 0, got -1"},
        {"random:4:1:-2", "SEED must be a non-negative integer, got \"-2\""},
        {"random:4:1:99999999999999999999", "SEED = 99999999999999999999 does not fit in 64 bits"},
        {"bigbird:0:1:1:1:1", "B must be >= 1, got 0"},
        {"bigbird:64:-1:1:1:1", "W must be >= 0, got -1"},
        {"bigbird:64:1:2:3", "bigbird takes 5 parameters (bigbird:B:W:G:R:SEED), got 4"},
        {"sliding:x", "W must be an integer, got \"x\""},
        {"sliding:", "W must be an integer, got \"\""},
        {"sliding", "sliding takes 1 parameter (sliding:W), got 0"},
        {"sliding:1:2", "sliding takes 1 parameter (sliding:W), got 2"},
        {"causal:1", "causal takes 0 parameters (causal), got 1"},
        {"sliding:99999999999", "W = 99999999999 is too large"},
        {"(causal", "\"(\" at column 1 is not closed"},
        {"(causal dense)", "\"(\" at column 1 is not closed (found \"dense)\" at column 9)"},
        {"causal)", "unexpected \")\" at column 7"},
        {"causal dense", "unexpected \"dense\" at column 8"},
        {"causal & | dense", "expected a pattern at column 10, found \"| dense\""},
        {"file:", "the file path is empty"},
        {"file:'abc", "unterminated quote"},
    };
    for (const auto& [text, needle] : cases) {
        INFO("spec: '" << text << "'");
        test::require_error([&] { parse_mask_spec(text); }, needle);
        test::require_error([&] { parse_mask_spec(text); }, "accepted forms: dense, causal, sliding:W, global:G");
    }
}
