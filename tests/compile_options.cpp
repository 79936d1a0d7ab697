#include "compile_options.hpp"

#include "test_util.hpp"

namespace stof::test {

std::string kernel_cache_dir() { return binary_dir() + "/test_tmp/plan_cache"; }

CompileOptions compile_options(Precision p, const std::string& model, const std::string& arch) {
    CompileOptions opt;
    opt.lower.precision = p;
    opt.lower.arch = arch;
    opt.lower.cache_dir = kernel_cache_dir();
    opt.lower.model = model;
    return opt;
}

}  // namespace stof::test
