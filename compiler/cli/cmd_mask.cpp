// stofc mask SPEC --seq S : build a mask spec into the sparse format and
// describe it (counts, rho, the kernel the selector picks), optionally as JSON
// and as a picture.
#include "cli/cli_args.hpp"
#include "cli/commands.hpp"
#include "mask/mask_builder.hpp"
#include "mask/mask_image.hpp"
#include "mask/mask_spec.hpp"
#include "stof/error.hpp"
#include "stof/kernels/selector.hpp"
#include "stof/mask_fold.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

namespace stof::cli {

namespace {

struct MaskArgs {
    std::string spec, png;
    int64_t seq = 0, seq_k = 0, heads = 0, batch = 0;
    int tile = 64, tile_m = 0, tile_n = 0;
    bool json = false, time = false;
};

void run_mask(const MaskArgs& a) {
    const MaskSpec spec = parse_mask_spec(a.spec);
    const int64_t seq_k = a.seq_k > 0 ? a.seq_k : a.seq;
    const int tile_m = a.tile_m > 0 ? a.tile_m : a.tile, tile_n = a.tile_n > 0 ? a.tile_n : a.tile;

    // --time: repeat the build; otherwise build once. Times in milliseconds.
    std::vector<double> times;
    SparseMask m;
    const auto t_start = std::chrono::steady_clock::now();
    do {
        const auto t0 = std::chrono::steady_clock::now();
        m = build_mask(spec, a.seq, seq_k, tile_m, tile_n, a.heads, a.batch);
        times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    } while (a.time &&
             (times.size() < 3 || (times.size() < 20 && std::chrono::steady_clock::now() - t_start < std::chrono::seconds(2))));
    std::sort(times.begin(), times.end());
    const double t_min = times.front(), t_median = times[times.size() / 2];

    const SparseMaskStats st = mask_stats(m);
    const kernels::SelectorDecision k = kernels::decide_attention_kernel(st.rho, seq_k);
    const int64_t tiles = st.empty_tiles + st.full_tiles + st.partial_tiles;
    // Residue folding (stof/mask_fold.hpp): the period, and the tiles the folded form lists (all residues).
    const MaskFold mf = find_fold(m);
    const int32_t fold = mf.period;
    const int64_t folded_tiles = static_cast<int64_t>(mf.mask.col_idx.size()) * fold;

    if (!a.png.empty()) write_mask_png(m, 0, a.png);

    if (a.json) {
        nlohmann::ordered_json j;
        j["spec"] = to_string(spec);
        j["seq"] = a.seq;
        j["seq_k"] = seq_k;
        j["tile"] = {{"m", tile_m}, {"n", tile_n}};
        j["patterns"] = {{"batch", m.mask_batch}, {"heads", m.mask_heads}};
        j["nnz"] = st.nnz;
        j["density"] = st.density;
        j["tiles"] = {{"empty", st.empty_tiles}, {"full", st.full_tiles}, {"partial", st.partial_tiles}, {"total", tiles}};
        j["rho"] = st.rho;
        j["fold"] = {{"period", fold}, {"tiles", fold > 1 ? folded_tiles : st.full_tiles + st.partial_tiles}};
        j["kernel"] = k.kernel_name();
        j["selector"] = {{"tau", k.tau},
                         {"bound", std::isinf(k.bound) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(k.bound)},
                         {"reason", k.reason}};
        j["build_ms"] = {{"min", t_min}, {"median", t_median}, {"runs", times.size()}};
        if (!a.png.empty()) j["png"] = a.png;
        fmt::print("{}\n", j.dump(2));
        return;
    }
    auto pct = [tiles](int64_t n) { return tiles > 0 ? 100.0 * static_cast<double>(n) / static_cast<double>(tiles) : 0.0; };
    fmt::print("mask      {}\n", to_string(spec));
    fmt::print("size      {} x {}, tile {}x{}, {} pattern{} (batch {} x heads {})\n", a.seq, seq_k, tile_m, tile_n,
               m.patterns(), m.patterns() == 1 ? "" : "s", m.mask_batch, m.mask_heads);
    fmt::print("nnz       {} (density {:.6f})\n", st.nnz, st.density);
    fmt::print("tiles     {}: {} empty ({:.1f}%), {} full ({:.1f}%), {} partial ({:.1f}%)\n", tiles, st.empty_tiles,
               pct(st.empty_tiles), st.full_tiles, pct(st.full_tiles), st.partial_tiles, pct(st.partial_tiles));
    fmt::print("rho       {:.6f} (non-empty 16x16 tiles / all)\n", st.rho);
    if (fold > 1)
        fmt::print(
            "fold      {}: keeps (i, j) only where i = j (mod {}), alike for every residue: stored folded, {} non-empty "
            "tiles over the {} residues instead of {}\n",
            fold, fold, folded_tiles, fold, st.full_tiles + st.partial_tiles);
    fmt::print("kernel    {}: {}\n", k.kernel_name(), k.reason);
    if (a.time) fmt::print("build     {:.3f} ms min, {:.3f} ms median over {} runs\n", t_min, t_median, times.size());
    else fmt::print("build     {:.3f} ms\n", t_min);
    if (!a.png.empty()) fmt::print("picture   {}\n", a.png);
}

}  // namespace

void add_mask_command(CLI::App& app) {
    auto args = std::make_shared<MaskArgs>();
    CLI::App* cmd = app.add_subcommand("mask", "Build an attention mask spec into the sparse format and describe it");
    cmd->add_option("spec", args->spec, std::string("Mask spec: ") + mask_spec_forms())->required();
    cmd->add_option("--seq", args->seq, "Query sequence length (and key length unless --seq-k)")
        ->required()
        ->check(CLI::Range(int64_t{1}, int64_t{2147483647}));
    cmd->add_option("--seq-k", args->seq_k, "Key sequence length (default: --seq)")
        ->check(CLI::Range(int64_t{1}, int64_t{2147483647}));
    cmd->add_option("--tile", args->tile, "Outer tile size for both sides (multiple of 8, 8..256)")->capture_default_str();
    cmd->add_option("--tile-m", args->tile_m, "Outer tile rows (default: --tile)");
    cmd->add_option("--tile-n", args->tile_n, "Outer tile columns (default: --tile)");
    cmd->add_option("--heads", args->heads, "Attention heads that file: masks must match (default: any)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--batch", args->batch, "Batch size that file: masks must match (default: any)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--json", args->json, "Print the description as JSON");
    cmd->add_option("--png", args->png, "Write a picture of the mask (first pattern) to FILE");
    cmd->add_flag("--time", args->time, "Build repeatedly and report the min and median build time");
    add_max_memory_option(cmd);
    cmd->callback([args] { run_mask(*args); });
}

}  // namespace stof::cli
