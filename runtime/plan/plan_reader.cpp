#include "plan/plan_reader.hpp"

#include "plan/plan_fields.hpp"
#include "stof/error.hpp"
#include "stof/plan_format.hpp"
#include "stof/regular_file.hpp"
#include "stof/shape_ranges.hpp"
#include "stof/version.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

namespace stof::plan {

static_assert(std::endian::native == std::endian::little, "the plan reader assumes a little-endian host");

namespace {

// Bounds-checked reads from one payload; failures throw stof::Error with the detail only
// (the caller prefixes the file and section).
class Cursor {
public:
    Cursor(const uint8_t* data, size_t size) : p_(data), n_(size) {}

    size_t remaining() const { return n_ - pos_; }
    size_t position() const { return pos_; }

    void need(size_t bytes, const char* what) const {
        STOF_CHECK(bytes <= remaining(), "{} at byte {} runs past the end ({} bytes left)", what, pos_, remaining());
    }
    template <class T> T fixed(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    uint8_t u8(const char* what) { return fixed<uint8_t>(what); }
    uint32_t u32(const char* what) { return fixed<uint32_t>(what); }
    int32_t i32(const char* what) { return fixed<int32_t>(what); }
    uint64_t u64(const char* what) { return fixed<uint64_t>(what); }
    int64_t i64(const char* what) { return fixed<int64_t>(what); }
    float f32(const char* what) { return std::bit_cast<float>(fixed<uint32_t>(what)); }
    bool flag(const char* what) {
        const uint8_t v = u8(what);
        STOF_CHECK(v <= 1, "{} is {}, not 0 or 1", what, v);
        return v != 0;
    }
    // An enum stored as u8 whose valid values are 0..max.
    template <class E> E enumeration(uint8_t max, const char* what) {
        const uint8_t v = u8(what);
        STOF_CHECK(v <= max, "{} has the unknown value {}", what, v);
        return static_cast<E>(v);
    }
    // An element count whose elements take at least `min_bytes` each.
    uint32_t count(size_t min_bytes, const char* what) {
        const uint32_t c = u32(what);
        STOF_CHECK(static_cast<uint64_t>(c) * min_bytes <= remaining(), "{} {} needs more than the {} bytes left", what, c,
                   remaining());
        return c;
    }
    std::string str(const char* what) {
        const size_t at = pos_;
        const uint32_t len = u32(what);
        STOF_CHECK(len <= remaining(), "{} at byte {}: a string of {} bytes runs past the end ({} bytes left)", what, at, len,
                   remaining());
        std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
        pos_ += len;
        return s;
    }
    template <class T> std::vector<T> array(const char* what) {
        const uint32_t c = count(sizeof(T), what);
        std::vector<T> v(c);
        if (c) std::memcpy(v.data(), p_ + pos_, static_cast<size_t>(c) * sizeof(T));
        pos_ += static_cast<size_t>(c) * sizeof(T);
        return v;
    }
    void finish() const { STOF_CHECK(remaining() == 0, "{} unexpected bytes after the last entry", remaining()); }

private:
    const uint8_t* p_;
    size_t n_;
    size_t pos_ = 0;
};

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
uint64_t load_u64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// A NUL-padded ASCII field as a printable string ('?' for anything else).
std::string ascii_field(const uint8_t* p, size_t n) {
    std::string s;
    for (size_t i = 0; i < n && p[i] != 0; ++i) s += p[i] >= 0x20 && p[i] < 0x7f ? static_cast<char>(p[i]) : '?';
    return s;
}

struct Section {
    std::string name;
    uint64_t offset = 0, size = 0;
    uint32_t crc = 0;
};

Meta decode_meta(Cursor& c) {
    Meta m;
    m.model = c.str("model");
    m.stofc_version = c.str("stofc_version");
    m.target_arch = c.str("target_arch");
    m.nvrtc_version = c.str("nvrtc_version");
    m.precision = c.str("precision");
    m.created = c.str("created");
    m.notes = c.str("notes");
    return m;
}

void decode_segments(Cursor& c, Plan& p) {
    const uint32_t n = c.count(48, "segment count");
    p.segments.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        SegmentInfo& s = p.segments[i];
        s.kind = c.str("kind");
        s.templ = c.str("template");
        s.config = c.str("config");
        s.source = c.str("source");
        STOF_CHECK(s.source == "measured" || s.source == "cache" || s.source == "model" || s.source == "rule",
                   "segment {}: unknown source '{}'", i, s.source);
        s.time_us = c.f32("time");
        s.moves = c.str("moves");
        s.nodes = c.str("nodes");
        s.sweep_space = c.u32("sweep_space");
        s.stage2_us = c.f32("stage2_us");
        s.stage2_config = c.str("stage2_config");
        s.sweep_us = c.f32("sweep_us");
        s.sweep_config = c.str("sweep_config");
    }
}

void decode_tensors(Cursor& c, Plan& p) {
    p.arena_bytes = c.u64("arena_bytes");
    const uint32_t n = c.count(35, "tensor count");
    p.tensors.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        TensorDesc& t = p.tensors[i];
        try {
            t.name = c.str("name");
            t.dtype = c.enumeration<DType>(static_cast<uint8_t>(DType::boolean), "dtype");
            t.shape = c.array<int64_t>("shape rank");
            t.buffer = c.enumeration<BufferKind>(1, "buffer");
            t.offset = c.u64("offset");
            t.role = c.enumeration<TensorRole>(3, "role");
            t.int_lo = c.i64("int_lo");
            t.int_hi = c.i64("int_hi");
        } catch (const Error& e) {
            STOF_FAIL("tensor {}: {}", i, e.what());
        }
    }
    p.inputs = c.array<int32_t>("input count");
    p.outputs = c.array<int32_t>("output count");
}

void decode_kernels(Cursor& c, Plan& p, const uint8_t* section, size_t section_size) {
    const uint32_t n = c.count(48, "kernel count");
    p.kernels.resize(n);
    struct Blobs {
        uint64_t cubin_offset, cubin_size, ptx_offset, ptx_size;
    };
    std::vector<Blobs> blobs(n);
    for (uint32_t i = 0; i < n; ++i) {
        KernelDesc& k = p.kernels[i];
        try {
            k.key = c.str("key");
            k.entry = c.str("entry");
            k.arch = c.str("arch");
            const std::vector<uint8_t> params = c.array<uint8_t>("param count");
            for (uint8_t v : params) {
                STOF_CHECK(v <= static_cast<uint8_t>(ParamKind::f32), "param kind has the unknown value {}", v);
                k.params.push_back(static_cast<ParamKind>(v));
            }
            blobs[i] = {c.u64("cubin_offset"), c.u64("cubin_size"), c.u64("ptx_offset"), c.u64("ptx_size")};
        } catch (const Error& e) {
            STOF_FAIL("kernel {}: {}", i, e.what());
        }
    }
    // The blob area: from the end of the index to the end of the section.
    const uint8_t* area = section + c.position();
    const uint64_t area_size = section_size - c.position();
    for (uint32_t i = 0; i < n; ++i) {
        const Blobs& b = blobs[i];
        STOF_CHECK(b.cubin_offset <= area_size && b.cubin_size <= area_size - b.cubin_offset,
                   "kernel {} ('{}'): cubin at {} size {} lies outside the {}-byte blob area", i, p.kernels[i].key,
                   b.cubin_offset, b.cubin_size, area_size);
        STOF_CHECK(b.ptx_offset <= area_size && b.ptx_size <= area_size - b.ptx_offset,
                   "kernel {} ('{}'): PTX at {} size {} lies outside the {}-byte blob area", i, p.kernels[i].key, b.ptx_offset,
                   b.ptx_size, area_size);
        p.kernels[i].cubin.assign(area + b.cubin_offset, area + b.cubin_offset + b.cubin_size);
        p.kernels[i].ptx.assign(reinterpret_cast<const char*>(area + b.ptx_offset), b.ptx_size);
    }
}

void decode_masks(Cursor& c, Plan& p) {
    const uint32_t n = c.count(48, "mask count");
    p.masks.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        MaskEntry& e = p.masks[i];
        try {
            e.spec = c.str("spec");
            e.kernel_reason = c.str("kernel_reason");
            e.runtime = c.flag("runtime");
            SparseMask& m = e.mask;
            m.rows = c.i32("rows");
            m.cols = c.i32("cols");
            m.tile_m = c.i32("tile_m");
            m.tile_n = c.i32("tile_n");
            m.mask_batch = c.i32("mask_batch");
            m.mask_heads = c.i32("mask_heads");
            m.row_ptr = c.array<int32_t>("row_ptr count");
            m.col_idx = c.array<int32_t>("col_idx count");
            m.bitmap_idx = c.array<int32_t>("bitmap_idx count");
            m.bitmaps = c.array<uint64_t>("bitmaps count");
        } catch (const Error& ex) {
            STOF_FAIL("mask {}: {}", i, ex.what());
        }
    }
}

