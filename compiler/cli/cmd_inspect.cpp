// stofc inspect PLAN [--json] : check a plan file with the runtime's reader and
// print its meta data, tensors, masks, kernels and steps.
#include "cli/cli_args.hpp"
#include "cli/commands.hpp"
#include "plan/plan_fields.hpp"
#include "plan/plan_reader.hpp"
#include "stof/plan_format.hpp"
#include "stof/shape_ranges.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iterator>
#include <nlohmann/json.hpp>

namespace stof::cli {

namespace {

const char* buffer_name(plan::BufferKind b) { return b == plan::BufferKind::weights ? "weights" : "arena"; }

const char* role_name(plan::TensorRole r) {
    switch (r) {
        case plan::TensorRole::input: return "input";
        case plan::TensorRole::output: return "output";
        case plan::TensorRole::weight: return "weight";
        default: return "intermediate";
    }
}

const char* param_name(plan::ParamKind k) {
    switch (k) {
        case plan::ParamKind::pointer: return "ptr";
        case plan::ParamKind::i32: return "i32";
        case plan::ParamKind::i64: return "i64";
        default: return "f32";
    }
}

std::string tensor_name(const plan::Plan& p, int32_t t) { return t >= 0 ? p.tensors[t].name : "-"; }

// One line describing the operands of a step.
std::string step_detail(const plan::Plan& p, const plan::Step& s) {
    switch (s.kind) {
        case plan::StepKind::launch: {
            const plan::LaunchStep& l = s.launch;
            std::string args;
            for (const plan::Arg& a : l.args) {
                if (!args.empty()) args += ", ";
                if (a.kind == plan::ParamKind::pointer)
                    args += tensor_name(p, a.tensor) + (a.byte_offset ? fmt::format("+{}", a.byte_offset) : "");
                else if (a.kind == plan::ParamKind::f32) args += fmt::format("{}", a.f);
                else args += fmt::format("{}", a.i);
            }
            return fmt::format("grid {}x{}x{} block {}x{}x{} smem {} ({})", l.grid[0], l.grid[1], l.grid[2], l.block[0],
                               l.block[1], l.block[2], l.shared_bytes, args);
        }
        case plan::StepKind::gemm: {
            const plan::GemmStep& g = s.gemm;
            return fmt::format(
                "{} = {}{} x {}{} m={} n={} k={} batch={} alpha={} beta={}{} epilogue {}{}", tensor_name(p, g.d),
                tensor_name(p, g.a), g.trans_a ? "^T" : "", tensor_name(p, g.b), g.trans_b ? "^T" : "", g.m, g.n, g.k, g.batch,
                g.alpha, g.beta, g.c >= 0 ? " c=" + tensor_name(p, g.c) : "", plan::epilogue_name(g.epilogue),
                g.epilogue == plan::Epilogue::rotary
                    ? fmt::format(" (cos={} sin={} positions={} columns={} head_dim={})", tensor_name(p, g.rotary.cos),
                                  tensor_name(p, g.rotary.sin), g.rotary.rows, g.rotary.cols, g.rotary.head_dim)
                    : "");
        }
        case plan::StepKind::attention: {
            const plan::AttentionStep& a = s.attention;
            // name[+byte offset](stride_b,stride_h,stride_s)
            const auto operand = [&](const plan::AttentionOperand& o) {
                return fmt::format("{}{}({},{},{})", tensor_name(p, o.tensor),
                                   o.byte_offset ? fmt::format("+{}", o.byte_offset) : "", o.stride_b, o.stride_h, o.stride_s);
            };
            return fmt::format("{} = attention(q={}, k={}, v={}) batch={} heads={}/{} seq={}x{} head_dim={} mask {}{}{}{}",
                               operand(a.o), operand(a.q), operand(a.k), operand(a.v), a.batch, a.heads, a.kv_heads, a.seq_q,
                               a.seq_k, a.head_dim, a.mask, a.fold > 1 ? fmt::format(" folded by {}", a.fold) : "",
                               a.key_valid >= 0 ? " key_valid=" + tensor_name(p, a.key_valid) : "",
                               a.bias >= 0 ? " bias=" + tensor_name(p, a.bias) : "");
        }
        case plan::StepKind::key_valid:
            return fmt::format("{} = key_valid({}) batch={} seq={}{}", tensor_name(p, s.key_valid.words),
                               tensor_name(p, s.key_valid.mask), s.key_valid.batch, s.key_valid.seq,
                               s.key_valid.fold > 1 ? fmt::format(" folded by {}", s.key_valid.fold) : "");
        case plan::StepKind::copy:
            return fmt::format("{}+{} = {}+{} ({} bytes)", tensor_name(p, s.copy.dst), s.copy.dst_offset,
                               tensor_name(p, s.copy.src), s.copy.src_offset, s.copy.bytes);
        case plan::StepKind::mask_convert:
            return fmt::format("mask {} = sparse({})", s.mask_convert.mask, tensor_name(p, s.mask_convert.keep));
    }
    return "";
}

const char* enum_text(plan::ParamKind k) { return param_name(k); }
const char* enum_text(plan::Epilogue e) { return plan::epilogue_name(e); }

// Every field of a step's body (plan_fields.hpp) as JSON, named as in the format.
struct FieldJson {
    nlohmann::json& j;
    template <class T> void operator()(const char* name, const T& v) { j[name] = value(v); }
    template <class T> static nlohmann::json value(const T& v) {
        if constexpr (std::is_enum_v<T>) {
            return enum_text(v);
        } else if constexpr (std::is_arithmetic_v<T>) {
            return v;
        } else if constexpr (std::is_array_v<T> || plan::IsVector<T>::value) {
            nlohmann::json a = nlohmann::json::array();
            for (const auto& x : v) a.push_back(value(x));
            return a;
        } else {
            nlohmann::json o = nlohmann::json::object();
            plan::fields(v, FieldJson{o});
            return o;
        }
    }
};

// The attention kernel the steps using mask `m` run, or "unused".
std::string mask_kernel(const plan::Plan& p, size_t m) {
    for (const plan::Step& s : p.steps)
        if (s.kind == plan::StepKind::attention && static_cast<size_t>(s.attention.mask) == m)
            return plan::attention_kernel_name(s.attention.kernel);
    return "unused";
}

std::string human_bytes(uint64_t b) {
    if (b < 1024) return fmt::format("{} B", b);
    if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
    if (b < (uint64_t{1} << 30)) return fmt::format("{:.1f} MiB", b / 1048576.0);
    return fmt::format("{:.2f} GiB", b / 1073741824.0);
}

nlohmann::json to_json(const plan::Plan& p) {
    using nlohmann::json;
    json j;
    j["format_version"] = plan::kFormatVersion;
    if (p.ranged()) {
        // The shape ranges, then each bucket as a static plan.
        j["meta"] = to_json(p.buckets[0])["meta"];
        j["meta"]["notes"] = p.meta.notes;
        json vars = json::array();
        for (size_t k = 0; k < p.ranges.vars.size(); ++k) {
            const plan::ShapeVar& v = p.ranges.vars[k];
            vars.push_back({{"name", v.name}, {"min", v.min}, {"max", v.max}, {"buckets", plan::var_buckets(p.ranges, k)}});
        }
        json inputs = json::object(), outputs = json::object();
        const plan::Plan& b0 = p.buckets[0];
        for (size_t i = 0; i < b0.inputs.size(); ++i) inputs[b0.tensors[b0.inputs[i]].name] = p.ranges.input_dims[i];
        for (size_t i = 0; i < b0.outputs.size(); ++i) outputs[b0.tensors[b0.outputs[i]].name] = p.ranges.output_dims[i];
        j["shape_ranges"] = {{"vars", vars}, {"input_dims", inputs}, {"output_dims", outputs}};
        json buckets = json::array();
        for (size_t b = 0; b < p.buckets.size(); ++b) {
            json sizes = json::object();
            for (size_t v = 0; v < p.ranges.vars.size(); ++v) sizes[p.ranges.vars[v].name] = p.ranges.bucket_values[b][v];
            json body = to_json(p.buckets[b]);
            body.erase("format_version");
            buckets.push_back({{"sizes", sizes}, {"plan", body}});
        }
        j["buckets"] = buckets;
        return j;
    }
    j["meta"] = {{"model", p.meta.model},
                 {"stofc_version", p.meta.stofc_version},
                 {"target_arch", p.meta.target_arch},
                 {"nvrtc_version", p.meta.nvrtc_version},
                 {"precision", p.meta.precision},
                 {"created", p.meta.created},
                 {"notes", p.meta.notes}};
    j["arena_bytes"] = p.arena_bytes;
    j["weights_bytes"] = p.weights_bytes();
    if (p.has_placeholders()) j["placeholder_weights"] = p.placeholders;
    json tensors = json::array();
    for (const plan::TensorDesc& t : p.tensors) {
        json e = {
            {"name", t.name},     {"dtype", dtype_name(t.dtype)}, {"shape", t.shape},         {"buffer", buffer_name(t.buffer)},
            {"offset", t.offset}, {"bytes", t.bytes()},           {"role", role_name(t.role)}};
        if (t.role == plan::TensorRole::input && t.int_lo <= t.int_hi) e["int_range"] = {t.int_lo, t.int_hi};
        tensors.push_back(e);
    }
    j["tensors"] = tensors;
    json inputs = json::array(), outputs = json::array();
    for (int32_t t : p.inputs) inputs.push_back(p.tensors[t].name);
    for (int32_t t : p.outputs) outputs.push_back(p.tensors[t].name);
    j["inputs"] = inputs;
    j["outputs"] = outputs;
    json masks = json::array();
    for (size_t i = 0; i < p.masks.size(); ++i) {
        const SparseMask& m = p.masks[i].mask;
        json e = {{"spec", p.masks[i].spec},
                  {"runtime", p.masks[i].runtime},
                  {"rows", m.rows},
                  {"cols", m.cols},
                  {"tile", {m.tile_m, m.tile_n}},
                  {"patterns", {m.mask_batch, m.mask_heads}},
                  {"kernel", mask_kernel(p, i)},
                  {"kernel_reason", p.masks[i].kernel_reason}};
        if (!p.masks[i].runtime) {  // a run-time mask's pattern is known only when it arrives
            const SparseMaskStats st = mask_stats(m);
            e["density"] = st.density;
            e["rho"] = st.rho;
            e["tiles"] = {{"empty", st.empty_tiles}, {"full", st.full_tiles}, {"partial", st.partial_tiles}};
        }
        masks.push_back(e);
    }
    j["masks"] = masks;
    json kernels = json::array();
    for (const plan::KernelDesc& k : p.kernels) {
        json params = json::array();
        for (plan::ParamKind pk : k.params) params.push_back(param_name(pk));
        kernels.push_back({{"key", k.key},
                           {"entry", k.entry},
                           {"arch", k.arch},
                           {"cubin_bytes", k.cubin.size()},
                           {"ptx_bytes", k.ptx.size()},
                           {"params", params}});
    }
    j["kernels"] = kernels;
    json steps = json::array();
    for (const plan::Step& s : p.steps) {
        json fields = json::object();
        plan::with_step_body(s, [&](const auto& body) { fields = FieldJson::value(body); });
        steps.push_back({{"kind", plan::step_label(s)},
                         {"kernel", plan::step_kernel_name(p, s)},
                         {"nodes", s.nodes},
                         {"detail", step_detail(p, s)},
                         {"fields", fields}});
    }
    j["steps"] = steps;
    json segments = json::array();
    for (const plan::SegmentInfo& s : p.segments) {
        json e = {{"kind", s.kind}, {"template", s.templ}, {"config", s.config}, {"source", s.source}, {"nodes", s.nodes}};
        e["time_us"] = s.time_us >= 0 ? json(s.time_us) : json(nullptr);
        e["moves"] = s.moves;
        if (s.sweep_space > 0)
            e["sweep"] = {{"space", s.sweep_space},           {"best_us", s.sweep_us},
                          {"config", s.sweep_config},         {"stage2_us", s.stage2_us},
                          {"stage2_config", s.stage2_config}, {"stage2_over_sweep", s.stage2_us / s.sweep_us}};
        segments.push_back(e);
    }
    j["segments"] = segments;
    return j;
}

// A static plan's contents after its meta.
void print_body(std::string& out, const plan::Plan& p);

// Names, specs and notes come from the file: printed escaped (no terminal escape sequences).
void print_text(const std::string& path, const plan::Plan& p) {
    std::string out;
    const auto o = std::back_inserter(out);
    fmt::format_to(o, "plan {} (format version {})\n", path, plan::kFormatVersion);
    const plan::Meta& m = p.ranged() ? p.buckets[0].meta : p.meta;
    fmt::format_to(o,
                   "meta\n  model          {}\n  stofc version  {}\n  target arch    {}\n  nvrtc version  {}\n"
                   "  precision      {}\n  created        {}\n  notes          {}\n",
                   m.model, m.stofc_version, m.target_arch, m.nvrtc_version, m.precision, m.created, p.meta.notes);
    if (!p.ranged()) {
        print_body(out, p);
        fmt::print("{}", printable(out, true));
        return;
    }
    const plan::ShapeRanges& r = p.ranges;
    fmt::format_to(o, "shape ranges: {}\n", r.vars.size());
    for (size_t k = 0; k < r.vars.size(); ++k)
        fmt::format_to(o, "  {:<16} {}..{}  buckets {}\n", r.vars[k].name, r.vars[k].min, r.vars[k].max,
                       fmt::join(plan::var_buckets(r, k), ", "));
    const plan::Plan& b0 = p.buckets[0];
    auto dims = [&](const plan::TensorDesc& t, const std::vector<int32_t>& d) {
        std::string s;
        for (size_t k = 0; k < d.size(); ++k)
            s += (k ? ", " : "") + (d[k] < 0 ? std::to_string(t.shape[k]) : r.vars[static_cast<size_t>(d[k])].name);
        return s;
    };
    for (size_t i = 0; i < b0.inputs.size(); ++i)
        fmt::format_to(o, "  input  {} [{}]\n", b0.tensors[b0.inputs[i]].name, dims(b0.tensors[b0.inputs[i]], r.input_dims[i]));
    for (size_t i = 0; i < b0.outputs.size(); ++i)
        fmt::format_to(o, "  output {} [{}]\n", b0.tensors[b0.outputs[i]].name,
                       dims(b0.tensors[b0.outputs[i]], r.output_dims[i]));
    fmt::format_to(o, "buckets: {}\n", p.buckets.size());
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        const plan::Plan& q = p.buckets[b];
        fmt::format_to(o, "  {:>4}  {:<32} {} steps, {} kernels, arena {}, weights {}\n", b, plan::describe_bucket(r, b),
                       q.steps.size(), q.kernels.size(), human_bytes(q.arena_bytes), human_bytes(q.weights.size()));
    }
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        fmt::format_to(o, "bucket {} ({})\n", b, plan::describe_bucket(r, b));
        print_body(out, p.buckets[b]);
    }
    fmt::print("{}", printable(out, true));
}

