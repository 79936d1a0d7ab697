#include "codegen/nvrtc.hpp"

#include "codegen/templates.hpp"
#include "stof/error.hpp"
#include "stof/plan_format.hpp"
#include "stof/regular_file.hpp"

#include <nvrtc.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <unistd.h>

namespace stof::codegen {

namespace fs = std::filesystem;

#define STOF_NVRTC_CHECK(call)                                                                                                 \
    do {                                                                                                                       \
        const nvrtcResult stof_nvrtc_result = (call);                                                                          \
        STOF_CHECK(stof_nvrtc_result == NVRTC_SUCCESS, "NVRTC: {} failed: {}", #call, nvrtcGetErrorString(stof_nvrtc_result)); \
    } while (0)

uint64_t fnv1a(const std::string& s, uint64_t h) {
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t templates_hash() {
    static const uint64_t h = [] {
        uint64_t x = kFnvBasis;
        for (const TemplateFile& t : template_files()) x = fnv1a(std::string(t.name) + t.source, x);
        return x;
    }();
    return h;
}

namespace {

// The file's bytes, or "" when it is missing or not a regular file.
std::string read_file(const fs::path& p) {
    try {
        return read_regular_file(p.string(), "kernel cache");
    } catch (const Error&) {
        return "";
    }
}

// The checksum line of a cache entry: sizes and crc32s of its source, cubin and PTX.
// Written after them, so an entry without a matching line is recompiled: a truncated,
// damaged or half-written file is never copied into a plan.
std::string entry_sum(const std::string& source, const std::vector<uint8_t>& cubin, const std::string& ptx) {
    return fmt::format("stofc-cache-entry source {} {:08x} cubin {} {:08x} ptx {} {:08x}\n", source.size(),
                       plan::checksum(source.data(), source.size()), cubin.size(), plan::checksum(cubin.data(), cubin.size()),
                       ptx.size(), plan::checksum(ptx.data(), ptx.size()));
}

void write_file(const fs::path& p, const std::string& bytes) {
    // Unique per process and thread: concurrent compilers may write the same entry.
    const fs::path tmp = fmt::format("{}.tmp{}.{}", p.string(), ::getpid(),
                                     std::hash<std::thread::id>{}(std::this_thread::get_id()));
    std::error_code ec;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        STOF_CHECK(out.good(), "cannot write the kernel cache file '{}'", tmp.string());
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out.good()) fs::remove(tmp, ec);
        STOF_CHECK(out.good(), "cannot write the kernel cache file '{}' (disk full?)", tmp.string());
    }
    fs::rename(tmp, p, ec);
    if (ec) fs::remove(tmp, ec);
    STOF_CHECK(!ec, "cannot write the kernel cache file '{}': {}", p.string(), ec.message());
}

// Writes the embedded templates under <cache>/templates once per process.
void write_templates(const fs::path& dir) {
    static std::mutex m;
    static std::string done;
    std::lock_guard<std::mutex> lock(m);
    if (done == dir.string()) return;
    for (const TemplateFile& t : template_files()) {
        const fs::path p = dir / t.name;
        fs::create_directories(p.parent_path());
        if (!fs::exists(p) || read_file(p) != t.source) write_file(p, t.source);
    }
    done = dir.string();
}

struct Program {
    nvrtcProgram prog = nullptr;
    ~Program() {
        if (prog) nvrtcDestroyProgram(&prog);
    }
};

std::string program_log(nvrtcProgram prog) {
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n <= 1) return "";
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    log.resize(n - 1);
    return log;
}

// One NVRTC compilation for `target` ("sm_90" → cubin, "compute_90" → PTX).
std::vector<uint8_t> run_nvrtc(const std::string& key, const std::string& source, const std::string& target,
                               const fs::path& src_path, const fs::path& cache) {
    std::vector<const char*> names, texts;
    for (const TemplateFile& t : template_files()) {
        names.push_back(t.name);
        texts.push_back(t.source);
    }
    Program p;
    STOF_NVRTC_CHECK(nvrtcCreateProgram(&p.prog, source.c_str(), (key + ".cu").c_str(), static_cast<int>(names.size()),
                                        texts.data(), names.data()));
    const std::string arch_opt = "--gpu-architecture=" + target;
    const char* opts[] = {arch_opt.c_str(), "-std=c++17", "-lineinfo", "-default-device"};
    const nvrtcResult r = nvrtcCompileProgram(p.prog, 4, opts);
    if (r != NVRTC_SUCCESS) {
        STOF_FAIL(
            "NVRTC could not compile kernel '{}' for {}:\n{}\nsource: {}\nreproduce: nvcc -std=c++17 "
            "--gpu-architecture={} {} -I {} {}",
            key, target, program_log(p.prog), src_path.string(), target, target.rfind("sm_", 0) == 0 ? "-cubin" : "-ptx",
            (cache / "templates").string(), src_path.string());
    }
    size_t n = 0;
    std::vector<uint8_t> out;
    if (target.rfind("sm_", 0) == 0) {
        STOF_NVRTC_CHECK(nvrtcGetCUBINSize(p.prog, &n));
        out.resize(n);
        STOF_NVRTC_CHECK(nvrtcGetCUBIN(p.prog, reinterpret_cast<char*>(out.data())));
    } else {
        STOF_NVRTC_CHECK(nvrtcGetPTXSize(p.prog, &n));
        out.resize(n);
        STOF_NVRTC_CHECK(nvrtcGetPTX(p.prog, reinterpret_cast<char*>(out.data())));
        while (!out.empty() && out.back() == 0) out.pop_back();
    }
    return out;
}

}  // namespace