// Reads each field the way plan_fields.hpp describes; errors name the field
// ("args[2].tensor", "q.stride_h").
struct FieldDecoder {
    Cursor& c;
    std::string prefix;
    template <class T> void operator()(const char* name, T& v) {
        const std::string what = prefix + name;
        if constexpr (std::is_same_v<T, bool>) {
            v = c.flag(what.c_str());
        } else if constexpr (std::is_enum_v<T>) {
            v = c.enumeration<T>(kEnumMax<T>, what.c_str());
        } else if constexpr (std::is_arithmetic_v<T>) {
            v = c.fixed<T>(what.c_str());
        } else if constexpr (std::is_array_v<T>) {
            for (auto& x : v) (*this)(name, x);
        } else if constexpr (IsVector<T>::value) {
            v.resize(c.count(encoded_bytes<typename T::value_type>(), (what + " count").c_str()));
            for (size_t i = 0; i < v.size(); ++i) fields(v[i], FieldDecoder{c, what + "[" + std::to_string(i) + "]."});
        } else {
            fields(v, FieldDecoder{c, what + "."});
        }
    }
};

void decode_step(Cursor& c, Step& s) {
    s.kind = c.enumeration<StepKind>(kEnumMax<StepKind>, "kind");
    s.label = c.str("label");
    s.nodes = c.str("nodes");
    with_step_body(s, [&](auto& body) { fields(body, FieldDecoder{c, ""}); });
}

