// Hostile inputs: every file and flag that could crash, hang, exhaust memory or
// silently change an answer is refused in one line with an exit code in 1..123,
// within 30 s and 4 GB (tool_run.hpp), or completes quickly where it is valid.
// Each case builds its input here; the classes follow docs/ERRORS.md.
#include "codegen/nvrtc.hpp"
#include "mask/mask_builder.hpp"
#include "mask/mask_spec.hpp"
#include "onnx/import.hpp"
#include "onnx_builder.hpp"
#include "stof/cli_util.hpp"
#include "stof/npy.hpp"
#include "stof/sparse_mask.hpp"
#include "test_util.hpp"
#include "tool_run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

using namespace stof;
using test::OnnxBuilder;

namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
constexpr int64_t kWraps = 6148914691236517206;  // 3 x this wraps to 2 in 64 bits

// One last line "stofc: error: ...needle..." (after any progress log lines), an exit code in
// 1..123 other than the internal error's.
void require_refusal(const test::ToolResult& r, const std::string& needle) {
    INFO("exit " << r.rc << " after " << r.seconds << " s; stderr: " << r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.rc >= 1);
    CHECK(r.rc <= 123);
    CHECK(r.rc != cli::kExitInternal);
    const size_t at = r.err.find("stofc: error: ");
    REQUIRE(at != std::string::npos);
    CHECK((at == 0 || r.err[at - 1] == '\n'));
    CHECK(r.err.find('\n', at) == r.err.size() - 1);
    CHECK(r.err.find("internal error") == std::string::npos);
    CHECK(r.err.substr(at).find(needle) != std::string::npos);
}

std::string save(const std::string& dir, const std::string& name, const std::string& bytes) {
    const std::string path = dir + "/" + name;
    test::write_bytes(path, bytes);
    return path;
}

// A .npy header for `shape_text` ("(3, 4)") and dtype `descr`, followed by `data`.
std::string npy_header(const std::string& descr, const std::string& shape_text, const std::string& data = "") {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
}

// A model whose one node under test is `op` (its output is the model's); x is unused.
std::string model_through(const std::string& op, const std::vector<std::pair<std::string, Tensor>>& consts,
                          const std::function<void(onnx::NodeProto&)>& attrs = {}) {
    OnnxBuilder b;
    b.input("x", kF32, {2});
    std::vector<std::string> names;
    for (const auto& [name, t] : consts) {
        b.initializer(name, t);
        names.push_back(name);
    }
    auto& n = b.node(op, names, {"y"}, "bomb");
    if (attrs) attrs(n);
    b.output("y");
    return b.bytes();
}

Tensor floats(std::initializer_list<float> v) {
    Tensor t(DType::f32, {static_cast<int64_t>(v.size())});
    int64_t i = 0;
    for (float x : v) t.data<float>()[i++] = x;
    return t;
}

Tensor scalar_i64(int64_t v) {
    Tensor t(DType::i64, {});
    t.data<int64_t>()[0] = v;
    return t;
}

// q, k, v [1, 2, 16, 64] through scaled-dot-product attention: one attention layer.
std::string attention_model() {
    OnnxBuilder b;
    for (const char* n : {"q", "k", "v"}) b.input(n, kF32, {1, 2, 16, 64});
    test::add_attention(b, 0.125f);
    b.output("o");
    return b.bytes();
}

// x [batch, 4] through Relu.
std::string symbolic_model() {
    OnnxBuilder b;
    b.input("x", kF32, {std::string("batch"), int64_t{4}});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    return b.bytes();
}

// A model whose initializer w [2] is stored in external file `location`.
std::string external_model(const std::string& location) {
    OnnxBuilder b;
    b.input("x", kF32, {2});
    auto* init = b.model().mutable_graph()->add_initializer();
    init->set_name("w");
    init->set_data_type(kF32);
    init->add_dims(2);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = init->add_external_data();
    e->set_key("location");
    e->set_value(location);
    b.node("Add", {"x", "w"}, {"y"});
    b.output("y");
    return b.bytes();
}

