// Shape ranges (stofc compile --shape NAME=MIN..MAX): parsing, buckets, binding to a
// model's inputs, the padding check, plans with several buckets through the file
// format, and the padding semantics the runtime relies on, checked on the reference
// interpreter with the zoo's inputs.
#include "catch.hpp"
#include "compile.hpp"
#include "compile_options.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "pipeline.hpp"
#include "plan/plan_reader.hpp"
#include "plan/plan_writer.hpp"
#include "runtime/sample_plan.hpp"
#include "shape_ranges.hpp"
#include "stof/compare.hpp"
#include "stof/npy.hpp"
#include "stof/plan_format.hpp"
#include "stof/shape_ranges.hpp"
#include "test_util.hpp"
#include "tool_run.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>

using namespace stof;

namespace {

std::string zoo(const std::string& name) { return test::source_dir() + "/models/" + name + "/model.onnx"; }

CompileOptions offline_options() { return test::compile_options(Precision::fp16, "model.onnx"); }

// x [batch, seq, 8] through `op` (a reduction or normalisation over axis 1, ...) to y.
std::string seq_model(const std::string& op) {
    test::OnnxBuilder b(18);
    b.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), std::string("seq"), int64_t{8}});
    if (op == "ReduceMean") {
        b.initializer("axes", test::ints({1}));
        b.node("ReduceMean", {"x", "axes"}, {"y"});
    } else if (op == "Softmax") {
        test::set_attr(b.node("Softmax", {"x"}, {"y"}), "axis", int64_t{1});
    } else if (op == "Flatten") {
        test::set_attr(b.node("Flatten", {"x"}, {"y"}), "axis", int64_t{1});
    } else {
        b.node("Relu", {"x"}, {"y"});
    }
    b.output("y");
    return b.bytes();
}

}  // namespace

TEST_CASE("shape arguments: sizes, ranges and bad specs", "[cpu][shapes]") {
    const ShapeArgs a = parse_shape_args({"batch=1..8", "seq=128", "input_ids=1..8x128..4096", "y=4..4"});
    REQUIRE(a.ranged.size() == 2);
    CHECK(a.ranged[0].name == "batch");
    CHECK(a.ranged[0].dims == std::vector<std::pair<int64_t, int64_t>>{{1, 8}});
    CHECK(a.ranged[1].dims == std::vector<std::pair<int64_t, int64_t>>{{1, 8}, {128, 4096}});
    CHECK(a.fixed.at("seq") == Shape{128});
    CHECK(a.fixed.at("y") == Shape{4});  // MIN == MAX is a size
    CHECK(parse_shape_args({"input_ids=2,64"}).fixed.at("input_ids") == Shape{2, 64});

    test::require_error([] { parse_shape_args({"seq=0..8"}); }, "--shape seq=0..8: sizes must be positive");
    test::require_error([] { parse_shape_args({"seq=8..4"}); }, "--shape seq=8..4: the range 8..4 has MIN > MAX");
    test::require_error([] { parse_shape_args({"seq=8.."}); }, "--shape seq=8..: '' is not a positive size");
    test::require_error([] { parse_shape_args({"seq=..8"}); }, "--shape seq=..8: '' is not a positive size");
    test::require_error([] { parse_shape_args({"seq=1...8"}); }, "'.8' is not a positive size");
    test::require_error([] { parse_shape_args({"seq=a..b"}); }, "'a' is not a positive size");
    test::require_error([] { parse_shape_args({"seq=2x"}); }, "'' is not a positive size");
    test::require_error([] { parse_shape_args({"seq=1..8", "seq=4"}); }, "--shape gives 'seq' twice");
    test::require_error([] { parse_shape_args({"seq"}); }, "--shape");
}