void decode_schedule(Cursor& c, Plan& p) {
    // The smallest step (key_valid with empty label and nodes) takes 25 bytes.
    const uint32_t n = c.count(25, "step count");
    p.steps.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
        try {
            decode_step(c, p.steps[i]);
        } catch (const Error& e) {
            STOF_FAIL("step {}: {}", i, e.what());
        }
    }
}

// The section names a plan may hold: the static ones, "shapes" and "bucket.<k>" (k < kMaxBuckets).
bool known_section(const std::string& name) {
    for (const char* n : kSectionNames)
        if (name == n) return true;
    if (name == kShapesSection || name == kPlaceholdersSection) return true;
    const std::string prefix = kBucketSectionPrefix;
    if (name.compare(0, prefix.size(), prefix) != 0) return false;
    const std::string k = name.substr(prefix.size());
    return !k.empty() && k.size() <= 2 && k.find_first_not_of("0123456789") == std::string::npos && (k == "0" || k[0] != '0') &&
           std::stoul(k) < kMaxBuckets;
}

// Header and section table; returns the sections in table order, which is one of the two
// layouts of plan_format.hpp (the static sections in any order, or meta, shapes, bucket.0, ...).
std::vector<Section> read_table(const uint8_t* data, size_t size, const std::string& what, bool verify) {
    STOF_CHECK(size >= sizeof(kMagic) && std::memcmp(data, kMagic, sizeof(kMagic)) == 0,
               "{}: not a stofc plan file (it does not start with STOFPLAN)", what);
    STOF_CHECK(size >= kVersionFieldOffset + kVersionFieldBytes, "{}: the plan header is truncated ({} bytes)", what, size);
    const uint32_t version = load_u32(data + 8);
    const std::string writer = ascii_field(data + kVersionFieldOffset, kVersionFieldBytes);
    STOF_CHECK(version == kFormatVersion,
               "{}: plan format version {} (written by stofc {}); this stofc {} reads format version {}: "
               "recompile the model with this stofc",
               what, version, writer.empty() ? "of unknown version" : writer, kVersion, kFormatVersion);
    STOF_CHECK(size >= kHeaderBytes, "{}: the plan header is truncated ({} bytes)", what, size);
    const uint32_t count = load_u32(data + 44);
    STOF_CHECK(count >= 1 && count <= kMaxSections, "{}: the section table is damaged (section count {})", what, count);
    const uint64_t table_end = kHeaderBytes + static_cast<uint64_t>(count) * kSectionEntryBytes;
    STOF_CHECK(table_end <= size, "{}: the section table is truncated ({} sections need {} bytes, the file has {})", what,
               count, table_end, size);
    if (verify) {
        uint32_t crc = checksum(data, kCrcCoveredHeaderBytes);
        crc = checksum(data + kHeaderBytes, table_end - kHeaderBytes, crc);
        STOF_CHECK(crc == load_u32(data + 56), "{}: the section table is damaged (checksum mismatch)", what);
    }
    STOF_CHECK(load_u32(data + 60) == 0, "{}: the plan header is damaged (reserved bytes 60..63 are not zero)", what);

    std::vector<Section> table;
    std::set<std::string> seen;
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t* e = data + kHeaderBytes + static_cast<uint64_t>(i) * kSectionEntryBytes;
        STOF_CHECK(std::memchr(e, 0, kSectionNameBytes) != nullptr, "{}: the section table is damaged (entry {} has no name)",
                   what, i);
        STOF_CHECK(load_u32(e + 36) == 0, "{}: the section table is damaged (entry {} has nonzero reserved bytes)", what, i);
        Section s{ascii_field(e, kSectionNameBytes), load_u64(e + 16), load_u64(e + 24), load_u32(e + 32)};
        STOF_CHECK(known_section(s.name), "{}: the section table is damaged (unknown section '{}')", what, s.name);
        STOF_CHECK(seen.insert(s.name).second, "{}: the section table is damaged (section '{}' appears twice)", what, s.name);
        STOF_CHECK(s.offset % kSectionAlignment == 0 && s.offset >= table_end,
                   "{}: section '{}' is damaged (offset {} is not a {}-byte aligned position after the section table)", what,
                   s.name, s.offset, kSectionAlignment);
        STOF_CHECK(s.offset <= size && s.size <= size - s.offset,
                   "{}: section '{}' is truncated ({} bytes at byte {}, the file has {})", what, s.name, s.size, s.offset,
                   size);
        table.push_back(s);
    }
    if (seen.count(kShapesSection)) {
        STOF_CHECK(count >= 3 && table[0].name == kSectionNames[0] && table[1].name == kShapesSection,
                   "{}: the section table is damaged (a plan with shape buckets starts with 'meta', 'shapes' and a bucket)",
                   what);
        for (uint32_t i = 2; i < count; ++i)
            STOF_CHECK(table[i].name == kBucketSectionPrefix + std::to_string(i - 2),
                       "{}: the section table is damaged (entry {} is '{}', not '{}{}')", what, i, table[i].name,
                       kBucketSectionPrefix, i - 2);
    } else {
        for (const char* n : kSectionNames) STOF_CHECK(seen.count(n), "{}: section '{}' is missing", what, n);
        STOF_CHECK(seen.size() == kSectionCount + seen.count(kPlaceholdersSection),
                   "{}: the section table is damaged (bucket sections without 'shapes')", what);
    }

    // Payloads follow each other in table order with zero padding between them, and the
    // file ends with the last one: every byte is covered by a checksum or checked here.
    uint64_t end = table_end;
    std::string previous = "the section table";
    for (const Section& s : table) {
        STOF_CHECK(s.offset >= end, "{}: section '{}' is damaged (it starts at byte {}, before the end of {} at byte {})", what,
                   s.name, s.offset, previous, end);
        end = s.offset + s.size;
        previous = "section '" + s.name + "'";
    }
    uint64_t padding = table_end;
    for (const Section& s : table) {
        for (uint64_t b = padding; b < s.offset; ++b)
            STOF_CHECK(data[b] == 0, "{}: the padding before section '{}' is damaged (byte {} is {}, not 0)", what, s.name, b,
                       data[b]);
        padding = s.offset + s.size;
    }
    const uint64_t declared = load_u64(data + 48);
    STOF_CHECK(declared == size, "{}: the file is {} bytes but its header says {} (truncated or extended)", what, size,
               declared);
    STOF_CHECK(end == size, "{}: {} unexpected bytes after the end of {}", what, size - end, previous);
    return table;
}

