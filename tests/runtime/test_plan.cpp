// The plan file: a hand-built plan and a compiled one survive serialize_plan /
// parse_plan field by field; damaged files (every byte flipped, every truncation,
// payloads cut short, bad section tables, another format version, inconsistent
// contents behind valid checksums) are rejected with a stof::Error that names the
// file and the damage, never a crash.
#include "catch.hpp"
#include "compile.hpp"
#include "compile_options.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "runtime/sample_plan.hpp"
#include "stof/plan_format.hpp"
#include "stof/regular_file.hpp"
#include "stof/version.hpp"
#include "test_util.hpp"

#include <bit>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>

using namespace stof;

namespace {

// --- the file's header and section table, read and patched in place ----------------

uint32_t get_u32(const std::string& b, size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, b.data() + at, 4);
    return v;
}
uint64_t get_u64(const std::string& b, size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, b.data() + at, 8);
    return v;
}
void put_u32(std::string& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void put_u64(std::string& b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

struct SectionEntry {
    std::string name;
    size_t entry_at = 0;  // byte of its table entry
    uint64_t offset = 0, size = 0;
};

uint64_t table_end(const std::string& bytes) { return plan::kHeaderBytes + get_u32(bytes, 44) * plan::kSectionEntryBytes; }

// The table entries in table order (the file's section count must be sane).
std::vector<SectionEntry> section_table(const std::string& bytes) {
    std::vector<SectionEntry> t;
    for (uint32_t i = 0; i < get_u32(bytes, 44); ++i) {
        const size_t at = plan::kHeaderBytes + i * plan::kSectionEntryBytes;
        t.push_back({std::string(bytes.c_str() + at, strnlen(bytes.c_str() + at, plan::kSectionNameBytes)), at,
                     get_u64(bytes, at + 16), get_u64(bytes, at + 24)});
    }
    return t;
}

SectionEntry entry(const std::string& bytes, const std::string& name) {
    for (const SectionEntry& s : section_table(bytes))
        if (s.name == name) return s;
    FAIL("no section '" << name << "'");
    return {};
}

std::string payload(const std::string& bytes, const std::string& name) {
    const SectionEntry s = entry(bytes, name);
    return bytes.substr(s.offset, s.size);
}

// Recomputes the checksums of every section that lies inside the file and of the
// table, so damage reaches the decoders and plan::validate as it would in a file
// written that way. Leaves files whose table does not fit alone.
void reseal(std::string& bytes) {
    if (bytes.size() < plan::kHeaderBytes || get_u32(bytes, 44) > plan::kMaxSections || table_end(bytes) > bytes.size()) return;
    for (const SectionEntry& s : section_table(bytes))
        if (s.offset <= bytes.size() && s.size <= bytes.size() - s.offset)
            put_u32(bytes, s.entry_at + 32, plan::checksum(bytes.data() + s.offset, s.size));
    uint32_t crc = plan::checksum(bytes.data(), plan::kCrcCoveredHeaderBytes);
    crc = plan::checksum(bytes.data() + plan::kHeaderBytes, table_end(bytes) - plan::kHeaderBytes, crc);
    put_u32(bytes, 56, crc);
}

// The file with section `name`'s payload replaced, laid out and sealed as the writer does.
std::string with_payload(const std::string& bytes, const std::string& name, const std::string& replacement) {
    std::string out = bytes.substr(0, table_end(bytes));
    for (const SectionEntry& s : section_table(bytes)) {
        const std::string p = s.name == name ? replacement : bytes.substr(s.offset, s.size);
        out.resize((out.size() + plan::kSectionAlignment - 1) / plan::kSectionAlignment * plan::kSectionAlignment, '\0');
        put_u64(out, s.entry_at + 16, out.size());
        put_u64(out, s.entry_at + 24, p.size());
        out += p;
    }
    put_u64(out, 48, out.size());
    reseal(out);
    return out;
}

// The message of the stof::Error that f throws, or "" when it returns.
template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// --- field-by-field comparison ------------------------------------------------------

template <class E> int as_int(E e) { return static_cast<int>(e); }
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

void check_same_operand(const plan::AttentionOperand& a, const plan::AttentionOperand& b) {
    CHECK(a.tensor == b.tensor);
    CHECK(a.byte_offset == b.byte_offset);
    CHECK(a.stride_b == b.stride_b);
    CHECK(a.stride_h == b.stride_h);
    CHECK(a.stride_s == b.stride_s);
}

void check_same_step(const plan::Step& a, const plan::Step& b) {
    REQUIRE(as_int(a.kind) == as_int(b.kind));
    CHECK(a.label == b.label);
    CHECK(a.nodes == b.nodes);
    switch (a.kind) {
        case plan::StepKind::launch: {
            const plan::LaunchStep &x = a.launch, &y = b.launch;
            CHECK(x.kernel == y.kernel);
            for (int d = 0; d < 3; ++d) {
                CHECK(x.grid[d] == y.grid[d]);
                CHECK(x.block[d] == y.block[d]);
            }
            CHECK(x.shared_bytes == y.shared_bytes);
            REQUIRE(x.args.size() == y.args.size());
            for (size_t i = 0; i < x.args.size(); ++i) {
                INFO("argument " << i);
                CHECK(as_int(x.args[i].kind) == as_int(y.args[i].kind));
                CHECK(x.args[i].tensor == y.args[i].tensor);
                CHECK(x.args[i].byte_offset == y.args[i].byte_offset);
                CHECK(x.args[i].i == y.args[i].i);
                CHECK(bits(x.args[i].f) == bits(y.args[i].f));
            }
            break;
        }
        case plan::StepKind::gemm: {
            const plan::GemmStep &x = a.gemm, &y = b.gemm;
            CHECK(x.a == y.a);
            CHECK(x.b == y.b);
            CHECK(x.c == y.c);
            CHECK(x.d == y.d);
            CHECK(x.bias == y.bias);
            CHECK(x.a_offset == y.a_offset);
            CHECK(x.b_offset == y.b_offset);
            CHECK(x.c_offset == y.c_offset);
            CHECK(x.d_offset == y.d_offset);
            CHECK(x.trans_a == y.trans_a);
            CHECK(x.trans_b == y.trans_b);
            CHECK(x.m == y.m);
            CHECK(x.n == y.n);
            CHECK(x.k == y.k);
            CHECK(x.batch == y.batch);
            CHECK(x.lda == y.lda);
            CHECK(x.ldb == y.ldb);
            CHECK(x.ldc == y.ldc);
            CHECK(x.ldd == y.ldd);
            CHECK(x.batch_stride_a == y.batch_stride_a);
            CHECK(x.batch_stride_b == y.batch_stride_b);
            CHECK(x.batch_stride_c == y.batch_stride_c);
            CHECK(x.batch_stride_d == y.batch_stride_d);
            CHECK(bits(x.alpha) == bits(y.alpha));
            CHECK(bits(x.beta) == bits(y.beta));
            CHECK(as_int(x.epilogue) == as_int(y.epilogue));
            break;
        }
        case plan::StepKind::attention: {
            const plan::AttentionStep &x = a.attention, &y = b.attention;
            check_same_operand(x.q, y.q);
            check_same_operand(x.k, y.k);
            check_same_operand(x.v, y.v);
            check_same_operand(x.o, y.o);
            CHECK(x.batch == y.batch);
            CHECK(x.heads == y.heads);
            CHECK(x.kv_heads == y.kv_heads);
            CHECK(x.seq_q == y.seq_q);
            CHECK(x.seq_k == y.seq_k);
            CHECK(x.head_dim == y.head_dim);
            CHECK(bits(x.scale) == bits(y.scale));
            CHECK(x.mask == y.mask);
            CHECK(x.key_valid == y.key_valid);
            CHECK(x.bias == y.bias);
            CHECK(x.bias_stride_h == y.bias_stride_h);
            CHECK(x.bias_stride_s == y.bias_stride_s);
            CHECK(x.kernel == y.kernel);
            break;
        }
        case plan::StepKind::key_valid:
            CHECK(a.key_valid.mask == b.key_valid.mask);
            CHECK(a.key_valid.words == b.key_valid.words);
            CHECK(a.key_valid.batch == b.key_valid.batch);
            CHECK(a.key_valid.seq == b.key_valid.seq);
            break;
        case plan::StepKind::copy:
            CHECK(a.copy.src == b.copy.src);
            CHECK(a.copy.dst == b.copy.dst);
            CHECK(a.copy.src_offset == b.copy.src_offset);
            CHECK(a.copy.dst_offset == b.copy.dst_offset);
            CHECK(a.copy.bytes == b.copy.bytes);
            break;
        case plan::StepKind::mask_convert:
            CHECK(a.mask_convert.keep == b.mask_convert.keep);
            CHECK(a.mask_convert.mask == b.mask_convert.mask);
            break;
    }
}

void check_same(const plan::Plan& a, const plan::Plan& b) {
    CHECK(a.meta.model == b.meta.model);
    CHECK(a.meta.stofc_version == b.meta.stofc_version);
    CHECK(a.meta.target_arch == b.meta.target_arch);
    CHECK(a.meta.nvrtc_version == b.meta.nvrtc_version);
    CHECK(a.meta.precision == b.meta.precision);
    CHECK(a.meta.created == b.meta.created);
    CHECK(a.meta.notes == b.meta.notes);
    CHECK(a.arena_bytes == b.arena_bytes);
    CHECK(a.inputs == b.inputs);
    CHECK(a.outputs == b.outputs);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) {
        INFO("tensor " << i);
        const plan::TensorDesc &x = a.tensors[i], &y = b.tensors[i];
        CHECK(x.name == y.name);
        CHECK(as_int(x.dtype) == as_int(y.dtype));
        CHECK(x.shape == y.shape);
        CHECK(as_int(x.buffer) == as_int(y.buffer));
        CHECK(x.offset == y.offset);
        CHECK(as_int(x.role) == as_int(y.role));
        CHECK(x.int_lo == y.int_lo);
        CHECK(x.int_hi == y.int_hi);
    }
    REQUIRE(a.kernels.size() == b.kernels.size());
    for (size_t i = 0; i < a.kernels.size(); ++i) {
        INFO("kernel " << i);
        const plan::KernelDesc &x = a.kernels[i], &y = b.kernels[i];
        CHECK(x.key == y.key);
        CHECK(x.entry == y.entry);
        CHECK(x.arch == y.arch);
        CHECK(x.cubin == y.cubin);
        CHECK(x.ptx == y.ptx);
        CHECK(x.params == y.params);
    }
    REQUIRE(a.masks.size() == b.masks.size());
    for (size_t i = 0; i < a.masks.size(); ++i) {
        INFO("mask " << i);
        const SparseMask &x = a.masks[i].mask, &y = b.masks[i].mask;
        CHECK(a.masks[i].spec == b.masks[i].spec);
        CHECK(a.masks[i].kernel_reason == b.masks[i].kernel_reason);
        CHECK(a.masks[i].runtime == b.masks[i].runtime);
        CHECK(x.rows == y.rows);
        CHECK(x.cols == y.cols);
        CHECK(x.tile_m == y.tile_m);
        CHECK(x.tile_n == y.tile_n);
        CHECK(x.mask_batch == y.mask_batch);
        CHECK(x.mask_heads == y.mask_heads);
        CHECK(x.row_ptr == y.row_ptr);
        CHECK(x.col_idx == y.col_idx);
        CHECK(x.bitmap_idx == y.bitmap_idx);
        CHECK(x.bitmaps == y.bitmaps);
    }
    REQUIRE(a.steps.size() == b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
        INFO("step " << i);
        check_same_step(a.steps[i], b.steps[i]);
    }
    CHECK(a.weights == b.weights);
    REQUIRE(a.segments.size() == b.segments.size());
    for (size_t i = 0; i < a.segments.size(); ++i) {
        const plan::SegmentInfo &x = a.segments[i], &y = b.segments[i];
        CHECK(x.kind == y.kind);
        CHECK(x.templ == y.templ);
        CHECK(x.config == y.config);
        CHECK(x.source == y.source);
        CHECK(x.time_us == y.time_us);
        CHECK(x.moves == y.moves);
        CHECK(x.nodes == y.nodes);
        CHECK(x.sweep_space == y.sweep_space);
        CHECK(x.stage2_us == y.stage2_us);
        CHECK(x.stage2_config == y.stage2_config);
        CHECK(x.sweep_us == y.sweep_us);
        CHECK(x.sweep_config == y.sweep_config);
    }
}

// A plan from the real compiler: MatMul + bias, LayerNorm, Softmax over a
// [2, 8, 32] input, fp16 storage (NVRTC-compiled kernels with cubin and PTX).
plan::Plan compiled_plan() {
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
    return compile_model(g, test::compile_options(Precision::fp16, "sample.onnx"));
}

// What the reader says when byte i of `bytes` is flipped (checksums checked).
std::string expected_flip_error(const std::string& bytes, uint64_t i) {
    if (i < 8) return "not a stofc plan";
    if (i < 12) return "recompile the model";
    if (i >= 60 && i < 64) return "the plan header is damaged (reserved bytes";
    if (i < table_end(bytes)) return "the section table is damaged";
    for (const SectionEntry& s : section_table(bytes)) {
        if (i < s.offset) return "the padding before section '" + s.name + "' is damaged";
        if (i < s.offset + s.size) return "section '" + s.name + "' is damaged (checksum mismatch)";
    }
    return "unexpected bytes after the end";
}

// What the reader says when `bytes` is cut to its first n bytes.
std::string expected_truncation_error(const std::string& bytes, uint64_t n) {
    if (n < 8) return "not a stofc plan";
    if (n < plan::kHeaderBytes) return "the plan header is truncated";
    if (n < table_end(bytes)) return "the section table is truncated";
    for (const SectionEntry& s : section_table(bytes))
        if (s.offset + s.size > n) return "section '" + s.name + "' is truncated";
    return "truncated or extended";
}

}  // namespace

