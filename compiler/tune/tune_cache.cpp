#include "tune/tune_cache.hpp"

#include "codegen/nvrtc.hpp"
#include "stof/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace stof::tune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using codegen::fnv1a;

json to_json(const CacheIdentity& id) {
    return {{"gpu", id.gpu},       {"sm_count", id.sm_count},   {"cc", {id.cc_major, id.cc_minor}},
            {"driver", id.driver}, {"nvrtc", id.nvrtc},         {"cublaslt", id.cublaslt},
            {"stofc", id.stofc},   {"templates", id.templates}, {"kernels", id.kernels}};
}

CacheIdentity identity_from(const json& j) {
    CacheIdentity id;
    id.gpu = j.at("gpu").get<std::string>();
    id.sm_count = j.at("sm_count").get<int>();
    id.cc_major = j.at("cc").at(0).get<int>();
    id.cc_minor = j.at("cc").at(1).get<int>();
    id.driver = j.at("driver").get<int>();
    id.nvrtc = j.at("nvrtc").get<std::string>();
    id.cublaslt = j.at("cublaslt").get<size_t>();
    id.stofc = j.at("stofc").get<std::string>();
    id.templates = j.at("templates").get<std::string>();
    id.kernels = j.value("kernels", "");  // absent in files of builds before it: another identity
    return id;
}

json records_json(const std::map<std::string, CacheRecord>& rs) {
    json out = json::object();
    for (const auto& [k, r] : rs) out[k] = {{"us", r.us}, {"spread", r.spread}, {"bytes", r.bytes}, {"kind", r.kind}};
    return out;
}

}  // namespace

std::string CacheIdentity::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

bool CacheIdentity::operator==(const CacheIdentity& o) const { return to_json(*this) == to_json(o); }

std::string identity_hash(const CacheIdentity& id) { return fmt::format("{:016x}", fnv1a(to_json(id).dump())); }

TuneCache::TuneCache(std::string dir, CacheIdentity id) : id_(std::move(id)) {
    if (dir.empty()) return;
    path_ = (fs::path(dir) / "tune" / (identity_hash(id_) + ".json")).string();
    load(path_, &id_);
}

TuneCache TuneCache::for_arch(const std::string& dir, const CacheIdentity& id, const std::string& arch) {
    TuneCache all;
    std::error_code ec;
    const fs::path d = fs::path(dir) / "tune";
    if (dir.empty() || !fs::is_directory(d, ec)) return all;
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(d, ec))
        if (e.path().extension() == ".json" && e.is_regular_file(ec)) files.push_back(e.path());
    std::sort(files.begin(), files.end());  // a fixed order: the same records win every time
    for (const fs::path& f : files) {
        TuneCache one;
        if (!one.load(f.string(), nullptr)) continue;
        const CacheIdentity& got = one.id_;
        if (got.arch() != arch || got.nvrtc != id.nvrtc || got.stofc != id.stofc || got.templates != id.templates ||
            got.kernels != id.kernels)
            continue;
        for (const auto& [k, r] : one.records_) all.records_.emplace(k, r);
    }
    return all;
}

bool TuneCache::load(const std::string& path, const CacheIdentity* want) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return false;
    auto ignore = [&](const std::string& why) {
        spdlog::warn("tuning cache {} {}; ignoring it", path, why);
        records_.clear();
        return false;
    };
    if (!fs::is_regular_file(path, ec)) return ignore("is not a regular file");
    const uintmax_t size = fs::file_size(path, ec);
    if (ec || size > (uintmax_t{256} << 20)) return ignore("is too large to be a tuning cache");
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        const json j = json::parse(ss.str());
        if (j.at("format").get<int>() != 1) return ignore("has an unknown format");
        const CacheIdentity got = identity_from(j.at("identity"));
        if (want && !(got == *want)) return ignore("belongs to another GPU or software version");
        const json& rs = j.at("records");
        if (j.at("checksum").get<std::string>() != fmt::format("{:016x}", fnv1a(rs.dump())))
            return ignore("is damaged (checksum mismatch)");
        for (const auto& [k, v] : rs.items()) {
            CacheRecord r{v.at("us").get<double>(), v.at("spread").get<double>(), v.at("bytes").get<int64_t>(),
                          v.at("kind").get<std::string>()};
            if (!(r.us > 0) || !(r.spread >= 0)) return ignore(fmt::format("is damaged (record '{}')", k));
            records_[k] = r;
        }
        id_ = got;
        return true;
    } catch (const std::exception& e) {
        return ignore(fmt::format("is damaged ({})", e.what()));
    }
}

std::optional<CacheRecord> TuneCache::find(const std::string& key) const {
    auto it = records_.find(key);
    if (it == records_.end()) return std::nullopt;
    return it->second;
}

void TuneCache::put(const std::string& key, const CacheRecord& r) {
    if (path_.empty()) return;
    records_[key] = r;
    dirty_ = true;
}

void TuneCache::save() {
    if (!dirty_ || path_.empty()) return;
    const json rs = records_json(records_);
    const json j = {
        {"format", 1}, {"identity", to_json(id_)}, {"records", rs}, {"checksum", fmt::format("{:016x}", fnv1a(rs.dump()))}};
    std::error_code ec;
    fs::create_directories(fs::path(path_).parent_path(), ec);
    const std::string tmp = fmt::format("{}.{}.tmp", path_, getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << j.dump(1);
        if (!out.flush()) {
            spdlog::warn("could not write the tuning cache {}; the measurements are not kept", path_);
            fs::remove(tmp, ec);
            return;
        }
    }
    fs::rename(tmp, path_, ec);
    if (ec) {
        spdlog::warn("could not write the tuning cache {} ({}); the measurements are not kept", path_, ec.message());
        fs::remove(tmp, ec);
        return;
    }
    dirty_ = false;
}

}  // namespace stof::tune