std::string fifo(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    ::unlink(path.c_str());
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    return path;
}

// A file of `bytes` bytes that takes no disk space.
std::string sparse_file(const std::string& dir, const std::string& name, uint64_t bytes) {
    const std::string path = save(dir, name, "");
    REQUIRE(::truncate(path.c_str(), static_cast<off_t>(bytes)) == 0);
    return path;
}

const std::string kCache = "--cache-dir";
std::string cache_dir() { return test::binary_dir() + "/test_tmp/hostile_cache"; }

}  // namespace

TEST_CASE("hostile sizes: every product of dimensions is checked (class 1)", "[cpu][hostile]") {
    test::require_error([] { numel({3, kWraps}); }, "more elements than stofc handles");
    test::require_error([] { size_mul(3, kWraps, "x"); }, "more than stofc handles");
    test::require_error([] { Tensor(DType::f32, {-1, 2}); }, "negative dimension");
    const std::string dir = test::fresh_dir("hostile/sizes");

    // Folding (ConstantOfShape), Reshape inference, Expand inference.
    const std::string cos = save(dir, "cos.onnx", model_through("ConstantOfShape", {{"shape", test::ints({3, kWraps})}}));
    require_refusal(test::run_stofc({"ir", cos}), "more elements than stofc handles");
    require_refusal(test::run_stofc({"eval", cos, "--input", "x=" + save(dir, "x.npy", serialize_npy(floats({1, 2})))}),
                    "more elements than stofc handles");
    OnnxBuilder reshape;
    reshape.input("x", kF32, {2});
    reshape.initializer("shape", test::ints({3, kWraps}));
    reshape.node("Reshape", {"x", "shape"}, {"y"});
    reshape.output("y");
    require_refusal(test::run_stofc({"ir", save(dir, "reshape.onnx", reshape.bytes())}), "more than stofc handles");
    const std::string expand = save(dir, "expand.onnx",
                                    model_through("Expand", {{"v", floats({1})}, {"shape", test::ints({3, kWraps})}}));
    require_refusal(test::run_stofc({"ir", expand}), "more elements than stofc handles");

    // A .npy header for a symbolic input, and a file: mask header.
    const std::string npy = save(dir, "wrap.npy", npy_header("<f4", "(3, 6148914691236517206)"));
    require_refusal(test::run_stofc({"eval", save(dir, "sym.onnx", symbolic_model()), "--input", "x=" + npy}),
                    "more elements than stofc handles");
    const std::string mask = save(dir, "wrap_mask.npy", npy_header("|b1", "(3, 6148914691236517206)"));
    require_refusal(test::run_stofc({"mask", "file:" + mask, "--seq", "8"}), "more elements than stofc handles");
}

TEST_CASE("hostile mask specs: nesting is limited (class 2)", "[cpu][hostile]") {
    const std::string deep = std::string(20000, '(') + "causal" + std::string(20000, ')');
    require_refusal(test::run_stofc({"mask", deep, "--seq", "16"}), "nests deeper than 64 levels");
    // The deepest accepted nesting still parses.
    CHECK(to_string(parse_mask_spec(std::string(64, '(') + "causal" + std::string(64, ')'))) == "causal");
}

TEST_CASE("hostile external data: links may not leave the model's folder (class 3)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/external");
    const std::string model_dir = dir + "/model";
    std::filesystem::create_directories(model_dir);
    save(dir, "secret.bin", std::string(8, '\x11'));
    std::filesystem::create_symlink("../secret.bin", model_dir + "/w.bin");
    std::filesystem::create_directory_symlink("..", model_dir + "/sub");
    require_refusal(test::run_stofc({"ir", save(model_dir, "file_link.onnx", external_model("w.bin"))}),
                    "outside the model's folder");
    require_refusal(test::run_stofc({"ir", save(model_dir, "dir_link.onnx", external_model("sub/secret.bin"))}),
                    "outside the model's folder");
    std::filesystem::create_directories(model_dir + "/folder");
    require_refusal(test::run_stofc({"ir", save(model_dir, "dir.onnx", external_model("folder"))}), "is not a regular file");
    // A link that stays inside is followed.
    save(model_dir, "real.bin", std::string(8, '\x11'));
    std::filesystem::create_symlink("real.bin", model_dir + "/inside.bin");
    const test::ToolResult ok = test::run_stofc({"ir", save(model_dir, "inside.onnx", external_model("inside.bin"))});
    INFO(ok.err);
    CHECK(ok.rc == 0);
}