std::string nvrtc_version() {
    int major = 0, minor = 0;
    STOF_NVRTC_CHECK(nvrtcVersion(&major, &minor));
    return fmt::format("{}.{}", major, minor);
}

void check_arch(const std::string& arch) {
    int n = 0;
    STOF_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&n));
    std::vector<int> archs(static_cast<size_t>(n));
    STOF_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
    std::string list;
    for (int a : archs) {
        if (a < 80) continue;
        if (arch == fmt::format("sm_{}", a)) return;
        list += (list.empty() ? "" : ", ") + fmt::format("sm_{}", a);
    }
    STOF_FAIL("--arch {} is not supported; stofc targets {} (NVRTC {})", arch, list, nvrtc_version());
}

std::string default_cache_dir() {
    if (const char* d = std::getenv("STOF_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "stofc").string();
    if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "stofc").string();
    return (fs::temp_directory_path() / "stofc-cache").string();
}

CompiledKernel compile_kernel(const std::string& key, const std::string& source, const std::string& arch,
                              const std::string& cache_dir) {
    const fs::path cache(cache_dir);
    const fs::path kdir = cache / "kernels";
    std::error_code ec;
    fs::create_directories(kdir, ec);
    STOF_CHECK(!ec, "cannot create the kernel cache directory '{}': {}", kdir.string(), ec.message());
    write_templates(cache / "templates");
    const uint64_t h = fnv1a(arch + "|" + nvrtc_version() + "|" + source, templates_hash());
    const std::string stem = fmt::format("{}-{:016x}", key, h);
    const fs::path src = kdir / (stem + ".cu"), cubin = kdir / (stem + "." + arch + ".cubin"), ptx = kdir / (stem + ".ptx"),
                   sum = kdir / (stem + "." + arch + ".sum");
    CompiledKernel k;
    if (fs::exists(sum)) {
        const std::string c = read_file(cubin);
        k.cubin.assign(c.begin(), c.end());
        k.ptx = read_file(ptx);
        k.cached = !k.cubin.empty() && !k.ptx.empty() && read_file(src) == source &&
                   read_file(sum) == entry_sum(source, k.cubin, k.ptx);
        if (k.cached) return k;
        spdlog::warn("kernel cache entry {} is damaged or incomplete: compiling it again", (kdir / stem).string());
    }
    write_file(src, source);
    k.cubin = run_nvrtc(key, source, arch, src, cache);
    const std::vector<uint8_t> p = run_nvrtc(key, source, "compute_" + arch.substr(3), src, cache);
    k.ptx.assign(p.begin(), p.end());
    write_file(cubin, std::string(k.cubin.begin(), k.cubin.end()));
    write_file(ptx, k.ptx);
    write_file(sum, entry_sum(source, k.cubin, k.ptx));
    return k;
}

}  // namespace stof::codegen
