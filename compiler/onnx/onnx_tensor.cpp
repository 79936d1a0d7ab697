#include "onnx/onnx_tensor.hpp"

#include "stof/error.hpp"
#include "stof/memory_limit.hpp"
#include "stof/regular_file.hpp"

#include <algorithm>
#include <filesystem>

namespace stof {

DType dtype_from_onnx(int32_t t, const std::string& what) {
    switch (t) {
        case onnx::TensorProto::FLOAT: return DType::f32;
        case onnx::TensorProto::FLOAT16: return DType::f16;
        case onnx::TensorProto::BFLOAT16: return DType::bf16;
        case onnx::TensorProto::DOUBLE: return DType::f64;
        case onnx::TensorProto::INT64: return DType::i64;
        case onnx::TensorProto::INT32: return DType::i32;
        case onnx::TensorProto::INT8: return DType::i8;
        case onnx::TensorProto::UINT8: return DType::u8;
        case onnx::TensorProto::BOOL: return DType::boolean;
        default: break;
    }
    STOF_FAIL(
        "{}: ONNX element type {} is not supported (supported: float, float16, bfloat16, double, int64, int32, "
        "int8, uint8, bool)",
        what, t);
}

namespace {

int64_t parse_count(const std::string& text, const std::string& what) {
    int64_t v = 0;
    STOF_CHECK(!text.empty() && text.size() < 19, "{}: external data field '{}' is not a byte count", what, text);
    for (char c : text) {
        STOF_CHECK(c >= '0' && c <= '9', "{}: external data field '{}' is not a byte count", what, text);
        v = v * 10 + (c - '0');
    }
    return v;
}

// Reads the tensor's `expected` bytes of external data into dst (resized to them).
void read_external(const onnx::TensorProto& t, const std::string& base_dir, size_t expected, std::vector<uint8_t>& dst) {
    const std::string what = "initializer '" + t.name() + "'";
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") location = kv.value();
        else if (kv.key() == "offset") offset = parse_count(kv.value(), what);
        else if (kv.key() == "length") length = parse_count(kv.value(), what);
    }
    STOF_CHECK(!location.empty(), "{}: external data has no location", what);
    STOF_CHECK(!base_dir.empty(), "{}: external data '{}' cannot be resolved for a model loaded from memory", what, location);
    namespace fs = std::filesystem;
    const fs::path rel(location);
    STOF_CHECK(rel.is_relative(), "{}: external data path '{}' must be relative to the model", what, location);
    for (const auto& part : rel)
        STOF_CHECK(part != "..", "{}: external data path '{}' leaves the model's directory", what, location);
    // Symbolic links are resolved: the file itself must lie under the model's folder.
    std::error_code ec;
    const fs::path root = fs::canonical(base_dir, ec);
    STOF_CHECK(!ec, "{}: cannot resolve the model's folder '{}': {}", what, base_dir, ec.message());
    const fs::path file = fs::weakly_canonical(root / rel, ec);
    STOF_CHECK(!ec, "{}: cannot resolve external data path '{}': {}", what, location, ec.message());
    const auto [r, f] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
    STOF_CHECK(r == root.end() && f != file.end(),
               "{}: external data path '{}' resolves to '{}', outside the model's folder '{}' (symbolic links may not "
               "leave it)",
               what, location, file.string(), root.string());
    if (length < 0) length = static_cast<int64_t>(expected);
    STOF_CHECK(offset >= 0 && static_cast<size_t>(length) == expected,
               "{}: external data length {} does not match the tensor's {} bytes", what, length, expected);
    try {
        const RegularFile in(file.string(), "external data file");
        STOF_CHECK(static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) <= in.size(),
                   "external data file '{}' is too short ({} bytes, needs {})", file.string(), in.size(), offset + length);
        check_memory(static_cast<uint64_t>(length), fmt::format("reading external data file '{}'", file.string()));
        dst.resize(static_cast<size_t>(length));
        in.read_into(dst.data(), static_cast<uint64_t>(offset), static_cast<uint64_t>(length));
    } catch (const Error& e) {
        STOF_FAIL("{}: {}", what, e.what());
    }
}

}  // namespace

Tensor tensor_from_onnx(const onnx::TensorProto& t, const std::string& base_dir) {
    const std::string what = t.name().empty() ? std::string("a tensor") : "tensor '" + t.name() + "'";
    STOF_CHECK(t.has_data_type(), "{}: no element type", what);
    const DType dtype = dtype_from_onnx(t.data_type(), what);
    Shape shape(t.dims().begin(), t.dims().end());
    for (int64_t d : shape) STOF_CHECK(d >= 0 && d < (int64_t{1} << 40), "{}: invalid dimension {}", what, d);
    STOF_CHECK(!t.has_segment(), "{}: segmented tensors are not supported", what);
    int64_t count = 1;
    for (int64_t d : shape) {
        STOF_CHECK(d == 0 || count <= (int64_t{1} << 40) / d, "{}: shape {} is too large", what, shape_str(shape));
        count *= d;
    }
    const size_t nbytes = static_cast<size_t>(count) * dtype_size(dtype);

    Tensor out;
    out.dtype = dtype;
    out.shape = shape;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        read_external(t, base_dir, nbytes, out.bytes);
    } else if (t.has_raw_data()) {
        STOF_CHECK(t.raw_data().size() == nbytes, "{}: raw data has {} bytes but {}{} needs {}", what, t.raw_data().size(),
                   dtype_name(dtype), shape_str(shape), nbytes);
        out.bytes.assign(t.raw_data().begin(), t.raw_data().end());
    } else {
        // The typed field this dtype is stored in, checked before anything is allocated.
        int held = 0;
        switch (dtype) {
            case DType::f32: held = t.float_data_size(); break;
            case DType::f64: held = t.double_data_size(); break;
            case DType::i64: held = t.int64_data_size(); break;
            case DType::i32:
            case DType::f16:
            case DType::bf16:
            case DType::i8:
            case DType::u8:
            case DType::boolean: held = t.int32_data_size(); break;
            case DType::undefined: break;
        }
        STOF_CHECK(held == count, "{}: holds {} values but shape {} needs {}", what, held, shape_str(shape), count);
        out.bytes.assign(nbytes, 0);
        for (int i = 0; i < held; ++i) {
            switch (dtype) {
                case DType::f32: out.data<float>()[i] = t.float_data(i); break;
                case DType::f64: out.data<double>()[i] = t.double_data(i); break;
                case DType::i64: out.data<int64_t>()[i] = t.int64_data(i); break;
                case DType::i32: out.data<int32_t>()[i] = t.int32_data(i); break;
                case DType::f16:
                case DType::bf16: out.data<uint16_t>()[i] = static_cast<uint16_t>(t.int32_data(i)); break;
                case DType::i8:
                case DType::u8:
                case DType::boolean: out.data<uint8_t>()[i] = static_cast<uint8_t>(t.int32_data(i)); break;
                case DType::undefined: break;
            }
        }
    }
    if (dtype == DType::boolean)
        for (uint8_t& b : out.bytes) b = b != 0;
    return out;
}

}  // namespace stof
