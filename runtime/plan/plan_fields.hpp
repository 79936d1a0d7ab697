// The fields of each schedule step, named once, in the order the plan format
// stores them (stof/plan_format.hpp): compiler/plan/plan_writer.cpp encodes
// them, plan_reader.cpp decodes them and `stofc inspect --json` lists them.
//
// fields(s, f) calls f(name, member) for every member of s (const or not). A
// member is an integer or float (stored as is, little-endian), a bool or an enum
// (one byte; an enum's valid values are 0..kEnumMax<E>), a fixed array (each
// element), a struct with fields() of its own, or a std::vector of such structs
// (a u32 count, then each element).
#pragma once

#include "stof/plan.hpp"

#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace stof::plan {

template <class S, class T>
concept FieldsOf = std::same_as<std::remove_const_t<S>, T>;

template <class E> inline constexpr uint8_t kEnumMax = 0;
template <> inline constexpr uint8_t kEnumMax<ParamKind> = static_cast<uint8_t>(ParamKind::f32);
template <> inline constexpr uint8_t kEnumMax<Epilogue> = static_cast<uint8_t>(Epilogue::rotary);
template <> inline constexpr uint8_t kEnumMax<StepKind> = static_cast<uint8_t>(StepKind::mask_convert);

template <class S, class F>
requires FieldsOf<S, Arg>
void fields(S& a, F&& f) {
    f("kind", a.kind);
    f("tensor", a.tensor);
    f("byte_offset", a.byte_offset);
    f("i", a.i);
    f("f", a.f);
}

template <class S, class F>
requires FieldsOf<S, LaunchStep>
void fields(S& l, F&& f) {
    f("kernel", l.kernel);
    f("grid", l.grid);
    f("block", l.block);
    f("shared_bytes", l.shared_bytes);
    f("args", l.args);
}

template <class S, class F>
requires FieldsOf<S, RotaryOperands>
void fields(S& r, F&& f) {
    f("cos", r.cos);
    f("sin", r.sin);
    f("rows", r.rows);
    f("cols", r.cols);
    f("head_dim", r.head_dim);
}

template <class S, class F>
requires FieldsOf<S, GemmStep>
void fields(S& g, F&& f) {
    f("a", g.a);
    f("b", g.b);
    f("c", g.c);
    f("d", g.d);
    f("bias", g.bias);
    f("a_offset", g.a_offset);
    f("b_offset", g.b_offset);
    f("c_offset", g.c_offset);
    f("d_offset", g.d_offset);
    f("trans_a", g.trans_a);
    f("trans_b", g.trans_b);
    f("m", g.m);
    f("n", g.n);
    f("k", g.k);
    f("batch", g.batch);
    f("lda", g.lda);
    f("ldb", g.ldb);
    f("ldc", g.ldc);
    f("ldd", g.ldd);
    f("batch_stride_a", g.batch_stride_a);
    f("batch_stride_b", g.batch_stride_b);
    f("batch_stride_c", g.batch_stride_c);
    f("batch_stride_d", g.batch_stride_d);
    f("alpha", g.alpha);
    f("beta", g.beta);
    f("epilogue", g.epilogue);
    f("algo", g.algo);
    f("rotary", g.rotary);
}

template <class S, class F>
requires FieldsOf<S, AttentionOperand>
void fields(S& o, F&& f) {
    f("tensor", o.tensor);
    f("byte_offset", o.byte_offset);
    f("stride_b", o.stride_b);
    f("stride_h", o.stride_h);
    f("stride_s", o.stride_s);
}

template <class S, class F>
requires FieldsOf<S, AttentionStep>
void fields(S& a, F&& f) {
    f("q", a.q);
    f("k", a.k);
    f("v", a.v);
    f("o", a.o);
    f("batch", a.batch);
    f("heads", a.heads);
    f("kv_heads", a.kv_heads);
    f("seq_q", a.seq_q);
    f("seq_k", a.seq_k);
    f("head_dim", a.head_dim);
    f("scale", a.scale);
    f("mask", a.mask);
    f("key_valid", a.key_valid);
    f("bias", a.bias);
    f("bias_stride_h", a.bias_stride_h);
    f("bias_stride_s", a.bias_stride_s);
    f("kernel", a.kernel);
    f("fold", a.fold);
}

template <class S, class F>
requires FieldsOf<S, KeyValidStep>
void fields(S& k, F&& f) {
    f("mask", k.mask);
    f("words", k.words);
    f("batch", k.batch);
    f("seq", k.seq);
    f("fold", k.fold);
}

template <class S, class F>
requires FieldsOf<S, CopyStep>
void fields(S& c, F&& f) {
    f("src", c.src);
    f("dst", c.dst);
    f("src_offset", c.src_offset);
    f("dst_offset", c.dst_offset);
    f("bytes", c.bytes);
}

template <class S, class F>
requires FieldsOf<S, MaskConvertStep>
void fields(S& m, F&& f) {
    f("keep", m.keep);
    f("mask", m.mask);
}

// f(body) on the member of step s that its kind selects.
template <class S, class F>
requires FieldsOf<S, Step>
void with_step_body(S& s, F&& f) {
    switch (s.kind) {
        case StepKind::launch: f(s.launch); return;
        case StepKind::gemm: f(s.gemm); return;
        case StepKind::attention: f(s.attention); return;
        case StepKind::key_valid: f(s.key_valid); return;
        case StepKind::copy: f(s.copy); return;
        case StepKind::mask_convert: f(s.mask_convert); return;
    }
}

template <class T> struct IsVector : std::false_type {};
template <class T> struct IsVector<std::vector<T>> : std::true_type {};

// The bytes the format stores for a T (a vector: its count alone).
template <class T> size_t encoded_bytes() {
    if constexpr (std::is_enum_v<T> || std::is_same_v<T, bool>) return 1;
    else if constexpr (std::is_arithmetic_v<T>) return sizeof(T);
    else if constexpr (std::is_array_v<T>) return std::extent_v<T> * encoded_bytes<std::remove_extent_t<T>>();
    else if constexpr (IsVector<T>::value) return 4;
    else {
        size_t n = 0;
        T t{};
        fields(t, [&n]<class M>(const char*, M&) { n += encoded_bytes<M>(); });
        return n;
    }
}

}  // namespace stof::plan
