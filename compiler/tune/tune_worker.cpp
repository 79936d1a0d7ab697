// `stofc tune-worker`: the measuring side of tune/measure.hpp. One JSON request a
// line on stdin, one JSON reply a line on stdout:
//   {"op":"device"}  → {"ok":true,"name":..,"sm_count":..,"cc":[9,0],"driver":..,"cublaslt":..}
//   {"op":"measure","plan":PATH,"seed":N,"reps":N,"warmup":N[,"keep":KEY | "check":KEY]}
//                    → {"ok":true,"load_ms":..,"median_us":..,"spread_us":..,"reps":N
//                       [,"checked":BOOL,"mismatch":"..","check_ms":..]}
//                      keep: the outputs are kept as the reference KEY; check: compared with
//                      the reference KEY (checked false when none is kept; mismatch "" when
//                      they match, tune/output_check.hpp)
//   any failure      → {"ok":false,"error":"..."}
#include "tune/measure.hpp"

#include "codegen/nvrtc.hpp"
#include "exec/executor.hpp"
#include "plan/plan_reader.hpp"
#include "stof/cuda_check.hpp"
#include "tune/output_check.hpp"
#include "tune/random_inputs.hpp"

#include <cublasLt.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>

namespace stof::tune {

namespace {

using nlohmann::json;

// Fills the placeholder weights of ex's plan (tune/measure.hpp states the values): the first
// kPlaceholderBlock elements of each from the host, the rest doubled on the GPU from them.
void fill_placeholders(exec::Executor& ex, uint64_t seed) {
    constexpr int64_t kPlaceholderBlock = 65536;
    const plan::Plan& p = ex.plan();
    for (int32_t t : p.placeholders) {
        const plan::TensorDesc& d = p.tensors[static_cast<size_t>(t)];
        const int64_t n = numel(d.shape);
        if (n == 0) continue;
        const uint64_t stream = codegen::fnv1a(fmt::format("{}", fmt::join(d.shape, "x")), seed);
        Tensor block(d.dtype, {std::min(n, kPlaceholderBlock)});
        for (int64_t i = 0; i < block.numel(); ++i) block.set_f64(i, draw_unit(stream, static_cast<uint64_t>(i)) / 32);
        auto* dst = static_cast<uint8_t*>(ex.address(t));
        STOF_CUDA_CHECK(cudaMemcpyAsync(dst, block.bytes.data(), block.bytes.size(), cudaMemcpyHostToDevice, ex.stream()));
        const size_t total = d.bytes();
        for (size_t done = block.bytes.size(); done < total;) {
            const size_t c = std::min(done, total - done);
            STOF_CUDA_CHECK(cudaMemcpyAsync(dst + done, dst, c, cudaMemcpyDeviceToDevice, ex.stream()));
            done += c;
        }
        STOF_CUDA_CHECK(cudaStreamSynchronize(ex.stream()));
    }
}

// Tensors leave the GPU through two pinned host buffers of kPieceBytes, a piece copying into
// one while the caller reads the other (a copy into pageable memory, fresh for every output,
// moves a fraction of the link's rate).
class Staging {
public:
    static constexpr size_t kPieceBytes = size_t{32} << 20;
    static_assert(kPieceBytes % (kCompareBlock * 8) == 0, "a piece holds whole comparison blocks of every dtype");

    ~Staging() {
        for (int i = 0; i < 2; ++i) {
            if (ready_[i]) cudaEventDestroy(ready_[i]);
            if (buf_[i]) cudaFreeHost(buf_[i]);
        }
    }