TEST_CASE("hostile files: FIFOs and devices are refused, never read (class 4)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/fifo");
    const std::string model = save(dir, "relu.onnx", symbolic_model());
    require_refusal(test::run_stofc({"eval", model, "--input", "x=" + fifo(dir, "in.npy")}), "is not a regular file");
    require_refusal(test::run_stofc({"eval", model, "--input", "x=/dev/zero"}), "is not a regular file");
    require_refusal(test::run_stofc({"mask", "file:" + fifo(dir, "mask.npy"), "--seq", "8"}), "is not a regular file");
    fifo(dir, "w.bin");
    require_refusal(test::run_stofc({"ir", save(dir, "ext.onnx", external_model("w.bin"))}), "is not a regular file");
    require_refusal(test::run_stofc({"ir", fifo(dir, "model.onnx")}), "is not a regular file");
    require_refusal(test::run_stofc({"inspect", fifo(dir, "model.plan")}), "is not a regular file");
}

TEST_CASE("hostile sizes: a band mask over 10^8 positions costs its kept tiles (class 4)", "[cpu][hostile]") {
    const test::ToolResult r = test::run_stofc({"mask", "sliding:4", "--seq", "100000000", "--tile", "8"});
    INFO(r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.rc == 0);
    CHECK(r.out.find("tiles     156250000000000:") != std::string::npos);
}

TEST_CASE("hostile models: 100,000 nodes in reverse order import in linear time (class 4)", "[cpu][hostile]") {
    constexpr int kNodes = 100000;
    OnnxBuilder b;
    b.input("x", kF32, {2});
    for (int i = kNodes - 1; i >= 0; --i)
        b.node("Relu", {i == 0 ? std::string("x") : "v" + std::to_string(i - 1)}, {"v" + std::to_string(i)});
    b.output("v" + std::to_string(kNodes - 1));
    const std::string bytes = b.bytes();
    const test::ToolResult r = test::run_limited([&] {
        const ir::Graph g = import_onnx_bytes(bytes, "", "reversed");
        STOF_CHECK(g.nodes.size() == kNodes && g.nodes.front().name == "Relu_0", "wrong order");
    });
    INFO(r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.rc == 0);
}