TEST_CASE("bucket sizes are the powers of two in the range and its maximum", "[cpu][shapes]") {
    CHECK(plan::bucket_sizes(128, 4096) == std::vector<int64_t>{128, 256, 512, 1024, 2048, 4096});
    CHECK(plan::bucket_sizes(100, 1000) == std::vector<int64_t>{128, 256, 512, 1000});
    CHECK(plan::bucket_sizes(1, 8) == std::vector<int64_t>{1, 2, 4, 8});
    CHECK(plan::bucket_sizes(100, 110) == std::vector<int64_t>{110});
    CHECK(plan::bucket_sizes(5, 5) == std::vector<int64_t>{5});
    test::require_error([] { plan::bucket_sizes(0, 4); }, "need 1 <= MIN <= MAX");
    // More sizes per doubling pad less: 4 gives steps of a quarter of the power of two.
    CHECK(plan::bucket_sizes(128, 1024, 4) ==
          std::vector<int64_t>{128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024});
    CHECK(plan::bucket_sizes(100, 300, 2) == std::vector<int64_t>{128, 192, 256, 300});
    CHECK(plan::bucket_sizes(1, 8, 4) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
    test::require_error([] { plan::bucket_sizes(1, 8, 17); }, "17 buckets per doubling: take 1..16");
}

TEST_CASE("a shape runs on the smallest bucket that holds it", "[cpu][shapes]") {
    plan::ShapeRanges r;
    r.vars = {{"batch", 1, 4}, {"seq", 100, 1000}};
    for (int64_t b : plan::bucket_sizes(1, 4))
        for (int64_t s : plan::bucket_sizes(100, 1000)) r.bucket_values.push_back({b, s});
    r.input_dims = {{0, 1}};
    auto bucket = [&](int64_t b, int64_t s) { return r.bucket_values[plan::pick_bucket(r, {b, s})]; };
    CHECK(bucket(1, 100) == std::vector<int64_t>{1, 128});
    CHECK(bucket(3, 128) == std::vector<int64_t>{4, 128});
    CHECK(bucket(2, 129) == std::vector<int64_t>{2, 256});
    CHECK(bucket(4, 513) == std::vector<int64_t>{4, 1000});
    CHECK(bucket(4, 1000) == std::vector<int64_t>{4, 1000});
    test::require_error([&] { plan::pick_bucket(r, {1, 1001}); }, "'seq' is 1001, outside the plan's range 100..1000");
    test::require_error([&] { plan::pick_bucket(r, {0, 200}); }, "'batch' is 0, outside the plan's range 1..4");

    // An input's actual shape sets the variables its dimensions follow.
    std::vector<int64_t> values = {1, 100};
    plan::bind_input_shape(r, 0, "input_ids", {4, 1000}, {3, 700}, values);
    CHECK(values == std::vector<int64_t>{3, 700});
    test::require_error(
        [&] {
            plan::bind_input_shape(r, 0, "input_ids", {4, 1000}, {3}, values);
        },
        "input 'input_ids': shape [3] has rank 1; the plan takes 2 (1..4x100..1000)");
    test::require_error(
        [&] {
            plan::bind_input_shape(r, 0, "input_ids", {4, 1000}, {3, 2000}, values);
        },
        "dimension 1 (seq) is 2000, outside the plan's range 100..1000");
    CHECK(plan::bound_shape({4, 1000, 64}, {0, 1, -1}, {3, 700}) == Shape{3, 700, 64});
}

TEST_CASE("a run binds tensors of the bucket's shape in place and pads or cuts the others", "[cpu][shapes]") {
    const plan::Plan p = test::ranged_plan();  // n = 3..8, buckets 4 and 8; input and output [n]
    const plan::Plan& four = p.buckets[plan::pick_bucket(p.ranges, {4})];
    REQUIRE(four.tensors[static_cast<size_t>(four.inputs[0])].shape == Shape{4});
    plan::BucketBinding b = plan::bind_bucket(four, {{4}}, {{4}});
    CHECK(b.input_in_place == std::vector<bool>{true});
    CHECK(b.output_in_place == std::vector<bool>{true});
    CHECK(b.all_in_place());
    b = plan::bind_bucket(four, {{3}}, {{3}});
    CHECK(b.input_in_place == std::vector<bool>{false});
    CHECK(b.output_in_place == std::vector<bool>{false});
    CHECK_FALSE(b.all_in_place());
    b = plan::bind_bucket(four, {{4}}, {{3}});
    CHECK(b.input_in_place == std::vector<bool>{true});
    CHECK_FALSE(b.all_in_place());
    const plan::Plan& eight = p.buckets[plan::pick_bucket(p.ranges, {5})];
    CHECK_FALSE(plan::bind_bucket(eight, {{5}}, {{5}}).all_in_place());
    CHECK(plan::bind_bucket(eight, {{8}}, {{8}}).all_in_place());
    test::require_error(
        [&] {
            plan::bind_bucket(four, {{4}, {4}}, {{4}});
        },
        "2 input and 1 output shapes for a bucket of 1 inputs and 1 outputs");
}

TEST_CASE("ranges bind to the model's named dimensions; the bucket count is bounded", "[cpu][shapes]") {
    const ir::Graph g = import_onnx_file(zoo("bert-dynamo"));
    // A range on an input's named dimensions is the range of that name: attention_mask follows too.
    const RangeBinding b = bind_ranges(g, parse_shape_args({"input_ids=1..2x16..64"}));
    REQUIRE(b.ranges.vars.size() == 2);
    CHECK(b.ranges.vars[0].name == "batch");
    CHECK(b.ranges.vars[1].name == "seq");
    CHECK(b.ranges.bucket_values.size() == 2 * 3);
    CHECK(b.ranges.bucket_values.back() == std::vector<int64_t>{2, 64});
    for (const std::vector<int32_t>& dims : b.ranges.input_dims) CHECK(dims == std::vector<int32_t>{0, 1});
    CHECK(b.shapes_for({2, 32}).at("seq") == Shape{32});

    test::require_error(
        [&] {
            bind_ranges(g, parse_shape_args({"batch=1..64", "seq=1..100000"}));
        },
        "the --shape ranges need 126 buckets (batch: 7, seq: 18), more than the 32 a plan holds");
    test::require_error([&] { bind_ranges(g, parse_shape_args({"heads=1..4"})); },
                        "--shape names 'heads', which is neither a model input");
    test::require_error([&] { bind_ranges(g, parse_shape_args({"input_ids=1..8"})); }, "the model declares rank 2");
    test::require_error([&] { bind_ranges(g, parse_shape_args({"seq=1..8x2..4"})); },
                        "a symbolic dimension takes one size or one range");
    test::require_error(
        [&] {
            bind_ranges(g, parse_shape_args({"input_ids=1..2x16..64", "seq=16..128"}));
        },
        "'seq' is given the ranges 16..64 and 16..128");

    // An unnamed ranged dimension is a variable of that input alone.
    test::OnnxBuilder m(18);
    m.input("x", onnx::TensorProto::FLOAT, {std::string(""), int64_t{8}});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    const ir::Graph anon = import_onnx_bytes(m.bytes(), "", "anon");
    const RangeBinding a = bind_ranges(anon, parse_shape_args({"x=3..17x8"}));
    REQUIRE(a.ranges.vars.size() == 1);
    CHECK(a.ranges.vars[0].name == "x[0]");
    CHECK(a.shapes_for({8}).at("x") == Shape{8, 8});
    test::require_error([&] { bind_ranges(anon, parse_shape_args({"x=3..17x4..8"})); },
                        "dimension 1 is fixed to 8 by the model; it takes no range");
}

TEST_CASE("symbolic dimensions with no --shape get documented defaults", "[cpu][shapes]") {
    const ir::Graph g = import_onnx_file(zoo("bert-dynamo"));
    const auto [shapes, named] = default_shapes(g);
    CHECK(shapes.at("batch") == Shape{1});
    CHECK(shapes.at("seq") == Shape{128});
    CHECK(named == "batch=1, seq=128");

    const std::string dir = test::fresh_dir("shape_defaults");
    const test::ToolResult r = test::run_stofc(
        {"compile", "--offline", zoo("bert-dynamo"), "-o", dir + "/bert.plan", "--cache-dir", test::kernel_cache_dir()});
    INFO(r.err);
    CHECK(r.rc == 0);
    CHECK(r.err.find("warning: the model has symbolic dimensions and no --shape was given: compiling for batch=1, seq=128") !=
          std::string::npos);
    const plan::Plan p = plan::read_plan(dir + "/bert.plan");
    CHECK(p.tensors[static_cast<size_t>(p.inputs[0])].shape == Shape{1, 128});
    const test::ToolResult ir = test::run_stofc({"ir", zoo("bert-dynamo")});
    CHECK(ir.rc == 0);
    CHECK(ir.err.find("warning: the model has symbolic dimensions and no --shape was given: using batch=1, seq=128") !=
          std::string::npos);
}

TEST_CASE("padding that changes the real outputs refuses the range, naming why", "[cpu][shapes]") {
    for (const char* op : {"ReduceMean", "Softmax"}) {
        INFO(op);
        ir::Graph g = import_onnx_bytes(seq_model(op), "", "m");
        test::require_error(
            [&] {
                compile_ranged(g, parse_shape_args({"seq=16..64", "batch=1..2"}), offline_options());
            },
            "padding the inputs changes output 'y'");
    }
    ir::Graph flat = import_onnx_bytes(seq_model("Flatten"), "", "m");
    test::require_error(
        [&] {
            compile_ranged(flat, parse_shape_args({"seq=16..64", "batch=1"}), offline_options());
        },
        "its dimension 1 follows no single --shape range");
    ir::Graph relu = import_onnx_bytes(seq_model("Relu"), "", "m");
    const plan::Plan p = compile_ranged(relu, parse_shape_args({"seq=16..64", "batch=1..2"}), offline_options());
    CHECK(p.buckets.size() == 6);
    CHECK(p.ranges.output_dims == std::vector<std::vector<int32_t>>{{1, 0, -1}});  // batch is the second variable

    ir::Graph bert = import_onnx_file(zoo("bert-dynamo"));
    CompileOptions opt = offline_options();
    opt.pipeline.pass.masks = {"bigbird:16:1:1:1:3"};
    test::require_error([&] { compile_ranged(bert, parse_shape_args({"seq=16..64"}), opt); },
                        "random blocks are drawn per sequence length");
}

TEST_CASE("a plan with several buckets survives the file format; a damaged bucket is rejected", "[cpu][shapes][plan]") {
    ir::Graph g = import_onnx_file(zoo("bert-dynamo"));
    CompileOptions opt = offline_options();
    opt.pipeline.pass.masks = {"sliding:8"};
    const plan::Plan p = compile_ranged(g, parse_shape_args({"batch=1..2", "seq=16..64"}), opt);
    REQUIRE(p.buckets.size() == 6);
    CHECK(p.ranges.vars.size() == 2);
    CHECK(p.ranges.output_dims == std::vector<std::vector<int32_t>>{{0, 1, -1}});
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        const plan::Plan& q = p.buckets[b];
        CHECK(q.tensors[static_cast<size_t>(q.inputs[0])].shape == Shape(p.ranges.bucket_values[b]));
        int attention = 0;
        for (const plan::Step& s : q.steps) attention += s.kind == plan::StepKind::attention;
        CHECK(attention == 2);
    }
    const std::string bytes = plan::serialize_plan(p);
    const plan::Plan back = plan::parse_plan(bytes, "ranged.plan");
    REQUIRE(back.buckets.size() == p.buckets.size());
    CHECK(back.ranges.bucket_values == p.ranges.bucket_values);
    CHECK(back.ranges.input_dims == p.ranges.input_dims);
    CHECK(back.ranges.output_dims == p.ranges.output_dims);
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        CHECK(plan::serialize_plan(back.buckets[b]) == plan::serialize_plan(p.buckets[b]));
        CHECK(back.buckets[b].weights == p.buckets[b].weights);
    }
    CHECK(plan::serialize_plan(back) == bytes);

    // The table: meta, shapes, bucket.0 .. bucket.5; a flipped byte inside a bucket names it.
    uint32_t count = 0;
    std::memcpy(&count, bytes.data() + 44, 4);
    REQUIRE(count == 8);
    auto entry = [&](size_t i, size_t field) {
        uint64_t v = 0;
        std::memcpy(&v, bytes.data() + plan::kHeaderBytes + i * plan::kSectionEntryBytes + field, 8);
        return v;
    };
    CHECK(std::string(bytes.data() + plan::kHeaderBytes + 1 * plan::kSectionEntryBytes) == "shapes");
    CHECK(std::string(bytes.data() + plan::kHeaderBytes + 5 * plan::kSectionEntryBytes) == "bucket.3");
    std::string damaged = bytes;
    damaged[entry(5, 16) + entry(5, 24) / 2] ^= 0x10;
    test::require_error([&] { plan::parse_plan(damaged, "ranged.plan"); },
                        "ranged.plan: section 'bucket.3' is damaged (checksum mismatch)");
    damaged = bytes;
    damaged[entry(1, 16) + 2] ^= 0x01;
    test::require_error([&] { plan::parse_plan(damaged, "ranged.plan"); },
                        "ranged.plan: section 'shapes' is damaged (checksum mismatch)");
    // Behind valid checksums: a bucket whose sizes are not the variables' buckets.
    plan::Plan bad = p;
    bad.ranges.bucket_values[1] = {1, 48};
    test::require_error([&] { plan::parse_plan(plan::serialize_plan(bad), "ranged.plan"); },
                        "shapes: the variables have 8 buckets, the plan holds 6");
    bad = p;
    bad.ranges.vars[1].max = 80;
    test::require_error([&] { plan::validate(bad); },
                        "shapes: the buckets of 'seq' (16, 32, 64) leave its range 16..80 or do not end with its maximum");
    bad = p;
    bad.ranges.output_dims[0] = {0, -1, -1};
    test::require_error([&] { plan::validate(bad); }, "output 'last_hidden_state' has shape");
    for (int cut : {1, 100}) {
        const std::string shorter = bytes.substr(0, bytes.size() - static_cast<size_t>(cut));
        test::require_error([&] { plan::parse_plan(shorter, "ranged.plan"); }, "ranged.plan");
    }
}