TEST_CASE("a hand-built plan survives serialize and parse field by field", "[cpu][plan]") {
    const plan::Plan p = test::sample_plan(test::make_rng()());
    plan::validate(p);
    const std::string bytes = plan::serialize_plan(p);
    const plan::Plan q = plan::parse_plan(bytes, "sample.plan");
    check_same(p, q);
    CHECK(plan::serialize_plan(q) == bytes);

    const std::vector<SectionEntry> table = section_table(bytes);
    REQUIRE(table.size() == plan::kSectionCount);
    for (size_t i = 0; i < table.size(); ++i) {
        CHECK(table[i].name == plan::kSectionNames[i]);
        CHECK(table[i].size > 0);
        CHECK(table[i].offset % plan::kSectionAlignment == 0);
    }
    CHECK(table.back().offset + table.back().size == bytes.size());
    CHECK(std::string(bytes.c_str() + plan::kVersionFieldOffset) == kVersion);

    // Through a file.
    const auto dir = std::filesystem::path(test::binary_dir()) / "test_tmp" / "plan";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "sample.plan").string();
    plan::write_plan(p, path);
    CHECK(read_regular_file(path, "plan file") == bytes);  // write_plan streams exactly serialize_plan's bytes
    check_same(p, plan::read_plan(path));
    test::require_error([&] { plan::read_plan((dir / "absent.plan").string()); }, "does not exist");
}

