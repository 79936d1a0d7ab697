#include "stof/plan.hpp"

#include <algorithm>

namespace stof::plan {

std::vector<int32_t> step_tensors(const Step& s) {
    std::vector<int32_t> t;
    switch (s.kind) {
        case StepKind::launch:
            for (const Arg& a : s.launch.args)
                if (a.kind == ParamKind::pointer) t.push_back(a.tensor);
            break;
        case StepKind::gemm:
            t = {s.gemm.a, s.gemm.b, s.gemm.c, s.gemm.d, s.gemm.bias, s.gemm.rotary.cos, s.gemm.rotary.sin};
            break;
        case StepKind::attention:
            t = {s.attention.q.tensor, s.attention.k.tensor,  s.attention.v.tensor,
                 s.attention.o.tensor, s.attention.key_valid, s.attention.bias};
            break;
        case StepKind::key_valid: t = {s.key_valid.mask, s.key_valid.words}; break;
        case StepKind::copy: t = {s.copy.src, s.copy.dst}; break;
        case StepKind::mask_convert: t = {s.mask_convert.keep}; break;
    }
    t.erase(std::remove(t.begin(), t.end(), -1), t.end());
    return t;
}

bool is_padding_mask(const Plan& p, int32_t t) {
    return t >= 0 && std::any_of(p.steps.begin(), p.steps.end(),
                                 [t](const Step& s) { return s.kind == StepKind::key_valid && s.key_valid.mask == t; });
}

}  // namespace stof::plan