// The shapes section; weights_from per bucket.
void decode_shapes(Cursor& c, Plan& p, std::vector<int32_t>& weights_from) {
    ShapeRanges& r = p.ranges;
    r.vars.resize(c.count(20, "variable count"));
    for (ShapeVar& v : r.vars) {
        v.name = c.str("variable name");
        v.min = c.i64("variable min");
        v.max = c.i64("variable max");
    }
    for (auto* list : {&r.input_dims, &r.output_dims}) {
        list->resize(c.count(4, "dimension list count"));
        for (std::vector<int32_t>& dims : *list) dims = c.array<int32_t>("dimension count");
    }
    const uint32_t n = c.count(8, "bucket count");
    STOF_CHECK(n <= kMaxBuckets, "{} buckets, more than {}", n, kMaxBuckets);
    for (uint32_t b = 0; b < n; ++b) {
        r.bucket_values.push_back(c.array<int64_t>("bucket size count"));
        weights_from.push_back(c.i32("weights_from"));
        STOF_CHECK(weights_from.back() >= -1 && weights_from.back() < static_cast<int32_t>(b),
                   "bucket {}: weights_from {} is not an earlier bucket", b, weights_from.back());
    }
}

Plan parse_body(const std::string& bytes, const std::string& what, bool verify_checksums, bool nested);

