#include "exec/gemm.hpp"

#include "stof/cuda_check.hpp"

#include <spdlog/spdlog.h>

#include <cstdint>

namespace stof::exec {

namespace {

cudaDataType_t lt_type(DType t) {
    switch (t) {
        case DType::f32: return CUDA_R_32F;
        case DType::f16: return CUDA_R_16F;
        case DType::bf16: return CUDA_R_16BF;
        default: STOF_FAIL("gemm: dtype {} is not supported (f32, f16, bf16)", dtype_name(t));
    }
}

cublasLtEpilogue_t lt_epilogue(plan::Epilogue e) {
    switch (e) {
        case plan::Epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
        case plan::Epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
        case plan::Epilogue::gelu: return CUBLASLT_EPILOGUE_GELU;
        case plan::Epilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
        case plan::Epilogue::relu: return CUBLASLT_EPILOGUE_RELU;
        case plan::Epilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
        case plan::Epilogue::bias_gelu_erf:
        case plan::Epilogue::swiglu:
        case plan::Epilogue::rotary: break;  // the fused kernels' (PreparedGemm)
    }
    STOF_FAIL("gemm: unknown epilogue {}", static_cast<int>(e));
}

// The largest power of two up to 256 dividing the address.
uint32_t alignment(const void* p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    uint32_t a = 256;
    while (a > 1 && v % a != 0) a /= 2;
    return a;
}

// A column-major rows × cols layout with leading dimension ld, batched.
cublasLtMatrixLayout_t layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    STOF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
    if (batch > 1) {
        const auto count = static_cast<int32_t>(batch);
        const cublasStatus_t s1 = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count));
        const cublasStatus_t s2 = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                                   sizeof(stride));
        if (s1 != CUBLAS_STATUS_SUCCESS || s2 != CUBLAS_STATUS_SUCCESS) {
            cublasLtMatrixLayoutDestroy(l);
            STOF_CUBLAS_CHECK(s1 != CUBLAS_STATUS_SUCCESS ? s1 : s2);
        }
    }
    return l;
}

template <class T> void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
    STOF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}

}  // namespace

LtGemm::LtGemm(cublasLtHandle_t lt, const plan::GemmStep& g, DType dtype, const GemmPointers& ptr, size_t workspace_bytes)
    : ptr_(ptr), alpha_(g.alpha), beta_(g.beta) {
    STOF_CHECK(g.batch <= INT32_MAX, "gemm: batch {} exceeds cuBLASLt's limit", g.batch);
    const cudaDataType_t t = lt_type(dtype);
    // The destructor does not run when the constructor throws: release() in the catch.
    try {
        STOF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        // cuBLASLt A = plan B (n×k after op), cuBLASLt B = plan A (k×m after op).
        const cublasOperation_t ta = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        const cublasOperation_t tb = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        set_desc(op_, CUBLASLT_MATMUL_DESC_TRANSA, ta);
        set_desc(op_, CUBLASLT_MATMUL_DESC_TRANSB, tb);
        set_desc(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(g.epilogue));
        if (ptr.bias) set_desc(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr.bias);

        la_ = g.trans_b ? layout(t, g.k, g.n, g.ldb, g.batch, g.batch_stride_b)
                        : layout(t, g.n, g.k, g.ldb, g.batch, g.batch_stride_b);
        lb_ = g.trans_a ? layout(t, g.m, g.k, g.lda, g.batch, g.batch_stride_a)
                        : layout(t, g.k, g.m, g.lda, g.batch, g.batch_stride_a);
        if (ptr.c) lc_ = layout(t, g.n, g.m, g.ldc, g.batch, g.batch_stride_c);
        ld_ = layout(t, g.n, g.m, g.ldd, g.batch, g.batch_stride_d);
        if (!ptr.c) {
            ptr_.c = ptr.d;  // read with beta == 0
            lc_ = layout(t, g.n, g.m, g.ldd, g.batch, g.batch_stride_d);
        }

        cublasLtMatmulPreference_t pref = nullptr;
        STOF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
        cublasLtMatmulHeuristicResult_t result[plan::kGemmAlgos]{};
        int found = 0;
        const uint32_t align_a = alignment(ptr.b), align_b = alignment(ptr.a), align_c = alignment(ptr_.c),
                       align_d = alignment(ptr.d);
        const cublasStatus_t s[] = {
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                 sizeof(workspace_bytes)),
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)),
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)),
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)),
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)),
            cublasLtMatmulAlgoGetHeuristic(lt, op_, la_, lb_, lc_, ld_, pref, plan::kGemmAlgos, result, &found)};
        cublasLtMatmulPreferenceDestroy(pref);
        for (cublasStatus_t st : s)
            if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) STOF_CUBLAS_CHECK(st);
        STOF_CHECK(found > 0 && s[5] == CUBLAS_STATUS_SUCCESS,
                   "cuBLASLt has no algorithm for this gemm ({} m={} n={} k={} batch={} lda={} ldb={} ldd={} "
                   "trans_a={} trans_b={} epilogue {}, alignments {}/{}/{}/{} bytes)",
                   dtype_name(dtype), g.m, g.n, g.k, g.batch, g.lda, g.ldb, g.ldd, g.trans_a, g.trans_b,
                   static_cast<int>(g.epilogue), align_b, align_a, align_c, align_d);
        // The plan's choice among the candidates; a cuBLASLt (or GPU) that offers fewer gets its first.
        if (g.algo >= found)
            spdlog::warn(
                "gemm m={} n={} k={}: the plan asks for cuBLASLt's candidate {}, this cuBLASLt offers {}; using its first", g.m,
                g.n, g.k, g.algo, found);
        algo_ = result[g.algo < found ? g.algo : 0].algo;
    } catch (...) {
        release();
        throw;
    }
}

