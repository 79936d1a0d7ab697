#include "stof/cli_util.hpp"

#include "stof/error.hpp"
#include "stof/npy.hpp"

#include <cctype>

namespace stof::cli {

std::pair<std::string, std::string> split_assignment(const std::string& arg, const char* flag) {
    const size_t eq = arg.find('=');
    STOF_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < arg.size(), "{} '{}': expected NAME=VALUE", flag, arg);
    return {arg.substr(0, eq), arg.substr(eq + 1)};
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