Plan parse_sections(const uint8_t* data, const std::vector<Section>& sections, const std::string& what, bool verify_checksums,
                    bool nested) {
    Plan p;
    std::vector<int32_t> weights_from;
    for (const Section& s : sections) {
        const uint8_t* payload = data + s.offset;
        const size_t size = static_cast<size_t>(s.size);
        if (verify_checksums)
            STOF_CHECK(checksum(payload, size) == s.crc, "{}: section '{}' is damaged (checksum mismatch)", what, s.name);
        if (s.name.compare(0, std::strlen(kBucketSectionPrefix), kBucketSectionPrefix) == 0) {
            STOF_CHECK(!nested, "{}: section '{}': a bucket holds buckets of its own", what, s.name);
            const size_t b = p.buckets.size();
            STOF_CHECK(b < weights_from.size(), "{}: section '{}' has no entry in section 'shapes'", what, s.name);
            p.buckets.push_back(parse_body(std::string(reinterpret_cast<const char*>(payload), size), what + ": " + s.name,
                                           verify_checksums, true));
            if (weights_from[b] >= 0) {
                STOF_CHECK(p.buckets[b].weights.empty(), "{}: section '{}' stores weights it shares with bucket {}", what,
                           s.name, weights_from[b]);
                p.buckets[b].weights = p.buckets[static_cast<size_t>(weights_from[b])].weights;
            }
            continue;
        }
        try {
            Cursor c(payload, size);
            if (s.name == "meta") {
                p.meta = decode_meta(c);
                c.finish();
            } else if (s.name == kShapesSection) {
                decode_shapes(c, p, weights_from);
                c.finish();
            } else if (s.name == "tensors") {
                decode_tensors(c, p);
                c.finish();
            } else if (s.name == "kernels") {
                decode_kernels(c, p, payload, size);
            } else if (s.name == "masks") {
                decode_masks(c, p);
                c.finish();
            } else if (s.name == "schedule") {
                decode_schedule(c, p);
                c.finish();
            } else if (s.name == "segments") {
                decode_segments(c, p);
                c.finish();
            } else if (s.name == kPlaceholdersSection) {
                p.placeholder_end = c.u64("placeholder_end");
                p.placeholders = c.array<int32_t>("placeholder count");
                STOF_CHECK(!p.placeholders.empty(), "it lists no tensors");
                c.finish();
            } else {
                p.weights.assign(payload, payload + size);
            }
        } catch (const Error& e) {
            STOF_FAIL("{}: section '{}' is damaged ({})", what, s.name, e.what());
        }
    }
    STOF_CHECK(p.buckets.size() == weights_from.size(), "{}: section 'shapes' lists {} buckets, the file holds {}", what,
               weights_from.size(), p.buckets.size());
    return p;
}

// A plan file's contents, not yet validated as a whole.
Plan parse_body(const std::string& bytes, const std::string& what, bool verify_checksums, bool nested) {
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    return parse_sections(data, read_table(data, bytes.size(), what, verify_checksums), what, verify_checksums, nested);
}

}  // namespace

Plan parse_plan(const std::string& bytes, const std::string& what, bool verify_checksums) {
    Plan p = parse_body(bytes, what, verify_checksums, false);
    try {
        validate(p);
    } catch (const Error& e) {
        STOF_FAIL("{}: {}", what, e.what());
    }
    return p;
}

Plan read_plan(const std::string& path) {
    const RegularFile f(path, "plan file");
    // The header before the rest: a file that is not a plan, or whose size is not the one
    // its header states, is refused without reading it whole.
    const std::string head = f.read(0, std::min<uint64_t>(f.size(), kHeaderBytes));
    const auto* h = reinterpret_cast<const uint8_t*>(head.data());
    STOF_CHECK(head.size() >= sizeof(kMagic) && std::memcmp(h, kMagic, sizeof(kMagic)) == 0,
               "{}: not a stofc plan file (it does not start with STOFPLAN)", path);
    if (head.size() == kHeaderBytes && load_u32(h + 8) == kFormatVersion)
        STOF_CHECK(load_u64(h + 48) == f.size(), "{}: the file is {} bytes but its header says {} (truncated or extended)",
                   path, f.size(), load_u64(h + 48));
    return parse_plan(f.read_all(), path);
}

}  // namespace stof::plan
