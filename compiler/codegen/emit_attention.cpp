// SparseAttention on the prebuilt sparse attention kernels (plan::AttentionStep):
// a constant keep pattern becomes a plan mask (two-level sparse format), one
// computed at run time a run-time plan mask filled by a MaskConvertStep, a
// padding input a KeyValidStep, a bias a [H|1, Sq, Sk] weight broadcast over batch.
// A pattern known at compile time that folds (stof/mask_fold.hpp) is stored folded, the
// padding words and the bias then in their folded layouts.
// Operands are read and written where they are, with the strides of their
// layout (ops/attention_layout.hpp).
#include "codegen/emitters.hpp"
#include "mask/mask_builder.hpp"
#include "precision.hpp"
#include "ops/attention_layout.hpp"
#include "stof/error.hpp"
#include "stof/kernels/attention_instances.hpp"
#include "stof/kernels/selector.hpp"
#include "stof/mask_fold.hpp"
#include "stof/sparse_mask.hpp"

#include <spdlog/spdlog.h>

#include <cstring>

namespace stof::codegen {

void emit_attention(LowerState& st, const ir::Node& n) {
    const ir::Graph& g = st.g;
    const ir::AttentionLayout layout = ir::attention_layout(n);
    const ir::AttentionHeads heads = ir::attention_heads(n, g.value(n.inputs[0]).shape, g.value(n.inputs[1]).shape, layout);
    const ir::AttentionDims qd = ir::attention_dims(g.value(n.inputs[0]).shape, layout.q),
                            kd = ir::attention_dims(g.value(n.inputs[1]).shape, layout.k);
    const int64_t B = qd.b, H = heads.heads, Sq = qd.s, D = qd.d, Hk = heads.kv_heads, Sk = kd.s;
    // The kernels take fp16 or bf16 operands: an fp32 plan's attention reads fp16
    // copies of its operands (fp32 accumulation) and writes through an fp16 temporary.
    const DType dt = st.precision == Precision::fp32 ? DType::f16 : float_dtype(st.precision);
    // The tensor as it is (all its heads), from its first used head on; in another
    // dtype, an input converted now, the output written to a temporary converted after.
    auto operand = [&](ir::ValueId v, char l, int64_t head_offset, bool output = false) {
        int32_t t = st.tensor(v);
        if (st.plan.tensors[static_cast<size_t>(t)].dtype != dt) {
            const plan::TensorDesc d = st.plan.tensors[static_cast<size_t>(t)];  // a copy: add_tensor may reallocate
            t = output ? st.add_tensor(d.name + "_" + dtype_name(dt), dt, d.shape, plan::TensorRole::intermediate)
                       : emit_convert(st, t, dt);  // q, k, v of one projection: converted once
        }
        const ir::AttentionStrides s = ir::attention_strides(ir::attention_dims(g.value(v).shape, l), l);
        plan::AttentionOperand o;
        o.tensor = t;
        o.byte_offset = static_cast<uint64_t>(head_offset * s.h) * dtype_size(dt);
        o.stride_b = s.b;
        o.stride_h = s.h;
        o.stride_s = s.s;
        return o;
    };
    plan::AttentionStep a;
    a.q = operand(n.inputs[0], layout.q, heads.offset[0]);
    a.k = operand(n.inputs[1], layout.k, heads.offset[1]);
    a.v = operand(n.inputs[2], layout.v, heads.offset[2]);
    a.o = operand(n.outputs[0], layout.o, 0, true);
    a.batch = static_cast<int32_t>(B);
    a.heads = static_cast<int32_t>(H);
    a.kv_heads = static_cast<int32_t>(Hk);
    a.seq_q = static_cast<int32_t>(Sq);
    a.seq_k = static_cast<int32_t>(Sk);
    a.head_dim = static_cast<int32_t>(D);
    a.scale = static_cast<float>(n.attrs.f("scale", 1.0));

    // A keep pattern that arrives at run time ([1|B,1|H,Sq,Sk] bool): converted on the
    // GPU once per run and value, before its first attention.
    const bool has_keep = n.inputs.size() > 3 && n.inputs[3] != ir::kNoValue;
    const bool has_bias = n.inputs.size() > 4 && n.inputs[4] != ir::kNoValue,
               has_padding = n.inputs.size() > 5 && n.inputs[5] != ir::kNoValue;
    const ir::MaskTilesAttr tiles = n.attrs.mask_tiles("keep_tiles");
    if (has_keep && !g.value(n.inputs[3]).data) {
        auto [it, fresh] = st.runtime_masks.try_emplace(n.inputs[3], -1);
        if (fresh) {
            const ir::Value& kv = g.value(n.inputs[3]);
            STOF_CHECK(kv.dtype == DType::boolean && kv.shape.size() == 4,
                       "{}: a run-time keep must be bool [1|B,1|H,Sq,Sk], not {} {}", n.label(), dtype_name(kv.dtype),
                       shape_str(kv.shape));
            plan::MaskEntry e;
            e.spec = n.attrs.s("mask", "dense");
            e.runtime = true;
            e.mask.rows = static_cast<int32_t>(Sq);
            e.mask.cols = static_cast<int32_t>(Sk);
            e.mask.tile_m = e.mask.tile_n = 64;
            e.mask.mask_batch = static_cast<int32_t>(kv.shape[0]);
            e.mask.mask_heads = static_cast<int32_t>(kv.shape[1]);
            e.kernel_reason = st.attention_kernel != AttentionKernelChoice::selector
                                  ? fmt::format("--attention-kernel {}", attention_kernel_choice_name(st.attention_kernel))
                                  : "the pattern arrives at run time: the general kernel";
            it->second = static_cast<int32_t>(st.plan.masks.size());
            st.plan.masks.push_back(std::move(e));
            plan::Step c;
            c.kind = plan::StepKind::mask_convert;
            c.label = "mask_convert";
            c.nodes = n.name;
            c.mask_convert.keep = st.tensor(n.inputs[3]);
            c.mask_convert.mask = it->second;
            st.add_step(std::move(c));
        }
        a.mask = it->second;
        a.kernel = st.attention_kernel == AttentionKernelChoice::row_wise ? 1 : 0;
        spdlog::info("{}: mask {} built at run time from '{}', {} kernel", n.label(), n.attrs.s("mask", "dense"),
                     g.value(n.inputs[3]).name, a.kernel == 1 ? "row-wise" : "block-wise");
    } else if (auto [it, fresh] = st.static_masks.try_emplace({has_keep ? n.inputs[3] : ir::kNoValue, tiles.get(), Sq, Sk});
               !fresh) {  // the same pattern as an earlier attention
        a.mask = it->second.mask;
        a.kernel = it->second.kernel;
        a.fold = it->second.fold;
    } else {
        // The pattern: keep_tiles, the keep constant ([Sq,Sk] or [1|B,1|H,Sq,Sk]) or all kept.
        plan::MaskEntry entry;
        entry.spec = n.attrs.s("mask", "dense");
        if (tiles) {
            entry.mask = *tiles;
        } else if (has_keep) {
            const Tensor& keep = *g.value(n.inputs[3]).data;
            const int64_t mb = keep.shape.size() == 4 ? keep.shape[0] : 1, mh = keep.shape.size() == 4 ? keep.shape[1] : 1;
            std::vector<uint8_t> dense(static_cast<size_t>(keep.numel()));
            for (int64_t k = 0; k < keep.numel(); ++k) dense[static_cast<size_t>(k)] = keep.get_i64(k) != 0;
            entry.mask = from_dense(dense.data(), static_cast<int32_t>(mb), static_cast<int32_t>(mh), static_cast<int32_t>(Sq),
                                    static_cast<int32_t>(Sk), 64, 64);
        } else {
            entry.mask = build_mask(MaskSpec{}, Sq, Sk);  // every tile full
        }
        if (MaskFold f = find_fold(entry.mask); f.period > 1) {
            a.fold = f.period;
            entry.mask = std::move(f.mask);
        }
        const SparseMaskStats stats = mask_stats(entry.mask);
        const kernels::SelectorDecision decision = kernels::decide_attention_kernel(stats.rho, Sk / a.fold);
        std::string kernel = decision.kernel_name(), reason = decision.reason;
        bool row_wise = decision.row_wise;
        if (st.attention_kernel != AttentionKernelChoice::selector) {
            kernel = attention_kernel_choice_name(st.attention_kernel);
            reason = fmt::format("--attention-kernel {} (the selector: {})", kernel, decision.reason);
            row_wise = st.attention_kernel == AttentionKernelChoice::row_wise;
        }
        entry.kernel_reason = reason;
        a.kernel = row_wise ? 1 : 0;
        a.mask = static_cast<int32_t>(st.plan.masks.size());
        it->second = {a.mask, a.kernel, a.fold};
        st.plan.masks.push_back(std::move(entry));
        spdlog::info("{}: mask {}{} density {:.4f}, tiles {} empty / {} full / {} partial, {} kernel ({})", n.label(),
                     n.attrs.s("mask", "dense"), a.fold > 1 ? fmt::format(" folded by {}", a.fold) : "", stats.density,
                     stats.empty_tiles, stats.full_tiles, stats.partial_tiles, kernel, reason);
    }

    // Hopper: the block-wise choice runs the sm_90a kernel (TMA, wgmma; it falls back to the
    // sm_80 kernel on other GPUs); --attention-kernel block-wise keeps sm_80.
    if (a.kernel == 0 && st.arch == "sm_90" && kernels::sm90_instance_head_dim(D) != 0 &&
        st.attention_kernel == AttentionKernelChoice::selector) {
        a.kernel = 2;
        const int instance = kernels::sm90_instance_head_dim(D);
        spdlog::info("{}: block-wise kernel for sm_90 (TMA, wgmma), head_dim {}{}", n.label(), D,
                     instance == D ? "" : fmt::format(" (on the instance of {}, zero-padded)", instance));
    }

    // Padding: packed into validity words once per run (in the layout of the attention's
    // fold), shared by every attention reading the same input with the same fold.
    if (has_padding) {
        auto [it, fresh] = st.key_valid_words.try_emplace({n.inputs[5], a.fold}, -1);
        if (fresh) {
            plan::Step kv;
            kv.kind = plan::StepKind::key_valid;
            kv.label = "key_valid";
            kv.nodes = n.name;
            kv.key_valid.mask = st.tensor(n.inputs[5]);
            const std::string name = g.value(n.inputs[5]).name + "_key_valid" +
                                     (a.fold > 1 ? fmt::format("_fold{}", a.fold) : "");
            const int64_t W = (Sk / a.fold + 63) / 64;
            kv.key_valid.words = st.add_tensor(name, DType::i64, a.fold == 1 ? Shape{B, W} : Shape{a.fold, B, W},
                                               plan::TensorRole::intermediate);
            kv.key_valid.batch = static_cast<int32_t>(B);
            kv.key_valid.seq = static_cast<int32_t>(Sk);
            kv.key_valid.fold = a.fold;
            it->second = kv.key_valid.words;
            st.add_step(std::move(kv));
        }
        a.key_valid = it->second;
    }
    // Bias: [1, 1|H, Sq, Sk] (or [Sq, Sk]) stored as [1|H, Sq, Sk] in the attention dtype;
    // with a fold p, as its residue blocks [p, 1|H, Sq/p, Sk/p] (bias(h, i'p + r, j'p + r)).
    if (has_bias) {
        const Tensor& bias = *g.value(n.inputs[4]).data;
        const int64_t bh = bias.shape.size() == 4 ? bias.shape[1] : 1, p = a.fold, fq = Sq / p, fk = Sk / p;
        Tensor b(bias.dtype, {p, bh, fq, fk});
        const size_t es = dtype_size(bias.dtype);
        if (p == 1) b.bytes = bias.bytes;
        else
            for (int64_t r = 0; r < p; ++r)
                for (int64_t h = 0; h < bh; ++h)
                    for (int64_t i = 0; i < fq; ++i)
                        for (int64_t j = 0; j < fk; ++j)
                            std::memcpy(b.bytes.data() + static_cast<size_t>(((r * bh + h) * fq + i) * fk + j) * es,
                                        bias.bytes.data() + static_cast<size_t>((h * Sq + i * p + r) * Sk + j * p + r) * es,
                                        es);
        a.bias = st.add_weight(cast(b, dt), n.name + "_bias");
        a.bias_stride_h = bh == 1 ? 0 : fq * fk;
        a.bias_stride_s = fk;
    }
    plan::Step s;
    s.kind = plan::StepKind::attention;
    s.label = "sparse_attention";
    s.nodes = n.name;
    s.attention = a;
    st.add_step(std::move(s));
    if (const int32_t out = st.tensor(n.outputs[0]); out != a.o.tensor) emit_convert_into(st, a.o.tensor, out);
}

}  // namespace stof::codegen
