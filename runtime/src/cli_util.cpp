#include "stof/cli_util.hpp"

#include "stof/error.hpp"
#include "stof/npy.hpp"

#include <unistd.h>

#include <cctype>
#include <filesystem>

namespace stof::cli {

std::string printable(const std::string& text, bool keep_newlines) {
    std::string s;
    s.reserve(text.size());
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (keep_newlines && c == '\n') s += ch;
        else if (c < 0x20 || c >= 0x7f || c == '\\') s += fmt::format("\\x{:02x}", c);
        else s += ch;
    }
    return s;
}

void make_output_dir(const std::string& dir, const char* flag) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    STOF_CHECK(!ec, "{} '{}': cannot create the directory: {}", flag, dir, ec.message());
    STOF_CHECK(std::filesystem::is_directory(dir, ec), "{} '{}' is not a directory", flag, dir);
    STOF_CHECK(::access(dir.c_str(), W_OK | X_OK) == 0, "{} '{}': the directory is not writable", flag, dir);
}

std::pair<std::string, std::string> split_assignment(const std::string& arg, const char* flag) {
    const size_t eq = arg.find('=');
    STOF_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < arg.size(), "{} '{}': expected NAME=VALUE", flag, arg);
    return {arg.substr(0, eq), arg.substr(eq + 1)};
}

void check_output_file(const std::string& path, const char* what) {
    namespace fs = std::filesystem;
    std::error_code ec;
    STOF_CHECK(!path.empty(), "{}: empty file name", what);
    const fs::path p(path);
    STOF_CHECK(path.back() != '/' && !fs::is_directory(p, ec), "{} {} is a directory; name the file to write, e.g. {}", what,
               path, (p / "model.plan").lexically_normal().string());
    const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    STOF_CHECK(fs::is_directory(dir, ec), "{} {}: the directory {} does not exist", what, path, dir.string());
    STOF_CHECK(::access(dir.c_str(), W_OK) == 0, "{} {}: the directory {} is not writable", what, path, dir.string());
    STOF_CHECK(!fs::exists(p, ec) || fs::is_regular_file(p, ec), "{} {} exists and is not a regular file", what, path);
    STOF_CHECK(!fs::exists(p, ec) || ::access(p.c_str(), W_OK) == 0, "{} {} exists and is not writable", what, path);
}

std::string tensor_file_name(const std::string& name) {
    std::string s = name;
    for (char& c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    return s;
}

std::map<std::string, Tensor> read_named_npy(const std::vector<std::string>& args, const char* flag) {
    std::map<std::string, Tensor> out;
    for (const std::string& a : args) {
        auto [name, file] = split_assignment(a, flag);
        STOF_CHECK(!out.count(name), "{} gives '{}' twice", flag, name);
        out[name] = read_npy(file);
    }
    return out;
}

}  // namespace stof::cli
