#include "stof/npy.hpp"
#include "test_util.hpp"

using namespace stof;

TEST_CASE("npy round trip keeps dtype shape and bytes", "[cpu][npy]") {
    auto rng = test::make_rng();
    const DType types[] = {DType::f32, DType::f16, DType::f64, DType::i64, DType::i32, DType::i8, DType::u8, DType::boolean};
    const Shape shapes[] = {{}, {0}, {7}, {2, 3}, {2, 1, 5, 3}};
    for (DType dt : types) {
        for (const Shape& s : shapes) {
            const Tensor t = test::random_tensor(dt, s, rng);
            const Tensor back = parse_npy(serialize_npy(t), "mem");
            INFO(t.describe());
            CHECK(back.dtype == t.dtype);
            CHECK(back.shape == t.shape);
            CHECK(back.bytes == t.bytes);
        }
    }
}

TEST_CASE("npy header is what numpy writes", "[cpu][npy]") {
    Tensor t(DType::f32, {2, 3});
    const std::string bytes = serialize_npy(t);
    CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") != std::string::npos);
    CHECK((bytes.size() - 24) % 64 == 0);
    Tensor v(DType::i64, {5});
    CHECK(serialize_npy(v).find("'shape': (5,)") != std::string::npos);
    CHECK(serialize_npy(Tensor(DType::u8, {})).find("'shape': ()") != std::string::npos);
}

namespace {
std::string npy_with_header(const std::string& dict, size_t data_bytes) {
    std::string header = dict;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out = std::string("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + std::string(data_bytes, '\x01');
}
}  // namespace

TEST_CASE("npy rejects what it cannot read and says why", "[cpu][npy]") {
    test::require_error([] { parse_npy("hello world", "x.npy"); }, "not a .npy file");
    test::require_error(
        [] { parse_npy(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8), "x.npy"); },
        "not supported");
    test::require_error(
        [] { parse_npy(npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16), "x.npy"); },
        "'<c8' is not supported");
    test::require_error(
        [] { parse_npy(npy_with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 16), "x.npy"); },
        "not supported");
    test::require_error(
        [] { parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16), "x.npy"); },
        "Fortran order");
    test::require_error(
        [] { parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20), "x.npy"); },
        "needs 24");
    std::string bad_bool = npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", 2);
    bad_bool.back() = '\x05';
    test::require_error([&] { parse_npy(bad_bool, "x.npy"); }, "bool array");
    const std::string good = serialize_npy(Tensor(DType::f32, {4}));
    test::require_error([&] { parse_npy(good.substr(0, 30), "x.npy"); }, "truncated");
    test::require_error([] { read_npy("/nonexistent/file.npy"); }, "cannot open");
}

TEST_CASE("f16 and bf16 conversions round to nearest even", "[cpu][dtype]") {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = f16_to_f32(static_cast<uint16_t>(h));
        if (f != f) continue;  // NaN payloads need not round trip
        REQUIRE(f32_to_f16(f) == h);
    }
    CHECK(f32_to_f16(65520.0f) == 0x7c00);            // rounds to inf
    CHECK(f32_to_f16(65519.0f) == 0x7bff);            // largest finite half
    CHECK(f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);  // tie to even (down)
    CHECK(f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);  // tie to even (up)
    CHECK(f32_to_f16(5.96e-8f) == 0x0001);            // smallest subnormal
    CHECK(bf16_to_f32(f32_to_bf16(1.5f)) == 1.5f);
    CHECK(f32_to_bf16(1.0f + 1.0f / 256) == 0x3f80);  // tie to even
}
