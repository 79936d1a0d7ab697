// stof-run: run a plan file on the GPU, write or compare its outputs, time it.
#include "stof/build_info.hpp"
#include "stof/cli_util.hpp"
#include "stof/compare.hpp"
#include "stof/error.hpp"
#include "stof/log.hpp"
#include "stof/npy.hpp"
#include "stof/runtime.hpp"
#include "stof/shape_ranges.hpp"
#include "stof/version.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

namespace {

struct RunArgs {
    std::string plan;
    std::vector<std::string> inputs, expects, shapes;
    std::string inputs_dir, output_dir, expect_dir, dump_dir;
    double rtol = 1e-3, atol = 1e-4;
    int bench = 0, warmup = 10, device = 0, profile = 0;
    uint64_t seed = 0;
    bool graph = false, json = false;
};

// Random contents for an input: floats standard normal; integers in the plan's
// [int_lo, int_hi] when lo <= hi, else [0, 100); bools 0 or 1.
stof::Tensor random_input(const stof::TensorInfo& in, std::mt19937_64& rng) {
    stof::Tensor t(in.dtype, in.shape);
    std::normal_distribution<double> normal;
    const bool ranged = in.int_lo <= in.int_hi;
    std::uniform_int_distribution<int64_t> ints(ranged ? in.int_lo : 0, ranged ? in.int_hi : 99);
    for (int64_t i = 0; i < t.numel(); ++i) {
        if (stof::is_float(in.dtype)) t.set_f64(i, normal(rng));
        else if (in.dtype == stof::DType::boolean) t.set_i64(i, static_cast<int64_t>(rng() & 1));
        else t.set_i64(i, ints(rng));
    }
    return t;
}

// A file's tensor converted to the input's dtype (float to float, integer or bool
// to integer or bool); the shape must match.
stof::Tensor conform(const std::string& name, const stof::Tensor& t, const stof::TensorInfo& in) {
    STOF_CHECK(t.shape == in.shape, "--input {}: the file holds {}, the plan takes {}{}", name, t.describe(),
               stof::dtype_name(in.dtype), stof::shape_str(in.shape));
    if (t.dtype == in.dtype) return t;
    STOF_CHECK(stof::is_float(t.dtype) == stof::is_float(in.dtype), "--input {}: the file holds {}, the plan takes {}", name,
               stof::dtype_name(t.dtype), stof::dtype_name(in.dtype));
    spdlog::debug("input '{}': converting {} to {}", name, stof::dtype_name(t.dtype), stof::dtype_name(in.dtype));
    return stof::cast(t, in.dtype);
}

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, idx == 0 ? 0 : idx - 1)];
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Runs step by step; each intermediate and output tensor is written to
// DIR/<name>.npy right after the first step that touches it (its producer).
void run_dumping(stof::Runtime& rt, const std::string& dir) {
    stof::cli::make_output_dir(dir, "--dump-dir");
    const stof::plan::Plan& p = rt.plan();
    std::vector<bool> done(p.tensors.size(), false);
    std::string order;  // DIR/order.txt: "<step> <name>" per line, in step order
    rt.run_traced([&](size_t i) {
        for (int32_t t : stof::plan::step_tensors(p.steps[i])) {
            if (done[static_cast<size_t>(t)]) continue;
            done[static_cast<size_t>(t)] = true;
            const stof::plan::TensorDesc& d = p.tensors[static_cast<size_t>(t)];
            if (d.role == stof::plan::TensorRole::weight || d.role == stof::plan::TensorRole::input) continue;
            const stof::Tensor x = rt.read_tensor(t);
            const auto path = std::filesystem::path(dir) / (stof::cli::tensor_file_name(d.name) + ".npy");
            stof::write_npy(path.string(), x.dtype == stof::DType::bf16 ? stof::cast(x, stof::DType::f32) : x);
            order += fmt::format("{} {}\n", i, stof::cli::tensor_file_name(d.name));
        }
    });
    std::ofstream((std::filesystem::path(dir) / "order.txt").string()) << order;
    spdlog::info("wrote step results to {}", dir);
}