TEST_CASE("the hand-built ranged plan round-trips; every flipped byte and truncation is rejected", "[cpu][shapes][plan]") {
    const plan::Plan p = test::ranged_plan();
    plan::validate(p);
    const std::string bytes = plan::serialize_plan(p);
    const plan::Plan back = plan::parse_plan(bytes, "r.plan");
    CHECK(back.ranges.bucket_values == p.ranges.bucket_values);
    CHECK(plan::serialize_plan(back) == bytes);
    for (size_t i = 0; i < bytes.size(); ++i) {
        std::string d = bytes;
        d[i] ^= 0x04;
        bool rejected = false;
        try {
            plan::parse_plan(d, "r.plan");
        } catch (const Error& e) {
            rejected = std::string(e.what()).rfind("r.plan", 0) == 0;
        }
        INFO("byte " << i);
        CHECK(rejected);
    }
    for (size_t n = 0; n < bytes.size(); n += 97)
        test::require_error([&] { plan::parse_plan(bytes.substr(0, n), "r.plan"); }, "r.plan");
    // A plan whose buckets miss one of the variable's bucket sizes.
    plan::Plan missing = p;
    missing.buckets.pop_back();
    missing.ranges.bucket_values.pop_back();
    test::require_error([&] { plan::validate(missing); }, "shapes: the buckets of 'n' (4) leave its range 3..8");
}

