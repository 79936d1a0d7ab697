#include "stof/npy.hpp"

#include "stof/error.hpp"
#include "stof/regular_file.hpp"

#include <algorithm>
#include <fstream>

namespace stof {
namespace {

struct NpyType {
    const char* code;  // kind and size without the byte-order character
    char order;        // byte-order character numpy writes for it
    DType dtype;
};

constexpr NpyType kTypes[] = {
    {"f4", '<', DType::f32}, {"f2", '<', DType::f16}, {"f8", '<', DType::f64}, {"i8", '<', DType::i64},
    {"i4", '<', DType::i32}, {"i1", '|', DType::i8},  {"u1", '|', DType::u8},  {"b1", '|', DType::boolean},
};

// Value of `key` in the header dict, e.g. 'descr': '<f4' → <f4 (quotes stripped).
std::string header_field(const std::string& header, const std::string& key, const std::string& what) {
    const std::string quoted = "'" + key + "'";
    size_t p = header.find(quoted);
    STOF_CHECK(p != std::string::npos, "{}: .npy header has no '{}' field", what, key);
    p = header.find(':', p + quoted.size());
    STOF_CHECK(p != std::string::npos, "{}: .npy header is malformed near '{}'", what, key);
    ++p;
    while (p < header.size() && header[p] == ' ') ++p;
    STOF_CHECK(p < header.size(), "{}: .npy header is truncated", what);
    size_t end;
    if (header[p] == '\'') {
        end = header.find('\'', p + 1);
        STOF_CHECK(end != std::string::npos, "{}: .npy header has an unterminated string", what);
        return header.substr(p + 1, end - p - 1);
    }
    if (header[p] == '(') {
        end = header.find(')', p);
        STOF_CHECK(end != std::string::npos, "{}: .npy header has an unterminated shape", what);
        return header.substr(p, end - p + 1);
    }
    end = header.find_first_of(",}", p);
    STOF_CHECK(end != std::string::npos, "{}: .npy header is malformed near '{}'", what, key);
    return header.substr(p, end - p);
}

// Largest header accepted (numpy writes a few hundred bytes).
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;

Shape parse_shape(const std::string& s, const std::string& what) {
    Shape shape;
    size_t p = 1;  // after '('
    while (p < s.size()) {
        while (p < s.size() && (s[p] == ' ' || s[p] == ',')) ++p;
        if (p >= s.size() || s[p] == ')') break;
        size_t used = 0;
        long long d = 0;
        try {
            d = std::stoll(s.substr(p), &used);
        } catch (const std::exception&) {
            STOF_FAIL("{}: .npy shape '{}' is not a tuple of integers", what, s);
        }
        STOF_CHECK(d >= 0, "{}: .npy shape '{}' has a negative dimension", what, s);
        STOF_CHECK(shape.size() < 64, "{}: .npy shape '{}' has more than 64 dimensions", what, s);
        shape.push_back(d);
        p += used;
    }
    return shape;
}

// The header's description and where the data starts; `bytes` holds at least the header.
struct NpyHeader {
    DType dtype = DType::undefined;
    Shape shape;
    size_t data_start = 0;
    uint64_t data_bytes = 0;  // numel(shape) * dtype size, checked
};

// Bytes of the fixed prefix (magic, version, header length) for a file starting with `bytes`.
size_t npy_prefix(const std::string& bytes, const std::string& what, size_t* header_len) {
    STOF_CHECK(bytes.size() >= 10 && bytes.compare(0, 6, "\x93NUMPY") == 0, "{}: not a .npy file (missing \\x93NUMPY magic)",
               what);
    const int major = static_cast<uint8_t>(bytes[6]);
    if (major == 1) {
        *header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
        return 10;
    }
    if (major == 2 || major == 3) {
        STOF_CHECK(bytes.size() >= 12, "{}: .npy file is truncated", what);
        size_t len = 0;
        for (int i = 0; i < 4; ++i) len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
        STOF_CHECK(len <= kMaxHeaderBytes, "{}: .npy header of {} bytes is too large (at most {})", what, len, kMaxHeaderBytes);
        *header_len = len;
        return 12;
    }
    STOF_FAIL("{}: unsupported .npy format version {}", what, major);
}

NpyHeader parse_header(const std::string& bytes, const std::string& what) {
    size_t header_len = 0;
    const size_t header_start = npy_prefix(bytes, what, &header_len);
    STOF_CHECK(header_start + header_len <= bytes.size(), "{}: .npy header is truncated", what);
    const std::string header = bytes.substr(header_start, header_len);

    NpyHeader h;
    const std::string descr = header_field(header, "descr", what);
    if (descr.size() == 3 && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=' || descr[2] == '1')) {
        for (const NpyType& t : kTypes)
            if (descr.compare(1, 2, t.code) == 0) h.dtype = t.dtype;
    }
    STOF_CHECK(h.dtype != DType::undefined,
               "{}: .npy dtype '{}' is not supported (use float32, float16, float64, int64, int32, int8, uint8 or bool, "
               "little-endian)",
               what, descr);
    STOF_CHECK(header_field(header, "fortran_order", what) == "False",
               "{}: .npy array is in Fortran order; save it with np.ascontiguousarray(a)", what);
    const std::string shape_text = header_field(header, "shape", what);
    STOF_CHECK(!shape_text.empty() && shape_text[0] == '(', "{}: .npy shape '{}' is not a tuple", what, shape_text);
    h.shape = parse_shape(shape_text, what);
    h.data_start = header_start + header_len;
    h.data_bytes = static_cast<uint64_t>(checked_numel(h.shape, what)) * dtype_size(h.dtype);
    return h;
}

void check_data_size(const NpyHeader& h, uint64_t file_bytes, const std::string& what) {
    STOF_CHECK(file_bytes - h.data_start == h.data_bytes, "{}: .npy data has {} bytes but {} {} needs {}", what,
               file_bytes - h.data_start, dtype_name(h.dtype), shape_str(h.shape), h.data_bytes);
}

void check_bools(const Tensor& t, const std::string& what) {
    if (t.dtype != DType::boolean) return;
    for (uint8_t b : t.bytes) STOF_CHECK(b <= 1, "{}: .npy bool array holds a byte other than 0 or 1", what);
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& what) {
    const NpyHeader h = parse_header(bytes, what);
    check_data_size(h, bytes.size(), what);
    Tensor t(h.dtype, h.shape);
    std::copy(bytes.begin() + static_cast<std::ptrdiff_t>(h.data_start), bytes.end(), t.bytes.begin());
    check_bools(t, what);
    return t;
}

Tensor read_npy(const std::string& path) {
    const RegularFile f(path, ".npy file");
    // The header first: its size and the data size are checked before the data is read.
    std::string head = f.read(0, std::min<uint64_t>(f.size(), 12));
    size_t header_len = 0;
    const size_t header_start = npy_prefix(head, path, &header_len);
    STOF_CHECK(header_start + header_len <= f.size(), "{}: .npy header is truncated", path);
    head = f.read(0, header_start + header_len);
    const NpyHeader h = parse_header(head, path);
    check_data_size(h, f.size(), path);
    Tensor t(h.dtype, h.shape);
    f.read_into(t.bytes.data(), h.data_start, h.data_bytes);
    check_bools(t, path);
    return t;
}

std::string serialize_npy(const Tensor& t) {
    std::string descr;
    for (const NpyType& n : kTypes)
        if (n.dtype == t.dtype) descr = std::string(1, n.order) + n.code;
    STOF_CHECK(!descr.empty(), "cannot write {} tensors as .npy", dtype_name(t.dtype));
    std::string shape = "(";
    for (size_t i = 0; i < t.shape.size(); ++i)
        shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 ? "," : i + 1 < t.shape.size() ? ", " : "");
    shape += ")";
    std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(1);
    out += static_cast<char>(0);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>((header.size() >> 8) & 0xff);
    out += header;
    out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    return out;
}

void write_npy(const std::string& path, const Tensor& t) {
    const std::string bytes = serialize_npy(t);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    STOF_CHECK(out.good(), "cannot create '{}'", path);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    STOF_CHECK(out.good(), "cannot write '{}' (disk full?)", path);
}

}  // namespace stof
