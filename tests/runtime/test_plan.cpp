// The plan file: round trip through serialize_plan / parse_plan, and rejection
// of damaged files (every section truncated or flipped, bad offsets, another
// format version, semantic damage behind valid checksums).
#include "catch.hpp"
#include "codegen/lower.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "stof/plan_format.hpp"
#include "stof/sparse_mask.hpp"
#include "test_util.hpp"

#include <cstring>

using namespace stof;

namespace {

uint64_t load_u64(const std::string& b, size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, b.data() + at, 8);
    return v;
}

// A plan from the real compiler: MatMul + bias, LayerNorm, Softmax over a
// [2, 8, 32] input (fp16 storage), plus a sparse mask entry.
const plan::Plan& sample_plan() {
    static const plan::Plan p = [] {
        std::mt19937_64 rng = test::make_rng();
        test::OnnxBuilder b;
        b.input("x", onnx::TensorProto::FLOAT, {2, 8, 32});
        b.initializer("w", test::random_tensor(DType::f32, {32, 32}, rng));
        b.initializer("bias", test::random_tensor(DType::f32, {32}, rng));
        b.initializer("scale", test::random_tensor(DType::f32, {32}, rng));
        b.node("MatMul", {"x", "w"}, {"h"});
        b.node("Add", {"h", "bias"}, {"hb"});
        b.node("LayerNormalization", {"hb", "scale"}, {"n"});
        b.node("Softmax", {"n"}, {"y"});
        b.output("y");
        ir::Graph g = import_onnx_bytes(b.bytes(), "", "sample");
        run_pipeline(g, {});
        codegen::LowerOptions opt;
        opt.precision = "fp16";
        opt.arch = "sm_90";
        opt.cache_dir = test::binary_dir() + "/test_tmp/plan_cache";
        opt.model = "sample.onnx";
        plan::Plan out = codegen::lower(g, opt);
        std::vector<uint8_t> keep(100 * 90);
        for (size_t i = 0; i < keep.size(); ++i) keep[i] = (i * 7) % 5 == 0;
        plan::MaskEntry m;
        m.spec = "file:keep.npy";
        m.kernel_reason = "test";
        m.mask = from_dense(keep.data(), 1, 1, 100, 90, 64, 64);
        out.masks.push_back(m);
        plan::validate(out);
        return out;
    }();
    return p;
}

struct SectionEntry {
    std::string name;
    uint64_t entry_at, offset, size;
};

std::vector<SectionEntry> sections(const std::string& bytes) {
    uint32_t count = 0;
    std::memcpy(&count, bytes.data() + 44, 4);
    std::vector<SectionEntry> s;
    for (uint32_t i = 0; i < count; ++i) {
        const size_t at = plan::kHeaderBytes + i * plan::kSectionEntryBytes;
        s.push_back({std::string(bytes.c_str() + at), at, load_u64(bytes, at + 16), load_u64(bytes, at + 24)});
    }
    return s;
}

}  // namespace

TEST_CASE("a plan survives serialize and parse unchanged", "[cpu][plan]") {
    const plan::Plan& p = sample_plan();
    const std::string bytes = plan::serialize_plan(p);
    const plan::Plan q = plan::parse_plan(bytes, "sample.plan");
    // Re-serialising the parsed plan gives the same bytes: every field came back.
    CHECK(plan::serialize_plan(q) == bytes);
    REQUIRE(q.steps.size() == p.steps.size());
    REQUIRE(q.tensors.size() == p.tensors.size());
    for (size_t i = 0; i < p.tensors.size(); ++i) {
        CHECK(q.tensors[i].name == p.tensors[i].name);
        CHECK(q.tensors[i].shape == p.tensors[i].shape);
    }
    CHECK(q.weights == p.weights);
    CHECK(q.kernels.size() == p.kernels.size());
    CHECK(q.meta.precision == "fp16");
    REQUIRE(q.masks.size() == 1);
    CHECK(q.masks[0].mask.bitmaps == p.masks[0].mask.bitmaps);
    CHECK(q.masks[0].mask.col_idx == p.masks[0].mask.col_idx);
    CHECK(sections(bytes).size() == plan::kSectionCount);
}