TEST_CASE("is_padding_mask: the input the key_valid step reads, and no other tensor", "[cpu][plan]") {
    const plan::Plan p = test::sample_plan(3);
    for (int32_t t = 0; t < static_cast<int32_t>(p.tensors.size()); ++t) {
        INFO(p.tensors[static_cast<size_t>(t)].name);
        CHECK(plan::is_padding_mask(p, t) == (p.tensors[static_cast<size_t>(t)].name == "attention_mask"));
    }
    CHECK_FALSE(plan::is_padding_mask(p, -1));
    CHECK_FALSE(plan::is_padding_mask(test::minimal_plan(), 0));
}

TEST_CASE("the smallest plan survives serialize and parse, empty sections included", "[cpu][plan]") {
    const plan::Plan p = test::minimal_plan();
    const std::string bytes = plan::serialize_plan(p);
    check_same(p, plan::parse_plan(bytes, "minimal.plan"));
    CHECK(entry(bytes, "weights").size == 0);
    CHECK(entry(bytes, "weights").offset == bytes.size());
    CHECK(payload(bytes, "kernels") == std::string(4, '\0'));
    CHECK(payload(bytes, "masks") == std::string(4, '\0'));
}

TEST_CASE("a compiled plan survives serialize and parse field by field", "[cpu][plan]") {
    const plan::Plan p = compiled_plan();
    REQUIRE(!p.kernels.empty());
    CHECK(!p.kernels[0].cubin.empty());
    CHECK(!p.kernels[0].ptx.empty());
    const std::string bytes = plan::serialize_plan(p);
    const plan::Plan q = plan::parse_plan(bytes, "compiled.plan");
    check_same(p, q);
    CHECK(plan::serialize_plan(q) == bytes);
}