LtGemm::~LtGemm() { release(); }

void LtGemm::release() {
    for (cublasLtMatrixLayout_t* l : {&la_, &lb_, &lc_, &ld_}) {
        if (*l) cublasLtMatrixLayoutDestroy(*l);
        *l = nullptr;
    }
    if (op_) cublasLtMatmulDescDestroy(op_);
    op_ = nullptr;
}

void LtGemm::run(cublasLtHandle_t lt, void* workspace, size_t workspace_bytes, cudaStream_t stream) const {
    STOF_CUBLAS_CHECK(cublasLtMatmul(lt, op_, &alpha_, ptr_.b, la_, ptr_.a, lb_, &beta_, ptr_.c, lc_, ptr_.d, ld_, &algo_,
                                     workspace, workspace_bytes, stream));
}

static_assert(plan::kGemmGeluConfigs == kernels::kGemmGeluConfigs, "the plan and the fused kernel count its configs alike");
static_assert(plan::kGemmSwigluConfigs == kernels::kGemmSwigluConfigs, "the plan and the fused kernel count its configs alike");
static_assert(plan::kGemmRotaryConfigs == kernels::kGemmRotaryConfigs, "the plan and the fused kernel count its configs alike");

PreparedGemm::PreparedGemm(cublasLtHandle_t lt, const plan::GemmStep& g, DType dtype, const GemmPointers& ptr,
                           size_t workspace_bytes, cudaStream_t stream) {
    if (!plan::fused_epilogue(g.epilogue)) {
        lt_gemm_ = std::make_unique<LtGemm>(lt, g, dtype, ptr, workspace_bytes);
        return;
    }
    const kernels::ElemType type = dtype == DType::bf16 ? kernels::ElemType::bf16 : kernels::ElemType::f16;
    if (g.epilogue == plan::Epilogue::swiglu) {  // the fused kernel alone: no other path computes it
        kernels::GemmSwigluArgs s;
        s.type = type;
        s.m = g.m;
        s.n = g.n / 2;
        s.k = g.k;
        s.a = ptr.a;
        s.b = ptr.b;
        s.d = ptr.d;
        std::string why;
        fused_ = kernels::prepare_gemm_swiglu(s, g.algo, stream, why);
        STOF_CHECK(fused_ != nullptr, "gemm m={} n={} k={}: the fused GEMM + SwiGLU cannot run here: {}", g.m, g.n, g.k, why);
        return;
    }
    if (g.epilogue == plan::Epilogue::rotary) {  // the fused kernel alone, as swiglu
        kernels::GemmRotaryArgs r;
        r.type = type;
        r.m = g.m;
        r.n = g.n;
        r.k = g.k;
        r.ldd = g.ldd;
        r.rot_cols = g.rotary.cols;
        r.head_dim = g.rotary.head_dim;
        r.cos_rows = g.rotary.rows;
        r.a = ptr.a;
        r.b = ptr.b;
        r.cos = ptr.cos;
        r.sin = ptr.sin;
        r.d = ptr.d;
        std::string why;
        fused_ = kernels::prepare_gemm_rotary(r, g.algo, stream, why);
        STOF_CHECK(fused_ != nullptr, "gemm m={} n={} k={}: the fused GEMM + rotary embedding cannot run here: {}", g.m, g.n,
                   g.k, why);
        return;
    }
    kernels::GemmGeluArgs a;
    a.type = type;
    a.m = g.m;
    a.n = g.n;
    a.k = g.k;
    a.a = ptr.a;
    a.b = ptr.b;
    a.bias = ptr.bias;
    a.d = ptr.d;
    fallback_ = kernels::gemm_gelu_refusal(a, g.algo);
    if (fallback_.empty()) {
        fused_ = kernels::prepare_gemm_gelu(a, g.algo, stream, fallback_);
        STOF_CHECK(fused_ != nullptr, "gemm m={} n={} k={}: the fused kernel cannot be prepared: {}", g.m, g.n, g.k, fallback_);
        return;
    }
    plan::GemmStep bias_only = g;
    bias_only.epilogue = plan::Epilogue::bias;
    bias_only.algo = 0;
    lt_gemm_ = std::make_unique<LtGemm>(lt, bias_only, dtype, ptr, workspace_bytes);
    gelu_type_ = a.type;
    gelu_d_ = ptr.d;
    gelu_count_ = g.m * g.n;
}

PreparedGemm::~PreparedGemm() = default;

void PreparedGemm::run(cublasLtHandle_t lt, void* workspace, size_t workspace_bytes, cudaStream_t stream) const {
    if (fused_) {
        STOF_CUDA_CHECK(fused_->run(stream));
        return;
    }
    lt_gemm_->run(lt, workspace, workspace_bytes, stream);
    if (gelu_d_) STOF_CUDA_CHECK(kernels::launch_gelu(gelu_type_, gelu_d_, gelu_count_, stream));
}

}  // namespace stof::exec