TEST_CASE("finer buckets: the plan records its sizes and the runtime picks among them", "[cpu][shapes]") {
    ir::Graph relu = import_onnx_bytes(seq_model("Relu"), "", "m");
    ShapeArgs args = parse_shape_args({"seq=100..300", "batch=1"});
    args.per_doubling = 2;
    const plan::Plan p = compile_ranged(relu, args, offline_options());
    REQUIRE(p.buckets.size() == 4);
    CHECK(plan::var_buckets(p.ranges, 0) == std::vector<int64_t>{128, 192, 256, 300});
    const plan::Plan back = plan::parse_plan(plan::serialize_plan(p), "fine.plan");
    CHECK(back.ranges.bucket_values[plan::pick_bucket(back.ranges, {129})] == std::vector<int64_t>{192});
    CHECK(back.ranges.bucket_values[plan::pick_bucket(back.ranges, {257})] == std::vector<int64_t>{300});
    CHECK(plan::describe_ranges(back.ranges) == "seq=100..300 (buckets 128, 192, 256, 300)");
}

TEST_CASE("stofc compile --shape MIN..MAX writes one plan; inspect lists its buckets", "[cpu][shapes]") {
    const std::string dir = test::fresh_dir("shape_ranges_cli");
    const std::string plan_path = dir + "/bert.plan";
    const test::ToolResult c = test::run_stofc({"compile", "--offline", zoo("bert-torchscript"), "-o", plan_path, "--precision",
                                                "fp16", "--shape", "input_ids=1..2x16..64", "--cache-dir",
                                                test::kernel_cache_dir()});
    INFO(c.err);
    REQUIRE(c.rc == 0);
    CHECK(c.err.find("bucket 6/6: batch=2, seq=64") != std::string::npos);
    CHECK(c.out.find("6 shape buckets (batch=1..2 (buckets 1, 2); seq=16..64 (buckets 16, 32, 64))") != std::string::npos);
    const test::ToolResult text = test::run_stofc({"inspect", plan_path});
    REQUIRE(text.rc == 0);
    CHECK(text.out.find("buckets: 6") != std::string::npos);
    CHECK(text.out.find("input  input_ids [batch, seq]") != std::string::npos);
    CHECK(text.out.find("bucket 5 (batch=2, seq=64)") != std::string::npos);
    // Printed once: the header once, each bucket's body once.
    CHECK(test::count(text.out, "(format version ") == 1);
    CHECK(test::count(text.out, "\nsteps: ") == 6);
    const test::ToolResult js = test::run_stofc({"inspect", "--json", plan_path});
    REQUIRE(js.rc == 0);
    const nlohmann::json j = nlohmann::json::parse(js.out);
    REQUIRE(j["buckets"].size() == 6);
    CHECK(j["buckets"][4]["sizes"]["seq"] == 32);
    CHECK(j["shape_ranges"]["vars"][1]["buckets"] == nlohmann::json::array({16, 32, 64}));

    const test::ToolResult bad = test::run_stofc({"compile", "--offline", zoo("bert-torchscript"), "-o", dir + "/x.plan",
                                                  "--shape", "seq=64..16", "--shape", "batch=1"});
    CHECK(bad.rc == 1);
    CHECK(bad.err == "stofc: error: --shape seq=64..16: the range 64..16 has MIN > MAX\n");
    const test::ToolResult many = test::run_stofc({"compile", "--offline", zoo("bert-torchscript"), "-o", dir + "/x.plan",
                                                   "--shape", "seq=16..64", "--shape-buckets", "0"});
    CHECK(many.err == "stofc: error: --shape-buckets 0: take 1..16\n");
    CHECK(!std::filesystem::exists(dir + "/x.plan"));
}