// The steps by time (the slowest first, at most 20 listed) and the time per step
// label; returns the same as JSON.
nlohmann::json print_profile(const stof::Runtime& rt, const std::vector<double>& ms, int runs, bool print) {
    const stof::plan::Plan& p = rt.plan();
    double total = 0;
    for (double t : ms) total += t;
    std::vector<size_t> order(ms.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ms[x] > ms[y]; });
    std::map<std::string, std::pair<double, int>> by_label;
    nlohmann::json steps = nlohmann::json::array();
    for (size_t i = 0; i < ms.size(); ++i) {
        const stof::plan::Step& s = p.steps[i];
        auto& [t, count] = by_label[stof::plan::step_label(s)];
        t += ms[i];
        ++count;
        steps.push_back({{"step", i},
                         {"kind", stof::plan::step_label(s)},
                         {"kernel", stof::plan::step_kernel_name(p, s)},
                         {"nodes", s.nodes},
                         {"ms", ms[i]}});
    }
    nlohmann::json labels = nlohmann::json::object();
    for (const auto& [label, tc] : by_label) labels[label] = {{"ms", tc.first}, {"steps", tc.second}};
    if (print) {
        fmt::print("profile: median of {} plain runs per step, {:.4f} ms in all\n", runs, total);
        for (const auto& [label, tc] : by_label)
            fmt::print("  {:<16} {:>9.4f} ms {:>5.1f}%  {} steps\n", label, tc.first, 100 * tc.first / total, tc.second);
        fmt::print("  slowest steps:\n");
        for (size_t k = 0; k < std::min<size_t>(20, order.size()); ++k) {
            const size_t i = order[k];
            const stof::plan::Step& s = p.steps[i];
            const std::string nodes = s.nodes.size() > 60 ? s.nodes.substr(0, 57) + "..." : s.nodes;
            fmt::print("  {:>9.4f} ms {:>5.1f}%  {:>4}  {:<16} {:<32} {}\n", ms[i], 100 * ms[i] / total, i,
                       stof::plan::step_label(s), stof::plan::step_kernel_name(p, s), nodes);
        }
    }
    return {{"runs", runs}, {"total_ms", total}, {"by_kind", labels}, {"steps", steps}};
}