    // f(piece, offset, bytes) for tensor t of ex's plan after the work enqueued so far, in
    // consecutive pieces of at most kPieceBytes; `piece` is valid until f returns.
    template <class F> void download(exec::Executor& ex, int32_t t, const F& f) {
        const size_t total = ex.plan().tensors.at(static_cast<size_t>(t)).bytes();
        if (total == 0) return;
        prepare();
        const auto* src = static_cast<const uint8_t*>(ex.address(t));
        const cudaStream_t stream = ex.stream();
        const size_t pieces = (total + kPieceBytes - 1) / kPieceBytes;
        const auto size = [&](size_t k) { return std::min(kPieceBytes, total - k * kPieceBytes); };
        const auto copy = [&](size_t k) {
            STOF_CUDA_CHECK(cudaMemcpyAsync(buf_[k & 1], src + k * kPieceBytes, size(k), cudaMemcpyDeviceToHost, stream));
            STOF_CUDA_CHECK(cudaEventRecord(ready_[k & 1], stream));
        };
        ex.begin_on(stream);
        try {
            copy(0);
            for (size_t k = 0; k < pieces; ++k) {
                if (k + 1 < pieces) copy(k + 1);  // into the buffer piece k - 1 was read from
                STOF_CUDA_CHECK(cudaEventSynchronize(ready_[k & 1]));
                f(static_cast<const void*>(buf_[k & 1]), k * kPieceBytes, size(k));
            }
        } catch (...) {
            cudaStreamSynchronize(stream);  // no copy may still write a buffer
            throw;
        }
        ex.end_on(stream);
    }

private:
    void prepare() {
        for (int i = 0; i < 2; ++i) {
            if (!buf_[i]) STOF_CUDA_CHECK(cudaMallocHost(&buf_[i], kPieceBytes));
            if (!ready_[i]) STOF_CUDA_CHECK(cudaEventCreateWithFlags(&ready_[i], cudaEventDisableTiming));
        }
    }

    void* buf_[2] = {nullptr, nullptr};
    cudaEvent_t ready_[2] = {nullptr, nullptr};
};

class Bench {
public:
    ~Bench() {
        if (start_) cudaEventDestroy(start_);
        if (stop_) cudaEventDestroy(stop_);
    }

    json device() {
        cudaDeviceProp prop{};
        STOF_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        int driver = 0;
        STOF_CUDA_CHECK(cudaDriverGetVersion(&driver));
        return {{"ok", true},
                {"name", prop.name},
                {"sm_count", prop.multiProcessorCount},
                {"cc", {prop.major, prop.minor}},
                {"driver", driver},
                {"cublaslt", cublasLtGetVersion()}};
    }

