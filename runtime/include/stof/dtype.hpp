// Element types shared by the compiler, the plan format and the runtime.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace stof {

// Values are stable: they are stored in plan files.
enum class DType : uint8_t {
    undefined = 0,
    f32 = 1,
    f16 = 2,
    bf16 = 3,
    f64 = 4,
    i64 = 5,
    i32 = 6,
    i8 = 7,
    u8 = 8,
    boolean = 9,
};

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "f16", ..., "bool"
bool is_float(DType t);           // f32, f16, bf16, f64
bool is_integer(DType t);         // i64, i32, i8, u8

// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);
float bf16_to_f32(uint16_t b);
// x stored as float dtype t and read back (round to nearest even; f64 keeps x).
double round_to_float(DType t, double x);

}  // namespace stof
