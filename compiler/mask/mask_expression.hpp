// A query-by-key value of an attention mask kept as an expression instead of
// Sq x Sk entries (passes/mask_tiles.hpp): elementwise ops over the values they
// read (leaves, aligned to the scores [B, H, Sq, Sk]) and per-head lookups in
// position bias tables. Leaves are known in several worlds (one per choice of
// the probe and the padding input), each with its entries and bounds per tile.
#pragma once

#include "ir/graph.hpp"
#include "mask/mask_interval.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace stof {

struct MaskExpression {
    // An elementwise op of the expression.
    struct SymNode {
        ir::Op op;
        DType dtype;            // of the result
        std::vector<int> args;  // >= 0: an earlier SymNode; < 0: leaf -(arg + 1)
        int table = -1;         // >= 0: a per-head lookup of args[0] in tables[table] (op Gather)
    };

    // A relative position bias table: Gather(table [rows, heads], index [Sq, Sk]) read
    // through Transpose(perm 2,0,1) as [heads, Sq, Sk]: entry (h, i, j) = at[index(i, j) * heads + h].
    struct Table {
        int64_t rows = 0, heads = 0;
        std::vector<double> at;  // [rows, heads]

        // The entries for the indices in `index` (an integer set; negative ones count
        // from the end), head h; top() when some index may be out of range.
        interval::Iv lookup(const interval::Iv& index, int64_t h) const {
            using namespace interval;
            if (empty(index)) return index;
            if (index.nan || index.lo < -rows || index.hi > rows - 1) return top();
            const int64_t lo = static_cast<int64_t>(index.lo), hi = static_cast<int64_t>(index.hi);
            const int64_t col = heads == 1 ? 0 : h;
            if (lo == hi) return point(at[static_cast<size_t>((lo < 0 ? lo + rows : lo) * heads + col)]);
            Iv r;
            for (int64_t k = lo; k <= hi; ++k)
                r = hull(r, point(at[static_cast<size_t>((k < 0 ? k + rows : k) * heads + col)]));
            return r;
        }
    };

    // A value the expression reads, per world: its entries as doubles and its bounds
    // per tile ([lb, lh] slices, then tile rows when it varies over queries, then
    // tile columns when it varies over keys).
    struct Leaf {
        ir::ValueId value = ir::kNoValue;
        DType dtype = DType::undefined;
        int64_t dims[4] = {1, 1, 1, 1};  // [B|1, H|1, Sq|1, Sk|1]
        struct Data {
            std::vector<double> at;  // [dims[0], dims[1], dims[2], dims[3]]
            std::vector<interval::Iv> tiles;
        };
        std::vector<std::shared_ptr<const Data>> world;  // per world

        // Entry (i, j) of slice (x, y) in world w.
        interval::Iv entry(int w, int64_t x, int64_t y, int64_t i, int64_t j) const {
            const int64_t s = (dims[0] == 1 ? 0 : x) * dims[1] + (dims[1] == 1 ? 0 : y);
            const int64_t k = (s * dims[2] + (dims[2] == 1 ? 0 : i)) * dims[3] + (dims[3] == 1 ? 0 : j);
            return interval::point(world[static_cast<size_t>(w)]->at[static_cast<size_t>(k)]);
        }
    };

    std::vector<SymNode> syms;  // in evaluation order
    std::vector<Leaf> leaves;
    std::vector<Table> tables;
};

}  // namespace stof
