#include "codegen/compile_kernels.hpp"

#include "codegen/nvrtc.hpp"
#include "parallel.hpp"
#include "stof/error.hpp"
#include "stof/progress.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>

namespace stof::codegen {

void compile_kernels(LowerState& st, const LowerOptions& opt) {
    std::map<std::string, int32_t> by_source;
    std::map<std::string, int> key_uses;
    std::vector<size_t> job_of_kernel;
    size_t job = 0;
    for (plan::Step& s : st.plan.steps) {
        if (s.kind != plan::StepKind::launch) continue;
        KernelJob& j = st.jobs.at(job);
        auto it = by_source.find(j.source);
        if (it == by_source.end()) {
            if (const int n = key_uses[j.key]++; n > 0) {
                const std::string renamed = fmt::format("{}_{}", j.key, n + 1);
                const size_t at = j.source.find(" " + j.key + "(");
                STOF_CHECK(at != std::string::npos, "internal: kernel '{}' has no entry point", j.key);
                const std::string original = j.source;
                j.source.replace(at + 1, j.key.size(), renamed);
                j.key = renamed;
                by_source[original] = static_cast<int32_t>(st.plan.kernels.size());
            }
            it = by_source.emplace(j.source, static_cast<int32_t>(st.plan.kernels.size())).first;
            plan::KernelDesc k;
            k.key = j.key;
            k.entry = j.key;
            k.arch = opt.arch;
            k.params = j.params;
            st.plan.kernels.push_back(std::move(k));
            job_of_kernel.push_back(job);
        }
        s.launch.kernel = it->second;
        ++job;
    }
    if (opt.on_kernel_source)
        for (size_t k = 0; k < st.plan.kernels.size(); ++k)
            opt.on_kernel_source(st.plan.kernels[k].key, st.jobs[job_of_kernel[k]].source);
    if (!opt.nvrtc) return;
    const std::string cache = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
    const size_t total = st.plan.kernels.size();
    const auto level = opt.quiet ? spdlog::level::debug : spdlog::level::info;
    std::atomic<size_t> done{0}, cached{0};
    std::vector<std::string> errors(total);
    ProgressPhase phase(fmt::format("compiling {} kernels with NVRTC for {}", total, opt.arch));
    parallel_for(
        total,
        [&](size_t k) {
            plan::KernelDesc& kd = st.plan.kernels[k];
            try {
                CompiledKernel c = compile_kernel(kd.key, st.jobs[job_of_kernel[k]].source, opt.arch, cache);
                kd.cubin = std::move(c.cubin);
                kd.ptx = std::move(c.ptx);
                cached += c.cached;
            } catch (const std::exception& e) {
                errors[k] = e.what();
            }
            const size_t d = ++done;
            if (d % 16 == 0 || d == total) spdlog::log(level, "  NVRTC {}/{} kernels", d, total);
        },
        opt.jobs > 0 ? static_cast<unsigned>(opt.jobs) : 0);
    for (const std::string& e : errors) STOF_CHECK(e.empty(), "{}", e);
    spdlog::log(level, "kernels: {} compiled for {}, {} from the cache ({})", total - cached, opt.arch, cached.load(), cache);
}

}  // namespace stof::codegen
