// Status plumbing shared by the C API's implementation files: run a body,
// turn any exception into a stof_status plus the thread's last-error message.
#pragma once

#include "stof/c_api.h"
#include "stof/error.hpp"

#include <new>
#include <string>

namespace stof::capi {

void set_last_error(const std::string& message);

// A caller mistake the C layer detects itself (null pointer, index out of range).
struct InvalidArgument {
    std::string message;
};

// Runs f(); returns STOF_OK, or the status for what it threw: a stof::Error
// gives `on_error` (STOF_ERROR_NO_DEVICE when it says "no CUDA device").
template <class F> stof_status guard(stof_status on_error, F&& f) noexcept {
    try {
        f();
        return STOF_OK;
    } catch (const InvalidArgument& e) {
        set_last_error(e.message);
        return STOF_ERROR_INVALID_ARGUMENT;
    } catch (const Error& e) {
        set_last_error(e.what());
        return std::string(e.what()).rfind("no CUDA device", 0) == 0 ? STOF_ERROR_NO_DEVICE : on_error;
    } catch (const std::bad_alloc&) {
        set_last_error("out of host memory");
        return STOF_ERROR_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_last_error(std::string("internal error: ") + e.what());
        return STOF_ERROR_INTERNAL;
    } catch (...) {
        set_last_error("internal error: unknown exception");
        return STOF_ERROR_INTERNAL;
    }
}

}  // namespace stof::capi
