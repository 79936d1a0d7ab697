#include "plan/plan_writer.hpp"

#include "plan/plan_fields.hpp"
#include "stof/atomic_write.hpp"
#include "stof/error.hpp"
#include "stof/plan_format.hpp"
#include "stof/version.hpp"

#include <bit>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <vector>

namespace stof::plan {

static_assert(std::endian::native == std::endian::little, "the plan writer assumes a little-endian host");

namespace {

class Encoder {
public:
    std::string bytes;

    template <class T> void fixed(T v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
    void u8(uint8_t v) { fixed(v); }
    void u32(uint32_t v) { fixed(v); }
    void i32(int32_t v) { fixed(v); }
    void u64(uint64_t v) { fixed(v); }
    void i64(int64_t v) { fixed(v); }
    void f32(float v) { fixed(std::bit_cast<uint32_t>(v)); }
    void count(size_t n, const char* what) {
        STOF_CHECK(n <= std::numeric_limits<uint32_t>::max(), "plan writer: {} has {} entries, more than a plan holds", what, n);
        u32(static_cast<uint32_t>(n));
    }
    void str(const std::string& s) {
        count(s.size(), "a string");
        bytes += s;
    }
    template <class T> void array(const std::vector<T>& v, const char* what) {
        count(v.size(), what);
        bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
};

std::string encode_meta(const Meta& m) {
    Encoder e;
    for (const std::string* s :
         {&m.model, &m.stofc_version, &m.target_arch, &m.nvrtc_version, &m.precision, &m.created, &m.notes})
        e.str(*s);
    return std::move(e.bytes);
}

std::string encode_segments(const Plan& p) {
    Encoder e;
    e.count(p.segments.size(), "segments");
    for (const SegmentInfo& s : p.segments) {
        for (const std::string* f : {&s.kind, &s.templ, &s.config, &s.source}) e.str(*f);
        e.f32(s.time_us);
        e.str(s.moves);
        e.str(s.nodes);
        e.u32(s.sweep_space);
        e.f32(s.stage2_us);
        e.str(s.stage2_config);
        e.f32(s.sweep_us);
        e.str(s.sweep_config);
    }
    return std::move(e.bytes);
}

std::string encode_tensors(const Plan& p) {
    Encoder e;
    e.u64(p.arena_bytes);
    e.count(p.tensors.size(), "tensors");
    for (const TensorDesc& t : p.tensors) {
        e.str(t.name);
        e.u8(static_cast<uint8_t>(t.dtype));
        e.array(t.shape, "a shape");
        e.u8(static_cast<uint8_t>(t.buffer));
        e.u64(t.offset);
        e.u8(static_cast<uint8_t>(t.role));
        e.i64(t.int_lo);
        e.i64(t.int_hi);
    }
    e.array(p.inputs, "inputs");
    e.array(p.outputs, "outputs");
    return std::move(e.bytes);
}

std::string encode_kernels(const Plan& p) {
    Encoder index;
    std::string blobs;
    index.count(p.kernels.size(), "kernels");
    for (const KernelDesc& k : p.kernels) {
        index.str(k.key);
        index.str(k.entry);
        index.str(k.arch);
        index.count(k.params.size(), "kernel params");
        for (ParamKind pk : k.params) index.u8(static_cast<uint8_t>(pk));
        index.u64(blobs.size());
        index.u64(k.cubin.size());
        blobs.append(reinterpret_cast<const char*>(k.cubin.data()), k.cubin.size());
        index.u64(blobs.size());
        index.u64(k.ptx.size());
        blobs += k.ptx;
    }
    return index.bytes + blobs;
}

std::string encode_masks(const Plan& p) {
    Encoder e;
    e.count(p.masks.size(), "masks");
    for (const MaskEntry& me : p.masks) {
        const SparseMask& m = me.mask;
        e.str(me.spec);
        e.str(me.kernel_reason);
        e.u8(me.runtime);
        for (int32_t v : {m.rows, m.cols, m.tile_m, m.tile_n, m.mask_batch, m.mask_heads}) e.i32(v);
        e.array(m.row_ptr, "row_ptr");
        e.array(m.col_idx, "col_idx");
        e.array(m.bitmap_idx, "bitmap_idx");
        e.array(m.bitmaps, "bitmaps");
    }
    return std::move(e.bytes);
}

// Writes each field the way plan_fields.hpp describes.
struct FieldEncoder {
    Encoder& e;
    template <class T> void operator()(const char* name, const T& v) {
        if constexpr (std::is_enum_v<T> || std::is_same_v<T, bool>) {
            e.u8(static_cast<uint8_t>(v));
        } else if constexpr (std::is_arithmetic_v<T>) {
            e.fixed(v);
        } else if constexpr (std::is_array_v<T>) {
            for (const auto& x : v) (*this)(name, x);
        } else if constexpr (IsVector<T>::value) {
            e.count(v.size(), name);
            for (const auto& x : v) fields(x, *this);
        } else {
            fields(v, *this);
        }
    }
};

std::string encode_schedule(const Plan& p) {
    Encoder e;
    e.count(p.steps.size(), "steps");
    for (const Step& s : p.steps) {
        e.u8(static_cast<uint8_t>(s.kind));
        e.str(s.label);
        e.str(s.nodes);
        with_step_body(s, [&](const auto& body) { fields(body, FieldEncoder{e}); });
    }
    return std::move(e.bytes);
}

void put_u32(std::string& s, size_t at, uint32_t v) { std::memcpy(s.data() + at, &v, 4); }
void put_u64(std::string& s, size_t at, uint64_t v) { std::memcpy(s.data() + at, &v, 8); }

uint64_t align_up(uint64_t v) { return (v + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment; }

struct Bytes {
    std::string name;
    const void* data;
    size_t size;
};

// A plan file: the header and section table, then each section's payload after the zero
// padding that aligns it (views into the caller's sections).
struct Assembled {
    std::string head;
    std::vector<std::string_view> body;

    // head + body, in the order of the file.
    std::vector<std::string_view> parts() const {
        std::vector<std::string_view> all{head};
        all.insert(all.end(), body.begin(), body.end());
        return all;
    }
    std::string join() const {
        std::string out;
        for (const std::string_view part : parts()) out.append(part);
        return out;
    }
};

// Header, section table and the payloads in the given order.
Assembled assemble(const std::vector<Bytes>& sections) {
    static constexpr char kZeros[kSectionAlignment] = {};
    const uint64_t table_end = kHeaderBytes + sections.size() * kSectionEntryBytes;
    std::vector<uint64_t> offsets(sections.size());
    uint64_t end = table_end;
    for (size_t i = 0; i < sections.size(); ++i) {
        offsets[i] = align_up(end);
        end = offsets[i] + sections[i].size;
    }

    Assembled a;
    std::string& out = a.head;
    out.assign(table_end, '\0');
    std::memcpy(out.data(), kMagic, sizeof(kMagic));
    put_u32(out, 8, kFormatVersion);
    std::strncpy(out.data() + kVersionFieldOffset, kVersion, kVersionFieldBytes - 1);
    put_u32(out, 44, static_cast<uint32_t>(sections.size()));
    put_u64(out, 48, end);
    uint64_t at = table_end;
    for (size_t i = 0; i < sections.size(); ++i) {
        const size_t e = kHeaderBytes + i * kSectionEntryBytes;
        std::strncpy(out.data() + e, sections[i].name.c_str(), kSectionNameBytes - 1);
        put_u64(out, e + 16, offsets[i]);
        put_u64(out, e + 24, sections[i].size);
        put_u32(out, e + 32, checksum(sections[i].data, sections[i].size));
        a.body.emplace_back(kZeros, offsets[i] - at);
        a.body.emplace_back(static_cast<const char*>(sections[i].data), sections[i].size);
        at = offsets[i] + sections[i].size;
    }
    uint32_t crc = checksum(out.data(), kCrcCoveredHeaderBytes);
    crc = checksum(out.data() + kHeaderBytes, table_end - kHeaderBytes, crc);
    put_u32(out, 56, crc);
    return a;
}

// The sections of a static plan (weights only `with_weights`); `list` points into the
// payloads held here.
struct StaticSections {
    std::string payloads[kSectionCount - 1];
    Encoder placeholders;
    std::vector<Bytes> list;

    StaticSections(const Plan& p, bool with_weights)
        : payloads{encode_meta(p.meta), encode_tensors(p),  encode_kernels(p),
                   encode_masks(p),     encode_schedule(p), encode_segments(p)} {
        for (size_t i = 0; i + 1 < kSectionCount; ++i)
            list.push_back({kSectionNames[i], payloads[i].data(), payloads[i].size()});
        if (p.has_placeholders()) {
            placeholders.u64(p.placeholder_end);
            placeholders.array(p.placeholders, "placeholder weights");
            list.push_back({kPlaceholdersSection, placeholders.bytes.data(), placeholders.bytes.size()});
        }
        list.push_back({kSectionNames[kSectionCount - 1], p.weights.data(), with_weights ? p.weights.size() : 0});
    }
    StaticSections(const StaticSections&) = delete;
    StaticSections& operator=(const StaticSections&) = delete;
};

std::string serialize_static(const Plan& p, bool with_weights) { return assemble(StaticSections(p, with_weights).list).join(); }

// Sections meta, shapes, bucket.0 .. bucket.N-1; a bucket whose weights equal an earlier
// bucket's stores none and names that bucket.
std::string serialize_ranged(const Plan& p) {
    const ShapeRanges& r = p.ranges;
    Encoder e;
    e.count(r.vars.size(), "shape variables");
    for (const ShapeVar& v : r.vars) {
        e.str(v.name);
        e.i64(v.min);
        e.i64(v.max);
    }
    for (const auto* list : {&r.input_dims, &r.output_dims}) {
        e.count(list->size(), "shape dimensions");
        for (const std::vector<int32_t>& dims : *list) e.array(dims, "shape dimensions");
    }
    e.count(p.buckets.size(), "buckets");
    std::vector<std::string> bodies;
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        int32_t from = -1;
        for (size_t k = 0; k < b && from < 0; ++k)
            if (p.buckets[k].weights == p.buckets[b].weights) from = static_cast<int32_t>(k);
        e.array(r.bucket_values[b], "bucket sizes");
        e.i32(from);
        bodies.push_back(serialize_static(p.buckets[b], from < 0));
    }
    const std::string meta = encode_meta(p.meta);
    std::vector<Bytes> sections = {{kSectionNames[0], meta.data(), meta.size()},
                                   {kShapesSection, e.bytes.data(), e.bytes.size()}};
    for (size_t b = 0; b < bodies.size(); ++b)
        sections.push_back({kBucketSectionPrefix + std::to_string(b), bodies[b].data(), bodies[b].size()});
    return assemble(sections).join();
}

}  // namespace

std::string serialize_plan(const Plan& p) { return p.ranged() ? serialize_ranged(p) : serialize_static(p, true); }

void write_plan(const Plan& p, const std::string& path) {
    validate(p);
    if (p.ranged()) {
        write_file_atomically(path, serialize_ranged(p), "plan file");
        return;
    }
    // Streamed from the plan's own buffers: the weights are not copied into one string first.
    const StaticSections sections(p, true);
    write_file_atomically(path, assemble(sections.list).parts(), "plan file");
}

}  // namespace stof::plan