    json measure(const json& req) {
        const auto t0 = std::chrono::steady_clock::now();
        exec::Executor ex(plan::read_plan(req.at("plan").get<std::string>()), 0, true);
        ex.activate();
        prepare();
        const plan::Plan& p = ex.plan();
        const uint64_t seed = req.at("seed").get<uint64_t>();
        fill_placeholders(ex, seed);
        for (size_t i = 0; i < p.inputs.size(); ++i) {
            const int32_t t = p.inputs[i];
            const plan::TensorDesc& d = p.tensors[static_cast<size_t>(t)];
            if (plan::is_padding_mask(p, t)) ex.upload(t, full(d.dtype, d.shape, 1.0).bytes.data());
            else ex.upload(t, inputs_.get(d, seed * 1000003 + i).bytes.data());
        }
        const auto t1 = std::chrono::steady_clock::now();
        const int reps = std::max(1, req.at("reps").get<int>()), warmup = std::max(1, req.at("warmup").get<int>());
        for (int i = 0; i < warmup; ++i) ex.enqueue(true);
        ex.synchronize();
        // Copies of the plan back to back in one graph, so each pays what a step pays inside a
        // whole plan (no host launch), with enough of them for ~200 µs a replay.
        const double once = timed(ex.stream(), 1, [&] { ex.enqueue(true); });
        const int copies = std::clamp(static_cast<int>(200 / std::max(once, 1.0)), 1, 20);
        const Graph g(ex, copies);
        const auto replay = [&] { STOF_CUDA_CHECK(cudaGraphLaunch(g.exec, ex.stream())); };
        for (int i = 0; i < warmup; ++i) timed(ex.stream(), copies, replay);
        std::vector<double> us;
        for (int r = 0; r < reps; ++r) us.push_back(timed(ex.stream(), copies, replay));
        std::sort(us.begin(), us.end());
        json out = {{"ok", true},
                    {"load_ms", std::chrono::duration<double, std::milli>(t1 - t0).count()},
                    {"median_us", us[us.size() / 2]},
                    {"spread_us", (us[us.size() * 3 / 4] - us[us.size() / 4]) / 2},
                    {"reps", reps}};
        const std::string keep = req.value("keep", std::string()), check = req.value("check", std::string());
        if (!keep.empty()) {
            references_[keep] = outputs(ex);
        } else if (!check.empty()) {
            auto it = references_.find(check);
            out["checked"] = it != references_.end();
            if (it != references_.end()) {
                const auto c0 = std::chrono::steady_clock::now();
                out["mismatch"] = compare_outputs(ex, it->second);
                out["check_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
            }
        }
        return out;
    }

private:
    // The plan's outputs after the runs, in plan order.
    std::vector<Tensor> outputs(exec::Executor& ex) {
        const plan::Plan& p = ex.plan();
        std::vector<Tensor> out;
        for (int32_t o : p.outputs) {
            const plan::TensorDesc& d = p.tensors[static_cast<size_t>(o)];
            Tensor& t = out.emplace_back(d.dtype, d.shape);
            staging_.download(ex, o, [&](const void* piece, size_t offset, size_t bytes) {
                std::memcpy(t.bytes.data() + offset, piece, bytes);
            });
        }
        return out;
    }

    // check_outputs of the plan's outputs against `reference`, each output compared piece by
    // piece as it leaves the GPU.
    std::string compare_outputs(exec::Executor& ex, const std::vector<Tensor>& reference) {
        const plan::Plan& p = ex.plan();
        std::vector<CandidateOutput> outputs;
        for (int32_t o : p.outputs) {
            const plan::TensorDesc& d = p.tensors[static_cast<size_t>(o)];
            outputs.push_back({d.dtype, d.shape, [this, &ex, o, size = dtype_size(d.dtype)](OutputComparison& c) {
                                   staging_.download(ex, o, [&](const void* piece, size_t, size_t bytes) {
                                       c.add(piece, static_cast<int64_t>(bytes / size));
                                   });
                               }});
        }
        return check_outputs(outputs, reference);
    }

    // `copies` runs of ex's steps captured into one CUDA graph.
    struct Graph {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        Graph(exec::Executor& ex, int copies) {
            STOF_CUDA_CHECK(cudaStreamBeginCapture(ex.stream(), cudaStreamCaptureModeThreadLocal));
            try {
                for (int i = 0; i < copies; ++i) ex.enqueue(false);
            } catch (...) {
                cudaGraph_t partial = nullptr;
                cudaStreamEndCapture(ex.stream(), &partial);
                if (partial) cudaGraphDestroy(partial);
                cudaGetLastError();
                throw;
            }
            STOF_CUDA_CHECK(cudaStreamEndCapture(ex.stream(), &graph));
            if (const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess) {
                cudaGraphDestroy(graph);
                STOF_FAIL("cannot instantiate the timing graph: {}", cudaGetErrorString(e));
            }
        }
        ~Graph() {
            if (exec) cudaGraphExecDestroy(exec);
            if (graph) cudaGraphDestroy(graph);
        }
    };

    // µs per copy: the time of launch() (which enqueues `copies` copies on `stream`) over copies.
    template <class F> double timed(cudaStream_t stream, int copies, const F& launch) {
        STOF_CUDA_CHECK(cudaEventRecord(start_, stream));
        launch();
        STOF_CUDA_CHECK(cudaEventRecord(stop_, stream));
        STOF_CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0;
        STOF_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return 1e3 * ms / copies;
    }

    // The events, once (the executor made device 0 current).
    void prepare() {
        if (start_) return;
        STOF_CUDA_CHECK(cudaEventCreate(&start_));
        STOF_CUDA_CHECK(cudaEventCreate(&stop_));
    }

    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    Staging staging_;
    InputCache inputs_;
    std::map<std::string, std::vector<Tensor>> references_;  // OutputUse::keep's outputs by key
};

}  // namespace

int run_tune_worker() {
    spdlog::set_level(spdlog::level::warn);
    Bench bench;
    std::string line;
    while (std::getline(std::cin, line)) {
        json reply;
        try {
            const json req = json::parse(line);
            const std::string op = req.at("op").get<std::string>();
            if (op == "device") reply = bench.device();
            else if (op == "measure") reply = bench.measure(req);
            else reply = {{"ok", false}, {"error", "unknown request '" + op + "'"}};
        } catch (const std::exception& e) {
            reply = {{"ok", false}, {"error", e.what()}};
        }
        std::cout << reply.dump() << '\n' << std::flush;
    }
    return 0;
}

}  // namespace stof::tune