TEST_CASE("damaged plans are rejected naming the damage", "[cpu][plan]") {
    const std::string bytes = plan::serialize_plan(sample_plan());
    for (const SectionEntry& s : sections(bytes)) {
        INFO("section " << s.name);
        if (s.size == 0) continue;
        // Truncated inside the section.
        test::require_error([&] { plan::parse_plan(bytes.substr(0, s.offset + s.size / 2), "p"); }, "'" + s.name + "'");
        // One flipped byte in the payload.
        std::string flipped = bytes;
        flipped[s.offset + s.size / 3] ^= 0x5a;
        test::require_error([&] { plan::parse_plan(flipped, "p"); }, "section '" + s.name + "' is damaged");
        // Offset or size pointing outside the file (the table checksum is checked first).
        std::string moved = bytes;
        const uint64_t far = bytes.size() + 4096;
        std::memcpy(&moved[s.entry_at + 16], &far, 8);
        test::require_error([&] { plan::parse_plan(moved, "p"); }, "section table is damaged");
        test::require_error([&] { plan::parse_plan(moved, "p", false); }, "'" + s.name + "'");
    }
    test::require_error([&] { plan::parse_plan("", "p"); }, "not a stofc plan");
    test::require_error([&] { plan::parse_plan(bytes.substr(0, 20), "p"); }, "header is truncated");
    std::string magic = bytes;
    magic[0] = 'X';
    test::require_error([&] { plan::parse_plan(magic, "p"); }, "not a stofc plan");
    std::string newer = bytes;
    const uint32_t version = plan::kFormatVersion + 1;
    std::memcpy(&newer[8], &version, 4);
    test::require_error([&] { plan::parse_plan(newer, "p"); }, "recompile");
    test::require_error([&] { plan::parse_plan(bytes + "x", "p"); }, "truncated or extended");
}

TEST_CASE("a plan with valid checksums but inconsistent contents is rejected", "[cpu][plan]") {
    plan::Plan p = sample_plan();
    REQUIRE(!p.steps.empty());
    plan::Plan bad_tensor = p;
    for (plan::Step& s : bad_tensor.steps)
        if (s.kind == plan::StepKind::launch && !s.launch.args.empty()) {
            s.launch.args[0].tensor = static_cast<int32_t>(p.tensors.size()) + 3;
            break;
        }
    test::require_error([&] { plan::parse_plan(plan::serialize_plan(bad_tensor), "p"); }, "step");
    plan::Plan bad_kernel = p;
    for (plan::Step& s : bad_kernel.steps)
        if (s.kind == plan::StepKind::launch) {
            s.launch.kernel = 99;
            break;
        }
    test::require_error([&] { plan::parse_plan(plan::serialize_plan(bad_kernel), "p"); }, "kernel");
    plan::Plan bad_mask = p;
    bad_mask.masks[0].mask.col_idx[0] = 77;
    test::require_error([&] { plan::parse_plan(plan::serialize_plan(bad_mask), "p"); }, "mask");
    plan::Plan bad_arena = p;
    bad_arena.arena_bytes = 16;
    test::require_error([&] { plan::parse_plan(plan::serialize_plan(bad_arena), "p"); }, "arena");
}

TEST_CASE("no truncation or byte flip makes the reader crash", "[cpu][plan]") {
    const std::string bytes = plan::serialize_plan(sample_plan());
    // Every truncation length: only stof::Error, checksums on or off.
    for (size_t n = 0; n < bytes.size(); n += n < 4096 ? 1 : 97) {
        for (bool crc : {true, false}) {
            try {
                plan::parse_plan(bytes.substr(0, n), "p", crc);
                FAIL("a truncated plan of " << n << " bytes was accepted");
            } catch (const Error&) {
            }
        }
    }
    // Random flips behind disabled checksums reach every decoder.
    std::mt19937_64 rng = test::make_rng();
    int accepted = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::string d = bytes;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) d[rng() % d.size()] ^= static_cast<char>(1u << (rng() % 8));
        try {
            plan::parse_plan(d, "p", false);
            ++accepted;  // a flip in weights or a string can leave a valid plan
        } catch (const Error&) {
        }
    }
    CHECK(accepted < 3000);
}