TEST_CASE("zoo models: outputs at a shape equal their bucket's on zero-padded inputs, cut back", "[cpu][shapes]") {
    // The runtime's padding on the reference interpreter: the model evaluated at the actual
    // shape (the zoo's inputs cut to `seq` positions, batch 1 of 2) against the model at the
    // bucket's shape on those inputs zero-padded, its outputs cut back.
    for (const char* name : {"bert-dynamo", "gpt2-torchscript", "llama-dynamo", "t5-dynamo"}) {
        INFO(name);
        const std::string dir = test::source_dir() + "/models/" + name;
        const ir::Graph model = import_onnx_file(dir + "/model.onnx");
        TensorMap actual;
        for (ir::ValueId id : model.inputs) {
            const std::string& in = model.value(id).name;
            const Tensor full = read_npy(dir + "/inputs/" + in + ".npy");
            actual[in] = cut_tensor(full, {1, 100});
        }
        auto evaluate = [&](int64_t batch, int64_t seq, const TensorMap& feeds) {
            ir::Graph g = model;
            PipelineOptions opt;
            opt.pass.input_shapes = {{"batch", {batch}}, {"seq", {seq}}};
            opt.pass.masks = {"sliding:24"};
            run_pipeline(g, opt);
            return interpret(g, feeds);
        };
        const TensorMap want = evaluate(1, 100, actual);
        TensorMap padded;
        for (const auto& [in, t] : actual) padded[in] = pad_tensor(t, {2, 128});
        const TensorMap got = evaluate(2, 128, padded);
        for (const auto& [out, t] : want) {
            const Comparison c = compare(cut_tensor(got.at(out), t.shape), t, 1e-4, 1e-5);
            INFO(out << ": " << describe(c, t, 1e-4, 1e-5));
            CHECK(c.ok);
        }
    }
}
