#include "exec/executor.hpp"

#include "exec/driver_api.hpp"
#include "stof/cuda_check.hpp"
#include "stof/kernels/key_valid.hpp"
#include "stof/runtime.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace stof::exec {

namespace {

constexpr uint32_t kDefaultSharedLimit = 48 * 1024;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// "sm_90" → {90, ""}, "sm_90a" → {90, "a"}; {-1, ""} when not of that form.
std::pair<int, std::string> parse_arch(const std::string& arch) {
    if (arch.compare(0, 3, "sm_") != 0) return {-1, ""};
    size_t i = 3;
    int v = 0;
    while (i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])) && v < 10000) v = v * 10 + (arch[i++] - '0');
    if (i == 3) return {-1, ""};
    return {v, arch.substr(i)};
}

// Whether a cubin built for `arch` runs on a device of compute capability major.minor:
// the same arch, or (without an arch-specific suffix) the same major and a lower minor.
bool cubin_runs_on(const std::string& arch, int major, int minor) {
    const auto [v, suffix] = parse_arch(arch);
    if (v < 0) return false;
    if (v == major * 10 + minor) return true;
    return suffix.empty() && v / 10 == major && v % 10 <= minor;
}

}  // namespace

Executor::Executor(plan::Plan plan, int device, bool placeholders) : plan_(std::move(plan)), device_(device) {
    plan::validate(plan_);
    STOF_CHECK(placeholders || !plan_.has_placeholders(), "{}", plan::kPlaceholderRefusal);
    const int count = cuda_device_count();
    STOF_CHECK(device >= 0 && device < count, "CUDA device {} does not exist ({} device{} present)", device, count,
               count == 1 ? "" : "s");
    try {
        STOF_CUDA_CHECK(cudaSetDevice(device_));
        STOF_CUDA_CHECK(cudaFree(nullptr));  // creates the primary context the driver calls use
        cudaDeviceProp prop{};
        STOF_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
        cc_major_ = prop.major;
        cc_minor_ = prop.minor;
        device_name_ = fmt::format("{} (sm_{}{})", prop.name, cc_major_, cc_minor_);
        STOF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        STOF_CUDA_CHECK(cudaEventCreateWithFlags(&last_done_, cudaEventDisableTiming));
        load_modules();
        allocate();
        upload_masks();
        prepare_steps();
        spdlog::debug("loaded plan on device {}: {}, arena {} bytes, {} kernels, {} steps", device_, device_name_,
                      plan_.arena_bytes, plan_.kernels.size(), plan_.steps.size());
    } catch (...) {
        release();
        throw;
    }
}

Executor::~Executor() { release(); }

void Executor::release() noexcept {
    cudaSetDevice(device_);
    if (stream_) cudaStreamSynchronize(stream_);
    if (last_recorded_) cudaEventSynchronize(last_done_);
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    if (graph_) cudaGraphDestroy(graph_);
    graph_exec_ = nullptr;
    graph_ = nullptr;
    steps_.clear();
    if (lt_) cublasLtDestroy(lt_);
    lt_ = nullptr;
    for (void** p : {&workspace_, &work_queues_, &split_workspace_, &masks_, &weights_, &arena_}) {
        if (*p) cudaFree(*p);
        *p = nullptr;
    }
    for (void* p : runtime_mask_memory_) cudaFree(p);
    runtime_mask_memory_.clear();
    for (CUmodule m : modules_)
        if (m) driver().cuModuleUnload(m);
    modules_.clear();
    functions_.clear();
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
    if (last_done_) cudaEventDestroy(last_done_);
    last_done_ = nullptr;
    last_recorded_ = false;
    cudaGetLastError();  // leave no error behind for the caller's next CUDA call
}

void Executor::activate() const { STOF_CUDA_CHECK(cudaSetDevice(device_)); }

