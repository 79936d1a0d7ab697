// make_small_corpora KIND DIR: writes the seed corpus of fuzz_mask_spec (KIND
// mask_spec: every pattern, the shorthands, unions, intersections and nesting) or
// of fuzz_npy (KIND npy: an array of every dtype the reader takes, scalars, empty
// and 3-D shapes, format version 2) into DIR. Each seed is checked to be accepted.
#include "mask/mask_spec.hpp"
#include "stof/error.hpp"
#include "stof/npy.hpp"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

void write(const std::string& dir, int k, const std::string& bytes) {
    std::ofstream(dir + "/seed_" + std::to_string(k), std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: make_small_corpora mask_spec|npy DIR\n");
        return 2;
    }
    const std::string kind = argv[1], dir = argv[2];
    int k = 0;
    if (kind == "mask_spec") {
        const std::vector<std::string> specs = {"dense",
                                                "causal",
                                                "sliding:3",
                                                "global:2",
                                                "random:4:2:7",
                                                "longformer:4:1",
                                                "bigbird:8:1:1:1:3",
                                                "causal & sliding:5",
                                                "sliding:2 | global:1",
                                                "(causal | global:3) & sliding:9",
                                                "((sliding:1 | random:8:1:99) & causal) | global:1",
                                                "random:16:100:18446744073709551615",
                                                "strided:4",
                                                "causal & strided:3 | global:1"};
        for (const std::string& s : specs) {
            (void)stof::parse_mask_spec(s);
            write(dir, k++, s);
        }
        return 0;
    }
    if (kind == "npy") {
        using stof::DType;
        const std::vector<std::pair<DType, stof::Shape>> arrays = {
            {DType::f32, {2, 3}}, {DType::f16, {4}}, {DType::f64, {}},    {DType::i64, {2, 1, 2}},
            {DType::i32, {0, 5}}, {DType::i8, {3}},  {DType::u8, {2, 2}}, {DType::boolean, {5}}};
        for (const auto& [dt, shape] : arrays) {
            stof::Tensor t(dt, shape);
            for (int64_t i = 0; i < t.numel(); ++i) t.set_i64(i, (i * 7) % 2);
            const std::string bytes = stof::serialize_npy(t);
            (void)stof::parse_npy(bytes, "seed");
            write(dir, k++, bytes);
            std::string v2 = bytes;  // the same array as format version 2 (a 4-byte header length)
            v2[6] = 2;
            v2.insert(10, 2, '\0');
            write(dir, k++, v2);
        }
        return 0;
    }
    std::fprintf(stderr, "make_small_corpora: unknown kind '%s'\n", kind.c_str());
    return 2;
}
