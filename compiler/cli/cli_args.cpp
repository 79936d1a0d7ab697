#include "cli/cli_args.hpp"

#include "stof/error.hpp"
#include "stof/memory_limit.hpp"
#include "stof/npy.hpp"

#include <filesystem>

namespace stof::cli {

Shape parse_dims(const std::string& text, const std::string& context) {
    Shape dims;
    size_t p = 0;
    while (p <= text.size()) {
        const size_t end = text.find_first_of("x,", p);
        const std::string part = text.substr(p, end == std::string::npos ? std::string::npos : end - p);
        STOF_CHECK(!part.empty() && part.size() < 12 && part.find_first_not_of("0123456789") == std::string::npos,
                   "{}: '{}' is not a list of positive sizes like 2x128", context, text);
        dims.push_back(std::stoll(part));
        if (end == std::string::npos) break;
        p = end + 1;
    }
    return dims;
}

void add_max_memory_option(CLI::App* cmd) {
    cmd->add_option_function<std::string>(
        "--max-memory", [](const std::string& v) { set_memory_limit(parse_memory_size(v, "--max-memory")); },
        "Refuse work needing more host memory than SIZE (16G, 512M; default: the physical memory, " +
            format_bytes(physical_memory()) + ")");
}

std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& args) {
    std::map<std::string, Shape> out;
    for (const std::string& a : args) {
        auto [name, dims] = split_assignment(a, "--shape");
        STOF_CHECK(!out.count(name), "--shape gives '{}' twice", name);
        out[name] = parse_dims(dims, "--shape " + a);
    }
    return out;
}

TensorMap load_inputs(const ir::Graph& g, const std::vector<std::string>& args, const std::string& dir) {
    TensorMap feeds = read_named_npy(args, "--input");
    for (ir::ValueId id : g.inputs) {
        const std::string& name = g.value(id).name;
        if (feeds.count(name) || dir.empty()) continue;
        const std::string path = (std::filesystem::path(dir) / (tensor_file_name(name) + ".npy")).string();
        STOF_CHECK(std::filesystem::exists(path), "input '{}': no --input given and '{}' does not exist", name, path);
        feeds[name] = read_npy(path);
    }
    std::string missing;
    for (ir::ValueId id : g.inputs) {
        const ir::Value& v = g.value(id);
        if (!feeds.count(v.name)) missing += fmt::format("{}{} ({})", missing.empty() ? "" : ", ", v.name, dtype_name(v.dtype));
    }
    STOF_CHECK(missing.empty(), "missing model inputs: {}; give each with --input NAME=FILE.npy", missing);
    return feeds;
}

TensorMap load_expected(const ir::Graph& g, const std::vector<std::string>& args, const std::string& dir) {
    TensorMap expected = read_named_npy(args, "--expect");
    for (const auto& [name, t] : expected) {
        bool is_output = false;
        for (ir::ValueId o : g.outputs) is_output = is_output || g.value(o).name == name;
        STOF_CHECK(is_output, "--expect names '{}', which is not a model output", name);
    }
    if (!dir.empty()) {
        for (ir::ValueId o : g.outputs) {
            const std::string& name = g.value(o).name;
            const std::string path = (std::filesystem::path(dir) / (tensor_file_name(name) + ".npy")).string();
            if (!expected.count(name) && std::filesystem::exists(path)) expected[name] = read_npy(path);
        }
        STOF_CHECK(!expected.empty(), "--expect-dir '{}' holds no <output>.npy file for any model output", dir);
    }
    return expected;
}

}  // namespace stof::cli