TEST_CASE("each section names itself when it is truncated, flipped or cut short", "[cpu][plan]") {
    const std::string bytes = plan::serialize_plan(test::sample_plan(1));
    for (const SectionEntry& s : section_table(bytes)) {
        INFO("section " << s.name);
        const std::string truncated = "sample.plan: section '" + s.name + "' is truncated";
        for (const bool crc : {true, false})
            test::require_error([&] { plan::parse_plan(bytes.substr(0, s.offset + s.size / 2), "sample.plan", crc); },
                                truncated);

        std::string flipped = bytes;
        flipped[s.offset + s.size / 3] ^= 0x20;
        test::require_error([&] { plan::parse_plan(flipped, "sample.plan"); },
                            "sample.plan: section '" + s.name + "' is damaged (checksum mismatch)");

        // Payload cut in half, checksums valid: the decoder runs out of bytes, or (weights)
        // the weight tensors no longer fit.
        const std::string half = with_payload(bytes, s.name, payload(bytes, s.name).substr(0, s.size / 2));
        test::require_error([&] { plan::parse_plan(half, "sample.plan"); },
                            s.name == "weights" ? "lie outside the weights buffer (3734 bytes)"
                                                : "sample.plan: section '" + s.name + "' is damaged (");
    }
    // A structured payload is consumed exactly; the kernel blob area and the weights may hold
    // unreferenced bytes.
    for (const char* name : {"meta", "tensors", "masks", "schedule"}) {
        const std::string longer = with_payload(bytes, name, payload(bytes, name) + '\0');
        test::require_error([&] { plan::parse_plan(longer, "sample.plan"); },
                            std::string("section '") + name + "' is damaged (1 unexpected bytes after the last entry)");
    }
    for (const char* name : {"kernels", "weights"})
        CHECK_NOTHROW(plan::parse_plan(with_payload(bytes, name, payload(bytes, name) + '\0'), "sample.plan"));
}

