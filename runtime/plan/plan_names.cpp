#include "stof/plan.hpp"

namespace stof::plan {

const char* step_kind_name(StepKind k) {
    switch (k) {
        case StepKind::launch: return "launch";
        case StepKind::gemm: return "gemm";
        case StepKind::attention: return "attention";
        case StepKind::key_valid: return "key_valid";
        case StepKind::copy: return "copy";
        case StepKind::mask_convert: return "mask_convert";
    }
    return "unknown";
}

const char* epilogue_name(Epilogue e) {
    switch (e) {
        case Epilogue::none: return "none";
        case Epilogue::bias: return "bias";
        case Epilogue::gelu: return "gelu";
        case Epilogue::bias_gelu: return "bias_gelu";
        case Epilogue::relu: return "relu";
        case Epilogue::bias_relu: return "bias_relu";
        case Epilogue::bias_gelu_erf: return "bias_gelu_erf";
        case Epilogue::swiglu: return "swiglu";
        case Epilogue::rotary: return "rotary";
    }
    return "unknown";
}

const char* fused_gemm_kernel_name(Epilogue e) {
    return e == Epilogue::swiglu          ? "gemm_swiglu"
           : e == Epilogue::rotary        ? "gemm_rotary"
           : e == Epilogue::bias_gelu_erf ? "gemm_gelu"
                                          : "cublasLt";
}

const char* attention_kernel_name(int32_t kernel) {
    return kernel == 1 ? "attention_row_wise" : kernel == 2 ? "attention_block_wise_sm90" : "attention_block_wise";
}

std::string step_label(const Step& s) {
    if (!s.label.empty()) return s.label;
    return s.kind == StepKind::attention ? "sparse_attention" : step_kind_name(s.kind);
}

std::string step_kernel_name(const Plan& p, const Step& s) {
    switch (s.kind) {
        case StepKind::launch: return p.kernels.at(static_cast<size_t>(s.launch.kernel)).key;
        case StepKind::gemm: return fused_gemm_kernel_name(s.gemm.epilogue);
        case StepKind::attention: return attention_kernel_name(s.attention.kernel);
        case StepKind::key_valid: return "key_valid";
        case StepKind::copy: return "memcpy";
        case StepKind::mask_convert: return "mask_convert";
    }
    return "unknown";
}

}  // namespace stof::plan