TEST_CASE("hostile memory: small inputs cannot ask for large allocations (class 5)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/memory");
    // mask_stats of a long band with 8x8 tiles: no byte per 16x16 cell (15.6 GB here).
    const test::ToolResult stats = test::run_limited([] {
        const SparseMask m = build_mask(parse_mask_spec("sliding:4"), 2000000, 2000000, 8, 8, 0, 0);
        const SparseMaskStats st = mask_stats(m);
        STOF_CHECK(st.full_tiles + st.partial_tiles == 3 * 250000 - 2, "tiles: {} {}", st.full_tiles, st.partial_tiles);
    });
    INFO(stats.err);
    CHECK(stats.rc == 0);

    // A .npy header promising 10^12 elements with no data; /dev/zero.
    const std::string model = save(dir, "relu.onnx", symbolic_model());
    const std::string big = save(dir, "big.npy", npy_header("<f4", "(250000000000, 4)"));
    require_refusal(test::run_stofc({"eval", model, "--input", "x=" + big}), "needs 4000000000000");
    // A 3 GB file that is no model, and one that is no plan: refused from their size and header.
    const std::string huge = sparse_file(dir, "huge.bin", uint64_t{3} << 30);
    require_refusal(test::run_stofc({"ir", huge}), "larger than 2 GB");
    require_refusal(test::run_stofc({"inspect", huge}), "not a stofc plan file");

    // 100-byte bombs: 10^12 elements from Expand, ConstantOfShape, Range and Resize.
    const std::string expand = save(
        dir, "expand.onnx", model_through("Expand", {{"v", floats({1})}, {"shape", test::ints({1000000, 1000000, 1})}}));
    const std::string cos = save(dir, "cos.onnx", model_through("ConstantOfShape", {{"shape", test::ints({1000000, 1000000})}}));
    const std::string range = save(
        dir, "range.onnx",
        model_through("Range", {{"a", scalar_i64(0)}, {"b", scalar_i64(1000000000000)}, {"d", scalar_i64(1)}}));
    OnnxBuilder resize;
    resize.input("x", kF32, {1, 1, 2, 2});
    resize.initializer("roi", floats({}));
    resize.initializer("scales", floats({1, 1, 500000, 500000}));
    resize.node("Resize", {"x", "roi", "scales"}, {"y"});
    resize.output("y");
    const std::string rs = save(dir, "resize.onnx", resize.bytes());
    for (const std::string& m : {expand, cos, range, rs}) {
        INFO(m);
        require_refusal(test::run_stofc({"ir", m}), "more than the memory limit");
    }
    require_refusal(test::run_stofc({"ir", model, "--shape", "batch=99999999999"}), "more than the memory limit");
    // A Resize output within the limit whose interpolation tables are not.
    OnnxBuilder wide;
    wide.input("x", kF32, {1, 1, 1, 2});
    wide.initializer("roi", floats({}));
    wide.initializer("scales", floats({1, 1, 1, 16777216}));
    wide.node("Resize", {"x", "roi", "scales"}, {"y"});
    wide.output("y");
    require_refusal(test::run_stofc({"compile", "--offline", "--arch", "sm_80", save(dir, "wide.onnx", wide.bytes()), "-o",
                                     dir + "/wide.plan", "--max-memory", "300M"}),
                    "the interpolation taps of 33554432 output positions needs 3.5 GB");
    // --max-memory lowers the limit; the figure is in the message.
    require_refusal(test::run_stofc({"ir", model, "--shape", "batch=1000000", "--max-memory", "1M"}),
                    "intermediate values 32.0 MB), more than the memory limit of 1.0 MB (set by --max-memory)");
    require_refusal(test::run_stofc({"ir", model, "--max-memory", "lots"}), "--max-memory 'lots'");
}

