#include "c_api_status.hpp"
#include "stof/version.hpp"

namespace {
thread_local std::string last_error;
}

namespace stof::capi {

void set_last_error(const std::string& message) {
    try {
        last_error = message;
    } catch (...) {
        last_error.clear();
    }
}

}  // namespace stof::capi

extern "C" const char* stof_last_error(void) { return last_error.c_str(); }

extern "C" const char* stof_version(void) { return stof::kVersion; }
