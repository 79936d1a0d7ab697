// Timing candidate plans on the GPU through the runtime's own launch path, in a
// worker process (`stofc tune-worker`, tune/tune_worker.cpp): a candidate that
// crashes or hangs kills the worker, which is restarted, never stofc.
//
// A measurement loads the plan with the executor, fills its inputs with random
// data from `seed` (tune/random_inputs.hpp; the same plan inputs give the same data:
// floats uniform in [-1, 1], integers in the tensor's [int_lo, int_hi] or 0, bools 0/1,
// kept across measurements up to an eighth of the machine's memory; a padding mask,
// plan::is_padding_mask, all ones: no key padded, as stof-run runs it) and its
// placeholder weights (plan::Plan::placeholders) on the GPU: element i of a weight of
// shape S is element i mod 65536 of the stream (seed, S), uniform in [-1/32, 1/32]
// (finite and small in every float type; segments of one signature, whose weights have
// the same shapes, get the same weights, so a candidate and the unfused reference of
// its signature agree whichever occurrence each was cut from), then runs
// `warmup` CUDA-graph replays, then times, with CUDA events, `reps` replays of one
// graph holding N copies of the plan's steps back to back (N up to 20, for about
// 200 µs a replay): each copy pays what its steps pay inside a whole plan (launches
// inside a graph, inputs as warm as a neighbour's fresh outputs), not a host launch.
// The time is the median replay over N, the spread half the interquartile range. After
// the runs the worker can keep the plan's outputs as a reference (OutputUse::keep) or
// compare them with one it keeps (OutputUse::check, by check_outputs' rules, each output
// piece by piece as it leaves the GPU through pinned buffers): outputs never leave the
// worker. A restarted worker holds no references.
#pragma once

#include "stof/plan.hpp"
#include "stof/tensor.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace stof::tune {

struct MeasureOptions {
    int reps = 15, warmup = 3;
    double timeout_s = 30;            // one request; the worker is killed and restarted after it
    std::string work_dir;             // plans pass through here (a fresh temporary directory when empty)
    std::vector<std::string> worker;  // the worker's command line (default: this program, "tune-worker")
};

// What the worker does with a measured plan's outputs: nothing, keep them as the reference
// `key` (replacing one of that key), or compare them with the reference `key`.
struct OutputUse {
    enum Kind { none, keep, check } kind = none;
    std::string key;
};

struct Measurement {
    bool ok = false;
    std::string error;  // why not ok: the worker's error, a crash or a timeout
    double median_us = 0, spread_us = 0;
    int reps = 0;
    double load_ms = 0;  // the worker's time to read and load the plan
    // OutputUse::check: whether the worker held the reference (false after a restart) and,
    // if it did, why the outputs differ from it ("" when they match), and the time to copy
    // them out of the GPU and compare them.
    bool checked = false;
    std::string mismatch;
    double check_ms = 0;
};

class Measurer {
public:
    explicit Measurer(MeasureOptions opt = {});
    ~Measurer();
    Measurer(const Measurer&) = delete;
    Measurer& operator=(const Measurer&) = delete;

    // Times p (validated first), then uses its outputs as `outputs` says.
    Measurement measure(const plan::Plan& p, uint64_t seed, const OutputUse& outputs = {});
    // The GPU the worker runs on ("NVIDIA H100 80GB HBM3"), its SM count, driver and
    // cuBLASLt versions; starts the worker. Throws stof::Error when it has no GPU.
    struct Device {
        std::string name;
        int sm_count = 0, cc_major = 0, cc_minor = 0;
        int driver_version = 0;
        size_t cublaslt_version = 0;
    };
    const Device& device();
    int restarts() const;

private:
    struct Worker;
    nlohmann::json call(const nlohmann::json& req, double timeout_s);

    std::unique_ptr<Worker> worker_;
    MeasureOptions opt_;
    std::string dir_;
    bool own_dir_ = false;
    uint64_t counter_ = 0;
    Device device_;
    bool have_device_ = false, started_ = false;
};

// `stofc tune-worker`: serves measurement requests on stdin/stdout until EOF.
int run_tune_worker();

}  // namespace stof::tune