void Executor::load_modules() {
    const DriverApi& drv = driver();
    const std::string device_arch = fmt::format("sm_{}{}", cc_major_, cc_minor_);
    int jit = 0;
    for (const plan::KernelDesc& k : plan_.kernels) {
        CUmodule module = nullptr;
        CUresult r = CUDA_ERROR_NO_BINARY_FOR_GPU;
        if (!k.cubin.empty() && cubin_runs_on(k.arch, cc_major_, cc_minor_)) {
            r = drv.cuModuleLoadData(&module, k.cubin.data());
            if (r != CUDA_SUCCESS && k.ptx.empty())
                STOF_FAIL("kernel '{}': cannot load its {} cubin: {}", k.key, k.arch, driver_error_string(r));
            if (r != CUDA_SUCCESS) spdlog::debug("kernel '{}': cubin rejected ({}), using PTX", k.key, driver_error_string(r));
        }
        if (r != CUDA_SUCCESS) {
            STOF_CHECK(!k.ptx.empty(),
                       "kernel '{}' has a cubin for {} only and no PTX; the device is {}: recompile the model with "
                       "stofc for {}",
                       k.key, k.arch, device_arch, device_arch);
            r = drv.cuModuleLoadData(&module, k.ptx.c_str());
            STOF_CHECK(r == CUDA_SUCCESS,
                       "kernel '{}': the driver cannot JIT-compile its PTX for {}: {} (update the "
                       "driver or recompile the model for {})",
                       k.key, device_arch, driver_error_string(r), device_arch);
            spdlog::debug("kernel '{}': JIT-compiled PTX ({} cubin)", k.key, k.cubin.empty() ? "no" : k.arch);
            ++jit;
        }
        modules_.push_back(module);
        CUfunction fn = nullptr;
        STOF_CU_CHECK(drv.cuModuleGetFunction(&fn, module, k.entry.c_str()));
        functions_.push_back(fn);
    }
    if (jit > 0)
        spdlog::warn(
            "{} of {} kernels have no cubin for {}: JIT-compiled their PTX (slower to load; recompile the "
            "model for {} to avoid it)",
            jit, plan_.kernels.size(), device_arch, device_arch);

    // Dynamic shared memory above the default limit needs an opt-in per function.
    std::vector<uint32_t> shared(plan_.kernels.size(), 0);
    for (const plan::Step& s : plan_.steps)
        if (s.kind == plan::StepKind::launch)
            shared[s.launch.kernel] = std::max(shared[s.launch.kernel], s.launch.shared_bytes);
    int optin = 0;
    STOF_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
    for (size_t i = 0; i < shared.size(); ++i) {
        if (shared[i] <= kDefaultSharedLimit) continue;
        STOF_CHECK(shared[i] <= static_cast<uint32_t>(optin), "kernel '{}' needs {} bytes of shared memory; {} allows {}",
                   plan_.kernels[i].key, shared[i], device_name_, optin);
        STOF_CU_CHECK(drv.cuFuncSetAttribute(functions_[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             static_cast<int>(shared[i])));
    }
}

void Executor::allocate() {
    if (plan_.arena_bytes > 0) {
        const cudaError_t e = cudaMalloc(&arena_, plan_.arena_bytes);
        STOF_CHECK(e == cudaSuccess, "cannot allocate the {}-byte arena on {}: {}", plan_.arena_bytes, device_name_,
                   cudaGetErrorString(e));
        STOF_CUDA_CHECK(cudaMemsetAsync(arena_, 0, plan_.arena_bytes, stream_));
    }
    if (plan_.weights_bytes() > 0) {
        const cudaError_t e = cudaMalloc(&weights_, plan_.weights_bytes());
        STOF_CHECK(e == cudaSuccess, "cannot allocate {} bytes for the weights on {}: {}", plan_.weights_bytes(), device_name_,
                   cudaGetErrorString(e));
        if (!plan_.weights.empty())
            STOF_CUDA_CHECK(cudaMemcpy(weights_, plan_.weights.data(), plan_.weights.size(), cudaMemcpyHostToDevice));
        plan_.weights.clear();
        plan_.weights.shrink_to_fit();
    }
    bool gemm = false;
    for (const plan::Step& s : plan_.steps) gemm = gemm || s.kind == plan::StepKind::gemm;
    if (gemm) {
        STOF_CUBLAS_CHECK(cublasLtCreate(&lt_));
        STOF_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
    }
    const size_t attention_steps = std::count_if(plan_.steps.begin(), plan_.steps.end(),
                                                 [](const plan::Step& s) { return s.kind == plan::StepKind::attention; });
    if (attention_steps > 0) {
        const size_t bytes = attention_steps * 2 * sizeof(uint32_t);
        STOF_CUDA_CHECK(cudaMalloc(&work_queues_, bytes));
        STOF_CUDA_CHECK(cudaMemsetAsync(work_queues_, 0, bytes, stream_));
    }
    STOF_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void Executor::upload_masks() {
    // One buffer: per mask row_ptr, col_idx, bitmap_idx, bitmaps, each 256-byte aligned.
    uint64_t total = 0;
    std::vector<uint64_t> offsets;
    for (const plan::MaskEntry& e : plan_.masks) {
        const SparseMask& m = e.mask;
        for (uint64_t bytes : {m.row_ptr.size() * 4, m.col_idx.size() * 4, m.bitmap_idx.size() * 4, m.bitmaps.size() * 8}) {
            offsets.push_back(total);
            total = align_up(total + bytes, plan::kAlignment);
        }
    }
    if (plan_.masks.empty()) return;
    if (total == 0) total = plan::kAlignment;
    std::vector<uint8_t> host(total, 0);
    size_t o = 0;
    for (const plan::MaskEntry& e : plan_.masks) {
        const SparseMask& m = e.mask;
        std::memcpy(host.data() + offsets[o], m.row_ptr.data(), m.row_ptr.size() * 4);
        std::memcpy(host.data() + offsets[o + 1], m.col_idx.data(), m.col_idx.size() * 4);
        std::memcpy(host.data() + offsets[o + 2], m.bitmap_idx.data(), m.bitmap_idx.size() * 4);
        std::memcpy(host.data() + offsets[o + 3], m.bitmaps.data(), m.bitmaps.size() * 8);
        o += 4;
    }
    STOF_CUDA_CHECK(cudaMalloc(&masks_, total));
    STOF_CUDA_CHECK(cudaMemcpy(masks_, host.data(), total, cudaMemcpyHostToDevice));
    o = 0;
    auto* base = static_cast<uint8_t*>(masks_);
    for (const plan::MaskEntry& e : plan_.masks) {
        const SparseMask& m = e.mask;
        kernels::SparseMaskView v;
        v.row_ptr = reinterpret_cast<const int32_t*>(base + offsets[o]);
        v.col_idx = reinterpret_cast<const int32_t*>(base + offsets[o + 1]);
        v.bitmap_idx = reinterpret_cast<const int32_t*>(base + offsets[o + 2]);
        v.bitmaps = reinterpret_cast<const uint64_t*>(base + offsets[o + 3]);
        v.rows = m.rows;
        v.cols = m.cols;
        v.tile_m = m.tile_m;
        v.tile_n = m.tile_n;
        v.mask_batch = m.mask_batch;
        v.mask_heads = m.mask_heads;
        v.fill3 = static_cast<float>(grouped_row_fill(m, 3));
        const TileRowLengths lengths = tile_row_lengths(m);
        v.longest_row = lengths.longest;
        v.mean_row = static_cast<float>(lengths.mean);
        static_assert(kLongRows == kernels::kMaskLongRows);
        std::copy(lengths.long_rows.begin(), lengths.long_rows.end(), v.long_rows);
        mask_views_.push_back(v);
        o += 4;
    }
    // One split workspace for the attention steps, which run one after another, where a mask lists long rows.
    if (std::any_of(mask_views_.begin(), mask_views_.end(),
                    [](const kernels::SparseMaskView& v) { return v.long_rows[0] >= 0; })) {
        STOF_CUDA_CHECK(cudaMalloc(&split_workspace_, kernels::kAttentionSplitBytes));
        STOF_CUDA_CHECK(cudaMemsetAsync(split_workspace_, 0, kernels::kAttentionSplitBytes, stream_));
        STOF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    // Run-time masks: buffers for the worst case (every tile partial), filled by mask_convert steps.
    runtime_masks_.resize(plan_.masks.size());
    for (size_t i = 0; i < plan_.masks.size(); ++i) {
        if (!plan_.masks[i].runtime) continue;
        const SparseMask& m = plan_.masks[i].mask;
        MaskConvert& c = runtime_masks_[i];
        c.in.batch = m.mask_batch;
        c.in.heads = m.mask_heads;
        c.in.rows = m.rows;
        c.in.cols = m.cols;
        c.in.stride_row = m.cols;
        c.in.stride_h = static_cast<int64_t>(m.rows) * m.cols;
        c.in.stride_b = c.in.stride_h * m.mask_heads;
        c.tile_m = m.tile_m;
        c.tile_n = m.tile_n;
        kernels::MaskConvertSizes sz;
        STOF_CUDA_CHECK(kernels::mask_convert_sizes(c.in, c.tile_m, c.tile_n, &sz));
        uint64_t at[6], end = 0;
        const size_t sizes[6] = {sz.row_ptr_bytes, sz.col_idx_bytes, sz.bitmap_idx_bytes,
                                 sz.bitmaps_bytes, sz.counts_bytes,  sz.workspace_bytes};
        for (int k = 0; k < 6; ++k) {
            at[k] = end;
            end = align_up(end + sizes[k], plan::kAlignment);
        }
        void* mem = nullptr;
        STOF_CUDA_CHECK(cudaMalloc(&mem, end));
        runtime_mask_memory_.push_back(mem);
        auto* b = static_cast<uint8_t*>(mem);
        c.out.row_ptr = reinterpret_cast<int32_t*>(b + at[0]);
        c.out.col_idx = reinterpret_cast<int32_t*>(b + at[1]);
        c.out.bitmap_idx = reinterpret_cast<int32_t*>(b + at[2]);
        c.out.bitmaps = reinterpret_cast<uint64_t*>(b + at[3]);
        c.out.counts = reinterpret_cast<int32_t*>(b + at[4]);
        c.workspace = b + at[5];
        c.workspace_bytes = sz.workspace_bytes;
        mask_views_[i] = kernels::sparse_mask_view(c.in, c.tile_m, c.tile_n, c.out);
    }
}

void* Executor::address(int32_t t) const {
    const plan::TensorDesc& d = plan_.tensors.at(static_cast<size_t>(t));
    auto* base = static_cast<uint8_t*>(d.buffer == plan::BufferKind::weights ? weights_ : arena_);
    return base ? base + d.offset : nullptr;
}

void Executor::prepare_steps() {
    steps_.reserve(plan_.steps.size());
    int sm90_steps = 0, fused_steps = 0;
    std::vector<std::string> off_sm90;   // attention steps whose Hopper kernel cannot run here, and why
    std::vector<std::string> off_fused;  // fused-epilogue GEMM steps whose kernel cannot run here, and why
    uint32_t* next_queue = static_cast<uint32_t*>(work_queues_);
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
        const plan::Step& s = plan_.steps[i];
        Prepared p;
        p.kind = s.kind;
        const auto at = [&](int32_t t, uint64_t byte_offset) -> uint8_t* {
            return t < 0 ? nullptr : static_cast<uint8_t*>(address(t)) + byte_offset;
        };
        try {
            switch (s.kind) {
                case plan::StepKind::launch: {
                    const plan::LaunchStep& l = s.launch;
                    Launch& L = p.launch;
                    L.fn = functions_[l.kernel];
                    std::memcpy(L.grid, l.grid, sizeof(L.grid));
                    std::memcpy(L.block, l.block, sizeof(L.block));
                    L.shared_bytes = l.shared_bytes;
                    L.storage.assign(l.args.size(), 0);
                    for (size_t a = 0; a < l.args.size(); ++a) {
                        const plan::Arg& arg = l.args[a];
                        void* slot = &L.storage[a];
                        switch (arg.kind) {
                            case plan::ParamKind::pointer: {
                                void* ptr = at(arg.tensor, arg.byte_offset);
                                std::memcpy(slot, &ptr, sizeof(ptr));
                                break;
                            }
                            case plan::ParamKind::i32: {
                                const auto v = static_cast<int32_t>(arg.i);
                                std::memcpy(slot, &v, sizeof(v));
                                break;
                            }
                            case plan::ParamKind::i64: std::memcpy(slot, &arg.i, sizeof(arg.i)); break;
                            case plan::ParamKind::f32: std::memcpy(slot, &arg.f, sizeof(arg.f)); break;
                        }
                    }
                    for (uint64_t& slot : L.storage) L.params.push_back(&slot);
                    break;
                }
                case plan::StepKind::gemm: {
                    const plan::GemmStep& g = s.gemm;
                    GemmPointers ptr;
                    ptr.a = at(g.a, g.a_offset);
                    ptr.b = at(g.b, g.b_offset);
                    ptr.c = at(g.c, g.c_offset);
                    ptr.d = at(g.d, g.d_offset);
                    ptr.bias = at(g.bias, 0);
                    ptr.cos = at(g.rotary.cos, 0);
                    ptr.sin = at(g.rotary.sin, 0);
                    p.gemm = std::make_unique<PreparedGemm>(lt_, g, plan_.tensors[g.a].dtype, ptr, kWorkspaceBytes, stream_);
                    if (plan::fused_epilogue(g.epilogue)) {
                        ++fused_steps;
                        if (!p.gemm->fallback().empty()) off_fused.push_back(fmt::format("step {}: {}", i, p.gemm->fallback()));
                    }
                    break;
                }
                case plan::StepKind::attention: {
                    const plan::AttentionStep& a = s.attention;
                    kernels::AttentionArgs A;
                    A.dtype = plan_.tensors[a.q.tensor].dtype == DType::bf16 ? kernels::ElemType::bf16 : kernels::ElemType::f16;
                    A.batch = a.batch;
                    A.heads = a.heads;
                    A.kv_heads = a.kv_heads;
                    A.seq_q = a.seq_q;
                    A.seq_k = a.seq_k;
                    A.head_dim = a.head_dim;
                    const auto operand = [&](const plan::AttentionOperand& o) {
                        kernels::AttnTensor t;
                        t.data = at(o.tensor, o.byte_offset);
                        t.stride_b = o.stride_b;
                        t.stride_h = o.stride_h;
                        t.stride_s = o.stride_s;
                        return t;
                    };
                    A.q = operand(a.q);
                    A.k = operand(a.k);
                    A.v = operand(a.v);
                    A.o = operand(a.o);
                    A.scale = a.scale;
                    A.mask = mask_views_[a.mask];
                    A.key_valid = reinterpret_cast<const uint64_t*>(at(a.key_valid, 0));
                    A.bias = at(a.bias, 0);
                    A.bias_stride_h = a.bias_stride_h;
                    A.bias_stride_s = a.bias_stride_s;
                    A.block_m = A.mask.tile_m == 128 ? 128 : 0;
                    A.work_queue = next_queue;  // the step's problems run one after another
                    A.split_workspace = split_workspace_;
                    next_queue += 2;
                    p.attention_kernel = static_cast<kernels::AttentionKernel>(a.kernel);  // 0, 1, 2 (plan_validate)
                    const std::string why = a.fold > 1 ? kernels::check_folded_attention_args(A, p.attention_kernel, a.fold)
                                                       : kernels::check_attention_args(A, p.attention_kernel);
                    STOF_CHECK(why.empty(), "the {} attention kernel does not support this step: {}",
                               plan::attention_kernel_name(a.kernel), why);
                    p.attention = a.fold > 1 ? kernels::folded_attention_problems(A, a.fold) : std::vector{A};
                    if (p.attention_kernel == kernels::AttentionKernel::block_wise_sm90) {
                        ++sm90_steps;
                        for (const kernels::AttentionArgs& f : p.attention)
                            if (std::string r = kernels::attention_sm90_refusal(f); !r.empty()) {
                                off_sm90.push_back(fmt::format("step {}: {}", i, r));
                                break;
                            }
                    }
                    break;
                }
                case plan::StepKind::key_valid: {
                    const plan::KeyValidStep& k = s.key_valid;
                    p.key_valid.mask = at(k.mask, 0);
                    p.key_valid.elem_bytes = static_cast<int32_t>(dtype_size(plan_.tensors[k.mask].dtype));
                    p.key_valid.batch = k.batch;
                    p.key_valid.seq = k.seq;
                    p.key_valid.fold = k.fold;
                    p.key_valid.words = reinterpret_cast<uint64_t*>(at(k.words, 0));
                    break;
                }
                case plan::StepKind::copy: {
                    const plan::CopyStep& c = s.copy;
                    p.copy.src = at(c.src, c.src_offset);
                    p.copy.dst = at(c.dst, c.dst_offset);
                    p.copy.bytes = c.bytes;
                    break;
                }
                case plan::StepKind::mask_convert: {
                    p.mask_convert = runtime_masks_[s.mask_convert.mask];
                    p.mask_convert.in.data = at(s.mask_convert.keep, 0);
                    const std::string why = kernels::check_mask_convert_args(p.mask_convert.in, p.mask_convert.tile_m,
                                                                             p.mask_convert.tile_n);
                    STOF_CHECK(why.empty(), "the mask conversion does not support this step: {}", why);
                    break;
                }
            }
        } catch (const Error& e) {
            STOF_FAIL("schedule step {} ({}): {}", i, s.label.empty() ? plan::step_kind_name(s.kind) : s.label, e.what());
        }
        steps_.push_back(std::move(p));
    }
    if (!off_sm90.empty())
        spdlog::warn("{} of {} attention steps planned for the Hopper kernel run on the slower sm_80 kernel here ({}{})",
                     off_sm90.size(), sm90_steps, off_sm90.front(), off_sm90.size() > 1 ? ", ..." : "");
    if (!off_fused.empty())
        spdlog::warn(
            "{} of {} GEMM steps planned with the fused GELU epilogue run as a cuBLASLt GEMM and a separate GELU here "
            "({}{})",
            off_fused.size(), fused_steps, off_fused.front(), off_fused.size() > 1 ? ", ..." : "");
}

void Executor::enqueue_step(size_t i) { enqueue_step(i, stream_); }

void Executor::enqueue_step(size_t i, cudaStream_t stream) {
    const Prepared& p = steps_[i];
    switch (p.kind) {
        case plan::StepKind::launch: {
            const Launch& L = p.launch;
            STOF_CU_CHECK(driver().cuLaunchKernel(L.fn, L.grid[0], L.grid[1], L.grid[2], L.block[0], L.block[1], L.block[2],
                                                  L.shared_bytes, reinterpret_cast<CUstream>(stream),
                                                  const_cast<void**>(L.params.data()), nullptr));
            break;
        }
        case plan::StepKind::gemm: p.gemm->run(lt_, workspace_, kWorkspaceBytes, stream); break;
        case plan::StepKind::attention:
            for (const kernels::AttentionArgs& f : p.attention)
                STOF_CUDA_CHECK(kernels::launch_attention(f, p.attention_kernel, stream));
            break;
        case plan::StepKind::key_valid: {
            const KeyValid& k = p.key_valid;
            STOF_CUDA_CHECK(kernels::launch_key_valid(k.mask, k.elem_bytes, k.batch, k.seq, k.words, stream, k.fold));
            break;
        }
        case plan::StepKind::copy:
            STOF_CUDA_CHECK(cudaMemcpyAsync(p.copy.dst, p.copy.src, p.copy.bytes, cudaMemcpyDeviceToDevice, stream));
            break;
        case plan::StepKind::mask_convert: {
            const MaskConvert& c = p.mask_convert;
            STOF_CUDA_CHECK(
                kernels::convert_dense_mask(c.in, c.tile_m, c.tile_n, c.out, c.workspace, c.workspace_bytes, stream));
            break;
        }
    }
}

void Executor::enqueue_steps(cudaStream_t stream) {
    for (size_t i = 0; i < steps_.size(); ++i) {
        try {
            enqueue_step(i, stream);
        } catch (const Error& e) {
            const plan::Step& s = plan_.steps[i];
            STOF_FAIL("schedule step {} ({}): {}", i, s.label.empty() ? plan::step_kind_name(s.kind) : s.label, e.what());
        }
    }
}

void Executor::run_step(size_t i) {
    STOF_CHECK(i < steps_.size(), "step {} is out of range ({} steps)", i, steps_.size());
    activate();
    try {
        begin_on(stream_);
        enqueue_step(i, stream_);
        end_on(stream_);
        synchronize();
    } catch (const Error& e) {
        const plan::Step& s = plan_.steps[i];
        STOF_FAIL("schedule step {} ({}): {}", i, s.label.empty() ? plan::step_kind_name(s.kind) : s.label, e.what());
    }
}

void Executor::capture() {
    STOF_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
        enqueue_steps(stream_);
    } catch (...) {
        cudaGraph_t partial = nullptr;
        cudaStreamEndCapture(stream_, &partial);
        if (partial) cudaGraphDestroy(partial);
        cudaGetLastError();
        throw;
    }
    STOF_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
    STOF_CUDA_CHECK(cudaGraphInstantiate(&graph_exec_, graph_, 0));
}

void Executor::enqueue_captured(cudaStream_t stream) {
    activate();
    enqueue_steps(stream);
}

void Executor::enqueue(bool graph) { enqueue(graph, stream_); }

void Executor::enqueue(bool graph, cudaStream_t stream) {
    activate();
    begin_on(stream);
    if (!graph || steps_.empty()) {
        enqueue_steps(stream);
    } else {
        // Captured once on the executor's own stream; a graph launches on any stream.
        if (!graph_exec_) capture();
        STOF_CUDA_CHECK(cudaGraphLaunch(graph_exec_, stream));
    }
    end_on(stream);
}

void Executor::begin_on(cudaStream_t stream) const {
    if (last_recorded_ && stream != last_stream_) STOF_CUDA_CHECK(cudaStreamWaitEvent(stream, last_done_, 0));
}

void Executor::end_on(cudaStream_t stream) const {
    STOF_CUDA_CHECK(cudaEventRecord(last_done_, stream));
    last_stream_ = stream;
    last_recorded_ = true;
}

void Executor::synchronize() const { STOF_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void Executor::upload(int32_t t, const void* host) {
    activate();
    const uint64_t bytes = plan_.tensors.at(static_cast<size_t>(t)).bytes();
    if (bytes == 0) return;
    begin_on(stream_);
    STOF_CUDA_CHECK(cudaMemcpyAsync(address(t), host, bytes, cudaMemcpyHostToDevice, stream_));
    end_on(stream_);
    synchronize();
}

void Executor::download(int32_t t, void* host) const {
    activate();
    const uint64_t bytes = plan_.tensors.at(static_cast<size_t>(t)).bytes();
    if (bytes == 0) return;
    begin_on(stream_);
    STOF_CUDA_CHECK(cudaMemcpyAsync(host, address(t), bytes, cudaMemcpyDeviceToHost, stream_));
    end_on(stream_);
    synchronize();
}

}  // namespace stof::exec