TEST_CASE("every flipped byte and every truncation is rejected, naming where", "[cpu][plan]") {
    for (const plan::Plan& p : {test::sample_plan(2), test::minimal_plan()}) {
        const std::string bytes = plan::serialize_plan(p);
        INFO("a plan of " << bytes.size() << " bytes");
        int mismatches = 0;
        for (uint64_t i = 0; i < bytes.size(); ++i) {
            std::string d = bytes;
            d[i] ^= static_cast<char>(0xff);
            const std::string msg = error_of([&] { plan::parse_plan(d, "p"); });
            const std::string want = expected_flip_error(bytes, i);
            if (msg.find(want) == std::string::npos && ++mismatches <= 5)
                FAIL_CHECK("byte " << i << " flipped: expected '" << want << "' in '" << msg << "'");
        }
        for (uint64_t n = 0; n <= bytes.size() + 1; ++n) {
            const std::string d = n <= bytes.size() ? bytes.substr(0, n) : bytes + '\0';
            const std::string want = expected_truncation_error(bytes, n);
            for (const bool crc : {true, false}) {
                if (n == bytes.size()) continue;
                const std::string msg = error_of([&] { plan::parse_plan(d, "p", crc); });
                if (msg.find(want) == std::string::npos && ++mismatches <= 5)
                    FAIL_CHECK("cut to " << n << " bytes: expected '" << want << "' in '" << msg << "'");
            }
        }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("random damage behind valid checksums is rejected or reads back consistently", "[cpu][plan]") {
    std::mt19937_64 rng = test::make_rng();
    const std::string bytes = plan::serialize_plan(test::sample_plan(rng()));
    int accepted = 0, trials = 0;
    for (const bool sealed : {true, false}) {
        for (int trial = 0; trial < 2000; ++trial, ++trials) {
            std::string d = bytes;
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int f = 0; f < flips; ++f) d[rng() % d.size()] ^= static_cast<char>(1u << (rng() % 8));
            if (sealed) reseal(d);
            plan::Plan q;
            try {
                q = plan::parse_plan(d, "p", sealed);
            } catch (const Error&) {
                continue;
            }
            // Accepted (a flip in the weights or a name can leave a valid plan): what the
            // reader accepted writes back to bytes it reads to the same plan.
            ++accepted;
            const std::string again = plan::serialize_plan(q);
            CHECK(plan::serialize_plan(plan::parse_plan(again, "again")) == again);
        }
    }
    CHECK(accepted < trials);
}

TEST_CASE("a damaged header or section table is rejected", "[cpu][plan]") {
    const std::string bytes = plan::serialize_plan(test::sample_plan(3));
    const SectionEntry masks = entry(bytes, "masks");
    const auto patched = [&](const std::function<void(std::string&)>& edit) {
        std::string d = bytes;
        edit(d);
        reseal(d);
        return d;
    };
    const auto rejects = [](const std::string& d, const std::string& needle) {
        test::require_error([&] { plan::parse_plan(d, "t.plan"); }, "t.plan: " + needle);
    };

    rejects("", "not a stofc plan file (it does not start with STOFPLAN)");
    rejects("STOFPL", "not a stofc plan file");
    rejects("STOFPLAX" + bytes.substr(8), "not a stofc plan file");
    rejects(bytes.substr(0, 20), "the plan header is truncated (20 bytes)");
    rejects(bytes.substr(0, 50), "the plan header is truncated (50 bytes)");
    rejects(bytes.substr(0, 100), "the section table is truncated (7 sections need 344 bytes, the file has 100)");
    rejects(bytes + '\0', "the file is " + std::to_string(bytes.size() + 1) + " bytes but its header says " +
                              std::to_string(bytes.size()) + " (truncated or extended)");
    rejects(patched([](std::string& d) { put_u32(d, 44, 0); }), "the section table is damaged (section count 0)");
    rejects(patched([](std::string& d) { put_u32(d, 44, 65); }), "the section table is damaged (section count 65)");
    rejects(patched([](std::string& d) {
                put_u32(d, 44, 6);
                std::memset(&d[plan::kHeaderBytes + 6 * plan::kSectionEntryBytes], 0, plan::kSectionEntryBytes);
            }),
            "section 'weights' is missing");
    rejects(patched([](std::string& d) { d[60] = 1; }), "the plan header is damaged (reserved bytes 60..63 are not zero)");

    // Entries: offsets and sizes outside the file, misaligned, overlapping, out of order.
    std::string far = bytes;
    put_u64(far, masks.entry_at + 16, (bytes.size() / 256 + 16) * 256);
    rejects(far, "the section table is damaged (checksum mismatch)");
    test::require_error([&] { plan::parse_plan(far, "t.plan", false); }, "t.plan: section 'masks' is truncated (");
    reseal(far);
    rejects(far, "section 'masks' is truncated (" + std::to_string(masks.size) + " bytes at byte " +
                     std::to_string(get_u64(far, masks.entry_at + 16)) + ", the file has " + std::to_string(bytes.size()) + ")");
    rejects(patched([&](std::string& d) { put_u64(d, masks.entry_at + 24, UINT64_MAX); }), "section 'masks' is truncated");
    rejects(patched([&](std::string& d) { put_u64(d, masks.entry_at + 16, masks.offset + 8); }),
            "section 'masks' is damaged (offset " + std::to_string(masks.offset + 8) + " is not a 256-byte aligned position");
    rejects(patched([&](std::string& d) { put_u64(d, masks.entry_at + 16, 256); }),
            "section 'masks' is damaged (offset 256 is not a 256-byte aligned position after the section table)");
    const SectionEntry meta = entry(bytes, "meta"), tensors = entry(bytes, "tensors");
    rejects(patched([&](std::string& d) { put_u64(d, tensors.entry_at + 16, meta.offset); }),
            "section 'tensors' is damaged (it starts at byte " + std::to_string(meta.offset) +
                ", before the end of section 'meta'");
    rejects(patched([&](std::string& d) {
                std::string first = d.substr(meta.entry_at, plan::kSectionEntryBytes);
                d.replace(meta.entry_at, plan::kSectionEntryBytes, d.substr(tensors.entry_at, plan::kSectionEntryBytes));
                d.replace(tensors.entry_at, plan::kSectionEntryBytes, first);
            }),
            "section 'meta' is damaged (it starts at byte " + std::to_string(meta.offset) +
                ", before the end of section 'tensors'");
    REQUIRE(masks.offset + masks.size < entry(bytes, "schedule").offset);
    rejects(patched([&](std::string& d) { d[masks.offset + masks.size] = 'x'; }),
            "the padding before section 'schedule' is damaged (byte " + std::to_string(masks.offset + masks.size) +
                " is 120, not 0)");
    rejects(patched([&](std::string& d) {
                d += std::string(256, '\0');
                put_u64(d, 48, d.size());
            }),
            "256 unexpected bytes after the end of section 'weights'");

    // Names and reserved bytes.
    rejects(patched([&](std::string& d) { std::memcpy(&d[masks.entry_at], "meta\0", 5); }),
            "the section table is damaged (section 'meta' appears twice)");
    rejects(patched([&](std::string& d) { std::memcpy(&d[masks.entry_at], "extras\0", 7); }),
            "the section table is damaged (unknown section 'extras')");
    rejects(patched([&](std::string& d) { std::memset(&d[masks.entry_at], 'x', plan::kSectionNameBytes); }),
            "the section table is damaged (entry 3 has no name)");
    rejects(patched([&](std::string& d) { d[masks.entry_at + 36] = 1; }),
            "the section table is damaged (entry 3 has nonzero reserved bytes)");
}

TEST_CASE("a plan of another format version names its stofc and asks to recompile", "[cpu][plan]") {
    const std::string bytes = plan::serialize_plan(test::minimal_plan());
    std::string newer = bytes;
    put_u32(newer, 8, plan::kFormatVersion + 1);
    std::memset(&newer[plan::kVersionFieldOffset], 0, plan::kVersionFieldBytes);
    std::memcpy(&newer[plan::kVersionFieldOffset], "9.9.0-next", 10);
    const std::string want = fmt::format(
        "new.plan: plan format version {} (written by stofc 9.9.0-next); this stofc {} reads format version {}: "
        "recompile the model with this stofc",
        plan::kFormatVersion + 1, kVersion, plan::kFormatVersion);
    test::require_error([&] { plan::parse_plan(newer, "new.plan"); }, want);
    // Only bytes [0, 44) are read before the version is checked: a later layout may differ.
    test::require_error([&] { plan::parse_plan(newer.substr(0, 44) + "anything else", "new.plan"); }, want);

    std::string older = bytes;
    put_u32(older, 8, 0);
    std::memset(&older[plan::kVersionFieldOffset], 0, plan::kVersionFieldBytes);
    test::require_error([&] { plan::parse_plan(older, "old.plan"); },
                        "old.plan: plan format version 0 (written by stofc of unknown version)");
}

TEST_CASE("an encoding error behind valid checksums names its section and entry", "[cpu][plan]") {
    const plan::Plan p = test::sample_plan(4);
    const std::string bytes = plan::serialize_plan(p);
    const auto edited = [&](const char* name, const std::function<void(std::string&)>& edit) {
        std::string s = payload(bytes, name);
        edit(s);
        return with_payload(bytes, name, s);
    };
    const auto rejects = [](const std::string& d, const std::string& needle) {
        test::require_error([&] { plan::parse_plan(d, "e.plan"); }, "e.plan: " + needle);
    };
    rejects(edited("meta", [](std::string& s) { put_u32(s, 0, 0xfffffff0u); }),
            "section 'meta' is damaged (model at byte 0: a string of 4294967280 bytes runs past the end");
    rejects(edited("tensors", [](std::string& s) { put_u32(s, 8, UINT32_MAX); }),
            "section 'tensors' is damaged (tensor count 4294967295 needs more than the");
    // Tensor 0 ("x"): arena_bytes u64, count u32, name (u32 1, "x"), then its dtype.
    rejects(edited("tensors", [](std::string& s) { s[17] = static_cast<char>(200); }),
            "section 'tensors' is damaged (tensor 0: dtype has the unknown value 200)");
    // Kernel 0: count u32, key, entry, arch, params (u32 count + bytes), then cubin_offset.
    const plan::KernelDesc& k0 = p.kernels[0];
    const size_t cubin_at = 4 + 4 + k0.key.size() + 4 + k0.entry.size() + 4 + k0.arch.size() + 4 + k0.params.size();
    rejects(edited("kernels", [&](std::string& s) { put_u64(s, cubin_at, 1u << 20); }),
            "section 'kernels' is damaged (kernel 0 ('ew_f16_add_gelu_b4_sm90'): cubin at 1048576 size 300 lies outside");
    rejects(edited("masks", [](std::string& s) { put_u32(s, 0, 3); }), "section 'masks' is damaged (mask 2: spec at byte");
    rejects(edited("schedule", [](std::string& s) { s[4] = 9; }),
            "section 'schedule' is damaged (step 0: kind has the unknown value 9)");
    rejects(edited("schedule", [](std::string& s) { put_u32(s, 0, 1000); }),
            "section 'schedule' is damaged (step count 1000 needs more than the");
}

namespace {

// The sample plan's Q/K/V projection as a valid fused GEMM + rotary embedding: x [32, 32] by
// w_qkv read as [32, 96], the first 64 columns (one head) rotated, with b_qkv's first 64
// elements as one position's cos and sin.
plan::GemmStep& rotary_gemm(plan::GemmStep& g) {
    g.epilogue = plan::Epilogue::rotary;
    g.trans_b = false, g.batch = 1, g.alpha = 1, g.bias = -1;
    g.m = 32, g.k = 32, g.n = 96, g.lda = 32, g.ldb = 96, g.ldd = 96;
    g.batch_stride_a = 0, g.batch_stride_d = 0;
    g.rotary = {3, 3, 1, 64, 64};  // b_qkv
    return g;
}

}  // namespace

TEST_CASE("a fused GEMM + rotary embedding step validates and keeps its tables through the file", "[cpu][plan]") {
    plan::Plan p = test::sample_plan(5);
    rotary_gemm(p.steps[0].gemm).rotary.rows = 1;
    plan::validate(p);
    const plan::Plan back = plan::parse_plan(plan::serialize_plan(p), "rotary.plan");
    const plan::GemmStep& g = back.steps[0].gemm;
    CHECK(g.epilogue == plan::Epilogue::rotary);
    CHECK((g.rotary.cos == 3 && g.rotary.sin == 3 && g.rotary.rows == 1 && g.rotary.cols == 64 && g.rotary.head_dim == 64));
    CHECK(plan::step_kernel_name(back, back.steps[0]) == "gemm_rotary");
}

TEST_CASE("a plan with valid checksums but inconsistent contents fails validation", "[cpu][plan]") {
    const plan::Plan sample = test::sample_plan(5);
    struct Damage {
        const char* what;
        std::function<void(plan::Plan&)> edit;
        std::string message;
    };
    const std::vector<Damage> cases = {
        {"launch argument tensor", [](plan::Plan& p) { p.steps[3].launch.args[1].tensor = 42; },
         "schedule step 3 (fused): argument tensor index 42 is out of range (10 tensors)"},
        {"gemm operand", [](plan::Plan& p) { p.steps[0].gemm.a = -3; },
         "schedule step 0 (gemm): a tensor index -3 is out of range (10 tensors)"},
        {"launch kernel", [](plan::Plan& p) { p.steps[4].launch.kernel = 7; },
         "schedule step 4 (layernorm): kernel index 7 is out of range (2 kernels)"},
        {"argument count", [](plan::Plan& p) { p.steps[3].launch.args.pop_back(); },
         "schedule step 3 (fused): 5 arguments for kernel 'ew_f16_add_gelu_b4_sm90', which takes 6"},
        {"block size",
         [](plan::Plan& p) {
             p.steps[4].launch.block[0] = 1u << 31, p.steps[4].launch.block[1] = 1u << 31, p.steps[4].launch.block[2] = 4;
         },
         "schedule step 4 (layernorm): block 2147483648x2147483648x4 has more than 1024 threads"},
        {"attention mask index", [](plan::Plan& p) { p.steps[2].attention.mask = 2; },
         "schedule step 2 (attention): mask index 2 is out of range (2 masks)"},
        {"attention mask size", [](plan::Plan& p) { p.steps[2].attention.mask = 1; },
         "schedule step 2 (attention): mask 1 is 24x20, the scores 16x16"},
        {"fused GEMM batched and transposed", [](plan::Plan& p) { p.steps[0].gemm.epilogue = plan::Epilogue::bias_gelu_erf; },
         "schedule step 0 (gemm): the fused GEMM runs one GEMM (batch 1), untransposed, with alpha 1 and no c"},
        {"fused GEMM config",
         [](plan::Plan& p) {
             p.steps[0].gemm.epilogue = plan::Epilogue::bias_gelu_erf;
             p.steps[0].gemm.algo = plan::kGemmGeluConfigs;
         },
         "schedule step 0 (gemm): configuration 2 is not one of the fused GEMM's 2"},
        {"fused GEMM strides",
         [](plan::Plan& p) {
             plan::GemmStep& g = p.steps[0].gemm;
             g.epilogue = plan::Epilogue::bias_gelu_erf;
             g.trans_b = false, g.batch = 1, g.alpha = 1, g.m = 32, g.k = 32, g.n = 32, g.ldb = 96, g.ldd = 96;
         },
         "schedule step 0 (gemm): the fused GEMM needs contiguous rows (lda = k, ldb = n, ldd = n), not 32, 96, 96"},
        {"fused SwiGLU GEMM odd columns",
         [](plan::Plan& p) {
             plan::GemmStep& g = p.steps[0].gemm;
             g.epilogue = plan::Epilogue::swiglu;
             g.trans_b = false, g.batch = 1, g.alpha = 1, g.m = 32, g.k = 32, g.n = 33;
         },
         "schedule step 0 (gemm): swiglu pairs the product's columns, but n = 33 is odd"},
        {"fused SwiGLU GEMM strides",
         [](plan::Plan& p) {
             plan::GemmStep& g = p.steps[0].gemm;
             g.epilogue = plan::Epilogue::swiglu;
             g.trans_b = false, g.batch = 1, g.alpha = 1, g.m = 32, g.k = 32, g.n = 32, g.ldb = 32, g.ldd = 32;
         },
         "schedule step 0 (gemm): the fused GEMM needs contiguous rows (lda = k, ldb = n, ldd = n/2), not 32, 32, 32"},
        {"rotary tables without the rotary epilogue", [](plan::Plan& p) { p.steps[0].gemm.rotary.cos = 3; },
         "schedule step 0 (gemm): rotary operands without a rotary epilogue"},
        {"rotary head dim", [](plan::Plan& p) { rotary_gemm(p.steps[0].gemm).rotary.head_dim = 32; },
         "schedule step 0 (gemm): rotary: head_dim 32 is not 64 or 128"},
        {"rotary columns", [](plan::Plan& p) { rotary_gemm(p.steps[0].gemm).rotary.cols = 128; },
         "schedule step 0 (gemm): rotary: 128 rotated columns are not whole heads of 64 within n = 96"},
        {"rotary table size", [](plan::Plan& p) { rotary_gemm(p.steps[0].gemm).rotary.rows = 2; },
         "schedule step 0 (gemm): rotary cos reaches"},
        {"rotary table type", [](plan::Plan& p) { rotary_gemm(p.steps[0].gemm).rotary.sin = 1; },
         "schedule step 0 (gemm): rotary sin is i64, d f16"},
        {"gemm into a weight", [](plan::Plan& p) { p.steps[0].gemm.d = 2; },
         "schedule step 0 (gemm): d 'w_qkv' is a weight (read-only)"},
        {"overlapping copy", [](plan::Plan& p) { p.steps[5].copy.dst = p.steps[5].copy.src; },
         "schedule step 5 (copy): source and destination overlap"},
        // 2^31 - 1 keys: the word count must not overflow 32 bits.
        {"key_valid length",
         [](plan::Plan& p) {
             p.tensors[1].dtype = DType::boolean;
             p.tensors[1].shape = {1, INT32_MAX};
             p.arena_bytes = (2048 + uint64_t{INT32_MAX} + 255) / 256 * 256;
             p.steps[1].key_valid.batch = 1;
             p.steps[1].key_valid.seq = INT32_MAX;
         },
         "schedule step 1 (key_valid): words reaches byte 268435456 of 'key_valid', which has 16 bytes"},
        {"mask tile column", [](plan::Plan& p) { p.masks[0].mask.col_idx[0] = 77; },
         "masks: mask 0 ('causal|global:1'): sparse mask: tile column 77 out of range"},
        {"run-time mask with arrays", [](plan::Plan& p) { p.masks[0].runtime = true; },
         "masks: mask 0 ('causal|global:1'): a run-time mask carries arrays"},
        {"run-time mask read before it is filled",
         [](plan::Plan& p) {
             p.masks[0].runtime = true;
             p.masks[0].mask.row_ptr.clear(), p.masks[0].mask.col_idx.clear();
             p.masks[0].mask.bitmap_idx.clear(), p.masks[0].mask.bitmaps.clear();
         },
         "schedule step 2 (attention): run-time mask 0 is read before a mask_convert step fills it"},
        {"mask_convert into a static mask",
         [](plan::Plan& p) {
             p.steps[1].kind = plan::StepKind::mask_convert;
             p.steps[1].mask_convert = {1, 0};
         },
         "schedule step 1 (key_valid): mask 0 is not a run-time mask"},
        {"arena size", [](plan::Plan& p) { p.arena_bytes = 2048; },
         "tensors: tensor 1 ('attention_mask'): bytes 2048..2304 lie outside the arena buffer (2048 bytes)"},
        {"output index", [](plan::Plan& p) { p.outputs[1] = 12; }, "tensors: output index 12 is out of range (10 tensors)"},
        {"kernel code", [](plan::Plan& p) { p.kernels[1].ptx.clear(); },
         "kernels: kernel 1 ('rownorm_f16_layernorm_w4_sm90'): neither a cubin nor PTX"},
        {"weights size", [](plan::Plan& p) { p.weights.resize(100); },
         "tensors: tensor 2 ('w_qkv'): bytes 0..6144 lie outside the weights buffer (100 bytes)"},
    };
    for (const Damage& c : cases) {
        INFO(c.what);
        plan::Plan p = sample;
        c.edit(p);
        test::require_error([&] { plan::validate(p); }, c.message);
        // serialize_plan writes what it is given; the reader validates.
        const std::string bytes = plan::serialize_plan(p);
        test::require_error([&] { plan::parse_plan(bytes, "v.plan"); }, "v.plan: " + c.message);
        test::require_error([&] { plan::write_plan(p, test::binary_dir() + "/test_tmp/never_written.plan"); }, c.message);
    }
}
