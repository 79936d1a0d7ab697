// folded_attention_problems, check_folded_attention_args, launch_folded_attention: attention
// under a residue-folded mask (stof/mask_fold.hpp) as one or p problems of the kernels.
#include "stof/kernels/attention.hpp"

namespace stof::kernels {

namespace {

// The tensor's rows i'p + r of every (batch, head), for one residue r: seq / p rows of p
// times the row stride.
AttnTensor residue_rows(const AttnTensor& t, int32_t r, int32_t p) {
    AttnTensor v = t;
    v.data = static_cast<char*>(t.data) + r * t.stride_s * 2;  // fp16 and bf16: 2 bytes
    v.stride_s = t.stride_s * p;
    return v;
}

}  // namespace

std::vector<AttentionArgs> folded_attention_problems(const AttentionArgs& a, int32_t p) {
    AttentionArgs f = a;
    f.seq_q = a.seq_q / p;
    f.seq_k = a.seq_k / p;
    const AttnTensor* all[4] = {&a.q, &a.k, &a.v, &a.o};
    const auto heads_of = [&](const AttnTensor* t) { return t == &a.k || t == &a.v ? a.kv_heads : a.heads; };
    bool heads_major = !a.key_valid && !a.bias && a.mask.mask_heads == 1,
         pairs = !a.key_valid && !a.bias && a.heads == a.kv_heads && a.mask.mask_heads == 1 && a.mask.mask_batch == 1;
    for (const AttnTensor* t : all) {
        heads_major = heads_major && t->stride_s == heads_of(t) * t->stride_h;
        pairs = pairs && (a.batch == 1 || t->stride_b == heads_of(t) * t->stride_h);
    }
    if (heads_major || (pairs && static_cast<int64_t>(a.batch) * a.heads <= 65535)) {
        // Residue-major virtual heads r * heads + h at r * stride_s + h * stride_h = (r * heads + h) * stride_h
        // (heads_major), or residues as heads at stride_s and (b, h) as the batch at stride_h (pairs).
        for (auto [src, dst] : {std::pair{&a.q, &f.q}, {&a.k, &f.k}, {&a.v, &f.v}, {&a.o, &f.o}}) {
            dst->stride_s = src->stride_s * p;
            if (!heads_major) {
                dst->stride_b = src->stride_h;
                dst->stride_h = src->stride_s;
            }
        }
        if (heads_major) {
            f.heads = a.heads * p;
            f.kv_heads = a.kv_heads * p;
        } else {
            f.batch = a.batch * a.heads;
            f.heads = f.kv_heads = p;
        }
        return {f};
    }
    if (a.batch == 1 && !a.bias && a.mask.mask_batch == 1 && p <= 65535) {
        // The residues as the batch, at stride_s; key_valid's residues are its batch rows.
        for (auto [src, dst] : {std::pair{&a.q, &f.q}, {&a.k, &f.k}, {&a.v, &f.v}, {&a.o, &f.o}}) {
            dst->stride_b = src->stride_s;
            dst->stride_s = src->stride_s * p;
        }
        f.batch = p;
        return {f};
    }
    std::vector<AttentionArgs> out;
    const int64_t kv_words = static_cast<int64_t>(a.batch) * ((f.seq_k + 63) / 64);  // per residue
    const int64_t bias_block = a.bias_stride_h ? a.heads * a.bias_stride_h : f.seq_q * a.bias_stride_s;
    for (int32_t r = 0; r < p; ++r) {
        AttentionArgs g = f;
        if (a.key_valid) g.key_valid = a.key_valid + r * kv_words;
        if (a.bias) g.bias = static_cast<const char*>(a.bias) + r * bias_block * 2;  // fp16 and bf16: 2 bytes
        g.q = residue_rows(a.q, r, p);
        g.k = residue_rows(a.k, r, p);
        g.v = residue_rows(a.v, r, p);
        g.o = residue_rows(a.o, r, p);
        out.push_back(g);
    }
    return out;
}

namespace {

// "" and the problems in `out` when a folded launch supports these arguments, else what is wrong.
std::string folded_problems(const AttentionArgs& a, AttentionKernel kernel, int32_t p, std::vector<AttentionArgs>& out) {
    if (p < 2) return "fold period " + std::to_string(p) + " is below 2";
    if (a.seq_q < 1 || a.seq_k < 1 || a.seq_q % p != 0 || a.seq_k % p != 0)
        return "fold period " + std::to_string(p) + " does not divide seq_q " + std::to_string(a.seq_q) + " and seq_k " +
               std::to_string(a.seq_k);
    out = folded_attention_problems(a, p);
    for (const AttentionArgs& f : out)
        if (std::string e = check_attention_args(f, kernel); !e.empty()) return "folded: " + e;
    return "";
}

}  // namespace

std::string check_folded_attention_args(const AttentionArgs& a, AttentionKernel kernel, int32_t p) {
    std::vector<AttentionArgs> problems;
    return folded_problems(a, kernel, p, problems);
}

cudaError_t launch_folded_attention(const AttentionArgs& a, AttentionKernel kernel, int32_t p, cudaStream_t stream) {
    std::vector<AttentionArgs> problems;
    if (!folded_problems(a, kernel, p, problems).empty()) return cudaErrorInvalidValue;
    for (const AttentionArgs& f : problems)
        if (const cudaError_t e = launch_attention(f, kernel, stream); e != cudaSuccess) return e;
    return cudaSuccess;
}

}  // namespace stof::kernels
