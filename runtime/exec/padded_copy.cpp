#include "exec/padded_copy.hpp"

#include "stof/cuda_check.hpp"
#include "stof/error.hpp"

#include <cstdint>

namespace stof::exec {

bool box_copy_entry(const BoxCopy& c, kernels::BoxCopyEntry& entry) {
    STOF_CHECK(c.src_shape.size() == c.dst_shape.size(), "padded copy: shape {} into {}: the ranks differ",
               shape_str(c.src_shape), shape_str(c.dst_shape));
    STOF_CHECK(c.elem_bytes >= 1, "padded copy: elements of 0 bytes");
    if (numel(c.dst_shape) == 0) return false;
    // Merged dimensions, innermost first: (src, dst) extents and whether every dimension in
    // the group is equal in both shapes (then the next dimension out can join it).
    struct Group {
        int64_t src = 1, dst = 1;
        bool equal = true;
    };
    std::vector<Group> groups;
    for (size_t d = c.dst_shape.size(); d-- > 0;) {
        const int64_t s = c.src_shape[d], t = c.dst_shape[d];
        if (s == 1 && t == 1) continue;
        if (groups.empty() || !groups.back().equal) groups.push_back(Group{});
        Group& g = groups.back();
        g.src *= s;
        g.dst *= t;
        g.equal = g.equal && s == t;
    }
    if (groups.empty()) groups.push_back(Group{});  // a single element
    STOF_CHECK(groups.size() <= static_cast<size_t>(kernels::kBoxCopyMaxRank),
               "padded copy: shape {} into {} leaves {} dimensions after merging; the copy kernel takes at most {}",
               shape_str(c.src_shape), shape_str(c.dst_shape), groups.size(), kernels::kBoxCopyMaxRank);
    // The widest unit dividing both innermost rows (in bytes) and both addresses; an empty
    // source (dst all padding) is never read and imposes nothing.
    const bool src_empty = numel(c.src_shape) == 0;
    const uint64_t src_row = static_cast<uint64_t>(groups[0].src) * c.elem_bytes;
    const uint64_t dst_row = static_cast<uint64_t>(groups[0].dst) * c.elem_bytes;
    const uint64_t all = dst_row | reinterpret_cast<uintptr_t>(c.dst) |
                         (src_empty ? 0 : src_row | reinterpret_cast<uintptr_t>(c.src));
    uint64_t unit = 16;
    while (unit > 1 && (all % unit) != 0) unit /= 2;
    entry = kernels::BoxCopyEntry{};
    entry.src = src_empty ? nullptr : c.src;
    entry.dst = c.dst;
    entry.rank = static_cast<int32_t>(groups.size());
    entry.unit_bytes = static_cast<int32_t>(unit);
    for (size_t k = 0; k < groups.size(); ++k) {
        const size_t d = groups.size() - 1 - k;  // outermost first
        const bool inner = k == 0;
        entry.src_dims[d] = inner ? static_cast<int64_t>(src_row / unit) : groups[k].src;
        entry.dst_dims[d] = inner ? static_cast<int64_t>(dst_row / unit) : groups[k].dst;
    }
    return true;
}

std::vector<kernels::BoxCopyTable> box_copy_tables(const std::vector<BoxCopy>& copies) {
    std::vector<kernels::BoxCopyTable> tables;
    kernels::BoxCopyEntry e;
    for (const BoxCopy& c : copies) {
        if (!box_copy_entry(c, e)) continue;
        if (tables.empty() || tables.back().count == kernels::kBoxCopyMaxEntries) tables.emplace_back();
        kernels::BoxCopyTable& t = tables.back();
        t.entries[t.count++] = e;
    }
    return tables;
}

void enqueue_box_copies(const std::vector<BoxCopy>& copies, cudaStream_t stream) {
    enqueue_box_copy_tables(box_copy_tables(copies), stream);
}

void enqueue_box_copy_tables(const std::vector<kernels::BoxCopyTable>& tables, cudaStream_t stream) {
    for (const kernels::BoxCopyTable& t : tables) {
        const char* why = kernels::check_box_copy(t);
        STOF_CHECK(!*why, "padded copy: {}", why);
        STOF_CUDA_CHECK(kernels::launch_box_copy(t, stream));
    }
}

}  // namespace stof::exec