TEST_CASE("hostile requests: nothing is ignored or answered silently wrong (class 6)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/ignored");
    const std::string model = save(dir, "relu.onnx", symbolic_model());
    Tensor x2(DType::f32, {2, 4});
    const std::string in2 = save(dir, "x2.npy", serialize_npy(x2));
    const std::string zeros = save(dir, "zeros.npy", serialize_npy(x2));
    for (const char* flag : {"--rtol", "--atol"})
        require_refusal(test::run_stofc({"eval", model, "--input", "x=" + in2, "--expect", "y=" + zeros, flag, "nan"}),
                        "tolerances must be finite");
    require_refusal(test::run_stofc({"eval", model, "--input", "x=" + in2, "--shape", "batch=3"}),
                    "--shape batch=3 disagrees with input 'x' of shape [2,4]");

    OnnxBuilder conv;
    conv.input("x", kF32, {1, 1, 4, 4});
    conv.initializer("w", test::iota_f32({1, 1, 1, 1}));
    auto& c = conv.node("Conv", {"x", "w"}, {"y"}, "conv");
    test::set_attr(c, "stirdes", std::vector<int64_t>{2, 2});
    conv.output("y");
    require_refusal(test::run_stofc({"ir", save(dir, "conv.onnx", conv.bytes())}), "op 'Conv' has no attribute 'stirdes'");
    for (const auto& [attr, v, message] :
         {std::tuple{"strides", std::vector<int64_t>{0, 1}, "stride 0 and dilation 1 along axis 0 must be in 1..1048576"},
          std::tuple{"dilations", std::vector<int64_t>{1, int64_t{1} << 40}, "dilation 1099511627776 along axis 1"},
          std::tuple{"pads", std::vector<int64_t>{0, -1, 0, 0}, "padding -1 is not in 0..1048576"}}) {
        OnnxBuilder bad;
        bad.input("x", kF32, {1, 1, 4, 4});
        bad.initializer("w", test::iota_f32({1, 1, 1, 1}));
        test::set_attr(bad.node("Conv", {"x", "w"}, {"y"}, "conv"), attr, v);
        bad.output("y");
        require_refusal(test::run_stofc({"ir", save(dir, "bad_conv.onnx", bad.bytes())}), message);
    }

    const std::string att = save(dir, "attention.onnx", attention_model());
    require_refusal(test::run_stofc({"ir", att, "--mask", "7=causal"}),
                    "the model has 1 attention layer (0-0), none numbered 7");
    const test::ToolResult ok = test::run_stofc({"ir", att, "--mask", "0=causal"});
    INFO(ok.err);
    CHECK(ok.rc == 0);

    OnnxBuilder twice;
    twice.input("x", kF32, {2});
    twice.input("x", kF32, {3});
    twice.node("Relu", {"x"}, {"y"});
    twice.output("y");
    require_refusal(test::run_stofc({"ir", save(dir, "twice.onnx", twice.bytes())}), "two graph inputs are named 'x'");
    OnnxBuilder out_twice;
    out_twice.input("x", kF32, {2});
    out_twice.node("Relu", {"x"}, {"y"});
    out_twice.output("y");
    out_twice.output("y");
    require_refusal(test::run_stofc({"ir", save(dir, "out_twice.onnx", out_twice.bytes())}), "the graph lists output 'y' twice");

    std::filesystem::create_directories(dir + "/a");
    const std::string in_a = save(dir + "/a", "model.onnx", symbolic_model());
    require_refusal(test::run_stofc({"compile", "--offline", in_a, "-o", dir + "/a/../a/model.onnx", "--shape", "batch=1"}),
                    "the plan would overwrite it");
    CHECK(import_onnx_file(in_a).nodes.size() == 1);

    OnnxBuilder resize;
    resize.input("x", kF32, {1, 1, 2, 2});
    resize.initializer("roi", floats({}));
    resize.initializer("scales", floats({1, 1, 1e30f, 1}));
    resize.node("Resize", {"x", "roi", "scales"}, {"y"});
    resize.output("y");
    require_refusal(test::run_stofc({"ir", save(dir, "resize.onnx", resize.bytes())}), "more than stofc handles");
}

TEST_CASE("hostile cache: a damaged kernel-cache entry is compiled again, never used (class 7)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/cache");
    const std::string source = "extern \"C\" __global__ void hostile_probe(float* x) { x[threadIdx.x] *= 2.0f; }\n";
    const codegen::CompiledKernel fresh = codegen::compile_kernel("hostile_probe", source, "sm_90", dir);
    CHECK_FALSE(fresh.cached);
    CHECK(codegen::compile_kernel("hostile_probe", source, "sm_90", dir).cached);
    std::string cubin_path;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/kernels"))
        if (e.path().extension() == ".cubin") cubin_path = e.path().string();
    REQUIRE(!cubin_path.empty());
    auto damage = [&](const std::function<void(std::string&)>& how) {
        std::string bytes(fresh.cubin.begin(), fresh.cubin.end());
        how(bytes);
        test::write_bytes(cubin_path, bytes);
        const codegen::CompiledKernel again = codegen::compile_kernel("hostile_probe", source, "sm_90", dir);
        CHECK_FALSE(again.cached);
        CHECK(again.cubin == fresh.cubin);
    };
    damage([](std::string& b) { b[b.size() / 2] ^= 0x10; });  // one bit flipped
    damage([](std::string& b) { b.resize(b.size() / 2); });   // truncated
}

