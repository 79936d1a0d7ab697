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
    }
    return "unknown";
}

}  // namespace stof::plan
