// Types and conversions shared by every generated kernel. NVRTC-clean: no host
// headers. Half and bfloat16 values are carried as raw 16-bit patterns and
// converted with PTX cvt instructions (sm_80 or newer).
#pragma once

namespace stof {

typedef long long i64;
typedef unsigned long long u64;

struct __align__(2) f16 {
    unsigned short bits;
};
struct __align__(2) bf16 {
    unsigned short bits;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(f16 x) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
}
__device__ __forceinline__ float to_float(bf16 x) { return __uint_as_float(static_cast<unsigned>(x.bits) << 16); }
__device__ __forceinline__ float to_float(i64 x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_float(int x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_float(signed char x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_float(unsigned char x) { return static_cast<float>(x); }
__device__ __forceinline__ float to_float(bool x) { return x ? 1.0f : 0.0f; }

// Stores v converted to the destination type (floats round to nearest even;
// float → integer truncates toward zero, as ONNX Cast does).
__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(f16* p, float v) {
    unsigned short b;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(v));
    p->bits = b;
}
__device__ __forceinline__ void store(bf16* p, float v) {
    unsigned short b;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(v));
    p->bits = b;
}
__device__ __forceinline__ void store(i64* p, float v) { *p = static_cast<i64>(v); }
__device__ __forceinline__ void store(int* p, float v) { *p = static_cast<int>(v); }
__device__ __forceinline__ void store(signed char* p, float v) { *p = static_cast<signed char>(v); }
__device__ __forceinline__ void store(unsigned char* p, float v) { *p = static_cast<unsigned char>(v); }
__device__ __forceinline__ void store(bool* p, float v) { *p = v != 0.0f; }
__device__ __forceinline__ void store(i64* p, i64 v) { *p = v; }
__device__ __forceinline__ void store(int* p, i64 v) { *p = static_cast<int>(v); }
__device__ __forceinline__ void store(signed char* p, i64 v) { *p = static_cast<signed char>(v); }
__device__ __forceinline__ void store(unsigned char* p, i64 v) { *p = static_cast<unsigned char>(v); }
__device__ __forceinline__ void store(bool* p, i64 v) { *p = v != 0; }
__device__ __forceinline__ void store(float* p, i64 v) { *p = static_cast<float>(v); }
__device__ __forceinline__ void store(f16* p, i64 v) { store(p, static_cast<float>(v)); }
__device__ __forceinline__ void store(bf16* p, i64 v) { store(p, static_cast<float>(v)); }
__device__ __forceinline__ void store(bool* p, bool v) { *p = v; }
__device__ __forceinline__ void store(float* p, bool v) { *p = v ? 1.0f : 0.0f; }
__device__ __forceinline__ void store(f16* p, bool v) { store(p, v ? 1.0f : 0.0f); }
__device__ __forceinline__ void store(bf16* p, bool v) { store(p, v ? 1.0f : 0.0f); }
__device__ __forceinline__ void store(i64* p, bool v) { *p = v ? 1 : 0; }
__device__ __forceinline__ void store(int* p, bool v) { *p = v ? 1 : 0; }
__device__ __forceinline__ void store(unsigned char* p, bool v) { *p = v ? 1 : 0; }
__device__ __forceinline__ void store(signed char* p, bool v) { *p = v ? 1 : 0; }

// Integer loads keep integers exact.
__device__ __forceinline__ i64 to_int(i64 x) { return x; }
__device__ __forceinline__ i64 to_int(int x) { return x; }
__device__ __forceinline__ i64 to_int(signed char x) { return x; }
__device__ __forceinline__ i64 to_int(unsigned char x) { return x; }
__device__ __forceinline__ i64 to_int(bool x) { return x ? 1 : 0; }
__device__ __forceinline__ i64 to_int(float x) { return static_cast<i64>(x); }
__device__ __forceinline__ i64 to_int(f16 x) { return static_cast<i64>(to_float(x)); }
__device__ __forceinline__ i64 to_int(bf16 x) { return static_cast<i64>(to_float(x)); }

// Rounds through a 16-bit float type (Cast to float16 / bfloat16 inside a fused chain).
__device__ __forceinline__ float round_f16(float v) {
    f16 h;
    store(&h, v);
    return to_float(h);
}
__device__ __forceinline__ float round_bf16(float v) {
    bf16 h;
    store(&h, v);
    return to_float(h);
}

__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_tanh(float x) {
    return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }
__device__ __forceinline__ float sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
__device__ __forceinline__ i64 sign(i64 x) { return (x > 0) - (x < 0); }
__device__ __forceinline__ i64 floor_mod(i64 a, i64 b) {
    const i64 r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
__device__ __forceinline__ float floor_mod(float a, float b) {
    const float r = fmodf(a, b);
    return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
// ONNX Min/Max propagate NaN.
__device__ __forceinline__ float nan_min(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
__device__ __forceinline__ float nan_max(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
__device__ __forceinline__ i64 nan_min(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ i64 nan_max(i64 a, i64 b) { return a > b ? a : b; }

}  // namespace stof