void print_body(std::string& out, const plan::Plan& p) {
    const auto o = std::back_inserter(out);
    fmt::format_to(o, "tensors: {} (arena {}, weights {}{})\n", p.tensors.size(), human_bytes(p.arena_bytes),
                   human_bytes(p.weights_bytes()),
                   p.has_placeholders() ? fmt::format(", {} of them placeholders for timing", p.placeholders.size()) : "");
    for (size_t i = 0; i < p.tensors.size(); ++i) {
        const plan::TensorDesc& t = p.tensors[i];
        fmt::format_to(o, "  {:>4}  {:<12} {}{:<16} {:<7} @{:<10} {:>10}  {}\n", i, role_name(t.role), dtype_name(t.dtype),
                       shape_str(t.shape), buffer_name(t.buffer), t.offset, human_bytes(t.bytes()), t.name);
    }
    fmt::format_to(o, "masks: {}\n", p.masks.size());
    for (size_t i = 0; i < p.masks.size(); ++i) {
        const SparseMask& m = p.masks[i].mask;
        std::string pattern = "built at run time from its input";
        if (!p.masks[i].runtime) {
            const SparseMaskStats st = mask_stats(m);
            pattern = fmt::format("density {:.4f} rho {:.4f}  tiles empty {} full {} partial {}", st.density, st.rho,
                                  st.empty_tiles, st.full_tiles, st.partial_tiles);
        }
        fmt::format_to(o, "  {:>4}  {}  {}x{} tile {}x{} patterns {}x{}  {}\n        kernel {} ({})\n", i, p.masks[i].spec,
                       m.rows, m.cols, m.tile_m, m.tile_n, m.mask_batch, m.mask_heads, pattern, mask_kernel(p, i),
                       p.masks[i].kernel_reason);
    }
    fmt::format_to(o, "kernels: {}\n", p.kernels.size());
    for (size_t i = 0; i < p.kernels.size(); ++i) {
        const plan::KernelDesc& k = p.kernels[i];
        std::string params;
        for (plan::ParamKind pk : k.params) params += (params.empty() ? "" : ",") + std::string(param_name(pk));
        fmt::format_to(o, "  {:>4}  {}  entry {}  arch {}  cubin {}  ptx {}  params ({})\n", i, k.key, k.entry,
                       k.arch.empty() ? "-" : k.arch, human_bytes(k.cubin.size()), human_bytes(k.ptx.size()), params);
    }
    fmt::format_to(o, "segments: {}\n", p.segments.size());
    for (size_t i = 0; i < p.segments.size(); ++i) {
        const plan::SegmentInfo& s = p.segments[i];
        fmt::format_to(o, "  {:>4}  {:<12} {:<16} {:<22} {:<8} {:>10}  [{}]{}\n", i, s.kind, s.templ, s.config, s.source,
                       s.time_us >= 0 ? fmt::format("{:.2f} us", s.time_us) : "-", s.nodes,
                       s.moves.empty() ? "" : "\n        by " + s.moves);
        if (s.sweep_space > 0)
            fmt::format_to(o, "        sweep of {} configs: best {:.2f} us ({}); stage 2 {:.2f} us ({}): {:.3f}x\n",
                           s.sweep_space, s.sweep_us, s.sweep_config, s.stage2_us, s.stage2_config, s.stage2_us / s.sweep_us);
    }
    fmt::format_to(o, "steps: {}\n", p.steps.size());
    for (size_t i = 0; i < p.steps.size(); ++i) {
        const plan::Step& s = p.steps[i];
        fmt::format_to(o, "  {:>4}  {:<16} {:<28} {}{}\n", i, plan::step_label(s), plan::step_kernel_name(p, s),
                       step_detail(p, s), s.nodes.empty() ? "" : "  [" + s.nodes + "]");
    }
}

}  // namespace

void add_inspect_command(CLI::App& app) {
    auto path = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("inspect", "Check a plan file and print its contents");
    cmd->add_option("plan", *path, "Plan file written by stofc compile")->required();
    cmd->add_flag("--json", *json, "Print JSON instead of text");
    add_max_memory_option(cmd);
    cmd->callback([path, json] {
        const plan::Plan p = plan::read_plan(*path);
        if (*json) fmt::print("{}\n", to_json(p).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
        else print_text(*path, p);
    });
}

}  // namespace stof::cli
