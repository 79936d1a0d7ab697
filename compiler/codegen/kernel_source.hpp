// A generated CUDA kernel before NVRTC: its source, entry point, parameter
// bindings and launch geometry.
#pragma once

#include "stof/plan.hpp"

#include <string>
#include <vector>

namespace stof::codegen {

// Scalar kind of a generated expression: float math, exact int64 math, or bool.
enum class Scalar { f, i, b };

struct Expr {
    std::string code;
    Scalar type = Scalar::f;
};

Scalar scalar_of(DType t);
// The C type a kernel uses for elements of `t` ("float", "stof::f16", ...).
std::string c_type(DType t);
// A literal of kind `s` with value v ("0.5f", "__int_as_float(0x7f800000)", "3LL", "true").
std::string literal(double v, Scalar s);
std::string literal_int(int64_t v);

// Builds one kernel: parameters bound to plan tensors or scalars, and body lines.
class KernelBuilder {
public:
    // The parameter name for (tensor, byte_offset), added on first use.
    std::string tensor(int32_t tensor, DType dtype, bool output, uint64_t byte_offset = 0);
    std::string fresh(const std::string& prefix);
    void line(const std::string& s) { body_.push_back(s); }
    // Text placed between the includes and the kernel (helper structs).
    void preamble(const std::string& s) { preamble_ += s; }

    // Full source: includes, preamble, `extern "C" __global__ void
    // <launch_bounds> <entry>(<params>)` and the body lines.
    std::string source(const std::string& entry, const std::string& launch_bounds,
                       const std::vector<std::string>& includes) const;
    std::vector<plan::Arg> args() const;
    std::vector<plan::ParamKind> params() const;
    const std::vector<std::string>& body() const { return body_; }
    void set_body(std::vector<std::string> b) { body_ = std::move(b); }

private:
    struct Param {
        std::string name, decl;
        plan::Arg arg;
    };
    std::vector<Param> params_;
    std::vector<std::string> body_;
    std::string preamble_;
    int counter_ = 0;
};

// A kernel ready for NVRTC plus the launch that uses it.
struct KernelJob {
    std::string key;  // readable name; also the entry point
    std::string source;
    plan::LaunchStep launch;  // kernel index filled in when the job is added to a plan
    std::vector<plan::ParamKind> params;
};

}  // namespace stof::codegen