// --json when the run fails before its report: {"ok": false, "error": ..., "kind": ...} on stdout.
void print_json_error(const RunArgs& a, const std::string& message, const char* kind) {
    const nlohmann::json j = {{"plan", a.plan}, {"ok", false}, {"error", message}, {"kind", kind}};
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

int run(const RunArgs& a) {
    using nlohmann::json;
    stof::Runtime rt(a.plan, stof::RuntimeOptions{a.device});
    spdlog::info("{} on {}: {} inputs, {} outputs, {} steps", a.plan, rt.device_name(), rt.inputs().size(), rt.outputs().size(),
                 rt.plan().steps.size());
    json report = {{"plan", a.plan}, {"device", rt.device_name()}, {"stofc_version", rt.plan().meta.stofc_version}};

    // Inputs: files where given, random data otherwise.
    std::map<std::string, stof::Tensor> files = stof::cli::read_named_npy(a.inputs, "--input");
    for (const auto& [name, t] : files) {
        bool known = false;
        for (const stof::TensorInfo& in : rt.inputs()) known = known || in.name == name;
        STOF_CHECK(known, "--input names '{}', which is not an input of the plan", name);
    }
    if (!a.inputs_dir.empty()) {
        STOF_CHECK(std::filesystem::is_directory(a.inputs_dir), "--inputs-dir '{}' is not a directory", a.inputs_dir);
        for (const stof::TensorInfo& in : rt.inputs()) {
            const auto path = std::filesystem::path(a.inputs_dir) / (stof::cli::tensor_file_name(in.name) + ".npy");
            if (!files.count(in.name) && std::filesystem::exists(path)) files[in.name] = stof::read_npy(path.string());
        }
    }
    // Shapes first (a plan for shape ranges): --shape, then the files' shapes; random
    // inputs take the shapes that results.
    for (const std::string& arg : a.shapes) {
        auto [name, dims] = stof::cli::split_assignment(arg, "--shape");
        size_t index = rt.inputs().size();
        for (size_t i = 0; i < rt.inputs().size(); ++i)
            if (rt.inputs()[i].name == name) index = i;
        STOF_CHECK(index < rt.inputs().size(), "--shape names '{}', which is not an input of the plan", name);
        stof::Shape shape;
        for (size_t p = 0;;) {
            const size_t end = dims.find_first_of("x,", p);
            const std::string part = dims.substr(p, end == std::string::npos ? std::string::npos : end - p);
            STOF_CHECK(!part.empty() && part.size() < 12 && part.find_first_not_of("0123456789") == std::string::npos,
                       "--shape {}: '{}' is not a list of sizes like 2x128", arg, dims);
            shape.push_back(std::stoll(part));
            if (end == std::string::npos) break;
            p = end + 1;
        }
        rt.set_input_shape(index, shape);
    }
    for (size_t i = 0; i < rt.inputs().size(); ++i) {
        auto it = files.find(rt.inputs()[i].name);
        if (it != files.end() && rt.ranges() && it->second.shape != rt.inputs()[i].shape)
            rt.set_input_shape(i, it->second.shape);
    }
    if (const stof::plan::ShapeRanges* r = rt.ranges()) {
        spdlog::info("shape bucket {} of {} ({}) runs the inputs' shapes", rt.bucket(), r->bucket_values.size(),
                     stof::plan::describe_bucket(*r, rt.bucket()));
        report["bucket"] = stof::plan::describe_bucket(*r, rt.bucket());
    }
    std::mt19937_64 rng(a.seed);
    json inputs = json::array();
    for (const stof::TensorInfo& in : rt.inputs()) {
        auto it = files.find(in.name);
        const bool given = it != files.end(), padding = !given && stof::plan::is_padding_mask(rt.plan(), in.tensor);
        rt.set_input(in.name, given     ? conform(in.name, it->second, in)
                              : padding ? stof::full(in.dtype, in.shape, 1.0)
                                        : random_input(in, rng));
        const std::string what = stof::dtype_name(in.dtype) + stof::shape_str(in.shape);
        if (padding) spdlog::info("input '{}': all ones {} (a padding mask: no key is padded)", in.name, what);
        else if (!given) spdlog::info("input '{}': random {}", in.name, what);
        inputs.push_back({{"name", in.name},
                          {"dtype", stof::dtype_name(in.dtype)},
                          {"shape", in.shape},
                          {"data", given     ? "file"
                                   : padding ? "ones"
                                             : "random"}});
    }
    report["inputs"] = inputs;
    report["seed"] = a.seed;

    if (a.dump_dir.empty()) rt.run(a.graph);
    else run_dumping(rt, a.dump_dir);

    // Outputs: written, compared.
    std::map<std::string, stof::Tensor> expected = stof::cli::read_named_npy(a.expects, "--expect");
    for (const auto& [name, t] : expected) {
        bool known = false;
        for (const stof::TensorInfo& out : rt.outputs()) known = known || out.name == name;
        STOF_CHECK(known, "--expect names '{}', which is not an output of the plan", name);
    }
    if (!a.expect_dir.empty()) {
        for (const stof::TensorInfo& out : rt.outputs()) {
            const auto path = std::filesystem::path(a.expect_dir) / (stof::cli::tensor_file_name(out.name) + ".npy");
            if (!expected.count(out.name) && std::filesystem::exists(path)) expected[out.name] = stof::read_npy(path.string());
        }
        STOF_CHECK(!expected.empty(), "--expect-dir '{}' holds no <output>.npy file for any output of the plan", a.expect_dir);
    }
    if (!a.output_dir.empty()) stof::cli::make_output_dir(a.output_dir, "--output-dir");
    int failures = 0;
    json outputs = json::array();
    for (const stof::TensorInfo& out : rt.outputs()) {
        const stof::Tensor t = rt.output(out.name);
        json o = {{"name", out.name}, {"dtype", stof::dtype_name(out.dtype)}, {"shape", out.shape}};
        if (!a.output_dir.empty()) {
            const auto path = std::filesystem::path(a.output_dir) / (stof::cli::tensor_file_name(out.name) + ".npy");
            // .npy has no bfloat16: such outputs are written as float32.
            stof::write_npy(path.string(), t.dtype == stof::DType::bf16 ? stof::cast(t, stof::DType::f32) : t);
            spdlog::info("wrote {} {}", path.string(), t.describe());
            o["file"] = path.string();
        }
        auto it = expected.find(out.name);
        if (it != expected.end()) {
            const stof::Comparison c = stof::compare(t, it->second, a.rtol, a.atol);
            std::string line = stof::describe(c, it->second, a.rtol, a.atol);
            if (c.worst >= 0) line += fmt::format(", got {:g}", t.get_f64(c.worst));
            if (!a.json) fmt::print("{} {}: {}\n", c.ok ? "match   " : "MISMATCH", out.name, line);
            o["match"] = c.ok;
            o["max_abs"] = c.max_abs;
            o["max_rel"] = c.max_rel;
            o["mismatches"] = c.mismatches;
            o["comparison"] = line;
            failures += !c.ok;
        } else if (!a.json && a.output_dir.empty()) {
            fmt::print("{}: {}\n", out.name, t.describe());
        }
        outputs.push_back(o);
    }
    report["outputs"] = outputs;
    report["rtol"] = a.rtol;
    report["atol"] = a.atol;

    if (a.bench > 0) {
        const std::vector<double> ms = rt.benchmark(a.bench, a.warmup, a.graph);
        const auto [lo_it, hi_it] = std::minmax_element(ms.begin(), ms.end());
        double sum = 0;
        for (double t : ms) sum += t;
        const double lo = *lo_it, hi = *hi_it, mean = sum / static_cast<double>(ms.size()), med = median(ms),
                     p99 = percentile(ms, 0.99);
        // Back-to-back runs per second at the mean latency (one run = one batch of the plan's shape).
        const double per_s = mean > 0 ? 1000.0 / mean : 0.0;
        if (!a.json)
            fmt::print(
                "latency over {} runs ({} warm-up, {}): min {:.4f} ms, mean {:.4f} ms, median {:.4f} ms, p99 "
                "{:.4f} ms, max {:.4f} ms; throughput {:.1f} runs/s\n",
                a.bench, a.warmup, a.graph ? "CUDA graph" : "plain launches", lo, mean, med, p99, hi, per_s);
        report["latency_ms"] = {{"min", lo}, {"mean", mean},    {"median", med},      {"p99", p99},
                                {"max", hi}, {"runs", a.bench}, {"warmup", a.warmup}, {"graph", a.graph}};
        report["throughput_runs_per_s"] = per_s;
    }
    if (a.profile > 0) report["profile"] = print_profile(rt, rt.profile(a.profile, a.warmup), a.profile, !a.json);
    report["ok"] = failures == 0;
    if (a.json) fmt::print("{}\n", report.dump(2, ' ', false, json::error_handler_t::replace));
    if (failures == 0) return 0;
    // The report (with "ok": false) is the JSON of this failure.
    std::fprintf(stderr, "stof-run: error: %d of %zu compared outputs do not match\n", failures, expected.size());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"stof-run: run a stofc plan on the GPU"};
    app.set_version_flag("-V,--version", [] { return stof::build_description("stof-run") + "\n" + stof::cuda_versions(); });
    RunArgs a;
    int verbosity = 0;
    app.add_option("plan", a.plan, "Plan file written by stofc compile")->required();
    app.add_option("--input,-i", a.inputs,
                   "Input tensor NAME=FILE.npy (repeatable); other inputs get random data, except padding masks: all ones");
    app.add_option("--shape", a.shapes,
                   "Input shape NAME=DIMS (input_ids=1x200) for a plan compiled for shape ranges (default: the "
                   "inputs' files, else each range's minimum); repeatable");
    app.add_option("--inputs-dir", a.inputs_dir, "Directory with <input>.npy for inputs not given by --input");
    app.add_option("--output-dir,-o", a.output_dir, "Write every output to DIR/<output>.npy");
    app.add_option("--expect", a.expects, "Expected output NAME=FILE.npy (repeatable)");
    app.add_option("--expect-dir", a.expect_dir, "Directory with expected <output>.npy files");
    app.add_option("--rtol", a.rtol, "Relative tolerance for comparisons")->capture_default_str();
    app.add_option("--atol", a.atol, "Absolute tolerance for comparisons")->capture_default_str();
    app.add_option("--bench", a.bench, "Time N runs (CUDA events): min, mean, median, p99 and max latency, throughput")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--profile", a.profile,
                   "Time every step over N plain runs and list the slowest steps and the time per kind of step")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--warmup", a.warmup, "Untimed runs before --bench and --profile")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    app.add_option("--dump-dir", a.dump_dir,
                   "Run step by step and write every intermediate tensor to DIR/<name>.npy (compare with stofc eval "
                   "--dump-dir)");
    app.add_flag("--graph", a.graph, "Run as a CUDA graph captured once and replayed");
    app.add_flag("--json", a.json, "Print a machine-readable summary on stdout (on failure: {\"ok\": false, \"error\": ...})");
    app.add_option("--device", a.device, "CUDA device index")->capture_default_str()->check(CLI::NonNegativeNumber);
    app.add_option("--seed", a.seed, "Seed for random inputs")->capture_default_str();
    app.add_flag("-v,--verbose", verbosity, "More log output (-v debug, -vv trace); or set STOF_LOG");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : stof::cli::kExitUsage;
    }
    try {
        stof::init_logging(verbosity);
        stof::check_tolerances(a.rtol, a.atol);
        return run(a);
    } catch (const stof::Error& e) {
        spdlog::debug("raised at {}", e.where());
        std::fprintf(stderr, "stof-run: error: %s\n", stof::cli::printable(e.what(), true).c_str());
        if (a.json) print_json_error(a, e.what(), "error");
        return stof::cli::kExitError;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "stof-run: internal error: %s\n", stof::cli::printable(e.what(), true).c_str());
        if (a.json) print_json_error(a, e.what(), "internal error");
    }
    return stof::cli::kExitInternal;
}