TEST_CASE("hostile plans: compile refuses a plan beyond the memory limit (class 7)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/arena");
    const std::string model = save(dir, "relu.onnx", symbolic_model());
    require_refusal(test::run_stofc({"compile", "--offline", model, "-o", dir + "/relu.plan", "--shape", "batch=100000",
                                     "--max-memory", "2M", kCache, cache_dir()}),
                    "more than the memory limit of 2.0 MB");
    CHECK_FALSE(std::filesystem::exists(dir + "/relu.plan"));
}

TEST_CASE("hostile names: names from files reach the terminal escaped (class 8)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/names");
    const std::string evil = "x\x1b]0;owned\x07\x1b[2J";
    OnnxBuilder b;
    b.input(evil, kF32, {2, 4});
    b.node("Relu", {evil}, {"y"});
    b.output("y");
    const std::string model = save(dir, "evil.onnx", b.bytes());
    const std::string plan = dir + "/evil.plan";
    const test::ToolResult c = test::run_stofc({"compile", "--offline", model, "-o", plan, kCache, cache_dir()});
    INFO(c.err);
    REQUIRE(c.rc == 0);
    const test::ToolResult shown = test::run_stofc({"inspect", plan});
    CHECK(shown.rc == 0);
    CHECK(shown.out.find('\x1b') == std::string::npos);
    CHECK(shown.out.find("x\\x1b]0;owned\\x07\\x1b[2J") != std::string::npos);
    // In an error message too.
    OnnxBuilder bad;
    bad.input("x", kF32, {2});
    bad.node("NoSuchOp", {"x"}, {"y"}, evil);
    bad.output("y");
    const test::ToolResult e = test::run_stofc({"ir", save(dir, "bad.onnx", bad.bytes())});
    require_refusal(e, "\\x1b[2J");
    CHECK(e.err.find('\x1b') == std::string::npos);
}

TEST_CASE("hostile outputs: an unwritable --output-dir and a failed plan write are clear errors (class 8)", "[cpu][hostile]") {
    const std::string dir = test::fresh_dir("hostile/outputs");
    const std::string model = save(dir, "relu.onnx", symbolic_model());
    const std::string in = save(dir, "x.npy", serialize_npy(Tensor(DType::f32, {2, 4})));
    const std::string file = save(dir, "a_file", "x");
    require_refusal(test::run_stofc({"eval", model, "--input", "x=" + in, "--output-dir", file + "/out"}),
                    "--output-dir '" + file + "/out': cannot create the directory");

    // A full disk while the plan is written (a file size limit): an error, and no temporary file left.
    const std::string out_dir = test::fresh_dir("hostile/outputs/plan");
    const std::vector<std::string> args{"compile", "--offline", model,  "-o",       out_dir + "/relu.plan",
                                        "--shape", "batch=2",   kCache, cache_dir()};
    REQUIRE(test::run_stofc(args).rc == 0);  // warms the kernel cache: only the plan is written below
    std::filesystem::remove(out_dir + "/relu.plan");
    test::Limits small;
    small.file_bytes = 4096;
    require_refusal(test::run_stofc(args, small), "cannot write plan file");
    CHECK(std::filesystem::is_empty(out_dir));
}

TEST_CASE("exit codes: 1 for a refusal, 2 for a command line that does not parse", "[cpu][hostile]") {
    CHECK(test::run_stofc({"mask", "causal", "--seq", "8", "--no-such-flag"}).rc == cli::kExitUsage);
    CHECK(test::run_stofc({"mask", "causal"}).rc == cli::kExitUsage);
    CHECK(test::run_stofc({"mask", "causl", "--seq", "8"}).rc == cli::kExitError);
    CHECK(test::run_stofc({"mask", "causal", "--seq", "8"}).rc == 0);
}
