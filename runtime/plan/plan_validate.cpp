#include "stof/error.hpp"
#include "stof/plan.hpp"
#include "stof/shape_ranges.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/ranges.h>

namespace stof::plan {

namespace {

using i128 = __int128;

constexpr int64_t kMaxBytes = int64_t{1} << 48;  // no tensor, buffer or extent is larger
constexpr int32_t kMaxMaskSide = 1 << 26;

bool valid_arch(const std::string& a) {
    if (a.size() < 4 || a.compare(0, 3, "sm_") != 0) return false;
    size_t i = 3;
    while (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i]))) ++i;
    return i > 3 && i - 3 <= 4 && (i == a.size() || (i + 1 == a.size() && std::islower(static_cast<unsigned char>(a[i]))));
}

class Checker {
public:
    explicit Checker(const Plan& p) : p_(p) {}

    void run() {
        check_placeholders();
        check_tensors();
        check_kernels();
        check_masks();
        for (size_t i = 0; i < p_.steps.size(); ++i) {
            const Step& s = p_.steps[i];
            try {
                check_step(s);
            } catch (const Error& e) {
                STOF_FAIL("schedule step {} ({}): {}", i, s.label.empty() ? step_kind_name(s.kind) : s.label, e.what());
            }
        }
    }

private:
    const Plan& p_;
    std::vector<int64_t> bytes_;                 // per tensor
    std::vector<char> filled_;                   // per mask: its arrays exist by the step being checked
    std::map<int32_t, int32_t> key_valid_fold_;  // words tensor → the fold of the key_valid step that last wrote it

    // --- tensors ---------------------------------------------------------------

    void check_tensors() {
        STOF_CHECK(p_.arena_bytes <= static_cast<uint64_t>(kMaxBytes) && p_.arena_bytes % kAlignment == 0,
                   "tensors: arena size {} is not a multiple of {} below 2^48", p_.arena_bytes, kAlignment);
        std::set<std::string> names;
        for (size_t i = 0; i < p_.tensors.size(); ++i) {
            const TensorDesc& t = p_.tensors[i];
            try {
                bytes_.push_back(check_tensor(t));
            } catch (const Error& e) {
                STOF_FAIL("tensors: tensor {} ('{}'): {}", i, t.name, e.what());
            }
            STOF_CHECK(names.insert(t.name).second, "tensors: tensor {}: the name '{}' is used twice", i, t.name);
        }
        check_io(p_.inputs, TensorRole::input, "input");
        check_io(p_.outputs, TensorRole::output, "output");
    }

    int64_t check_tensor(const TensorDesc& t) {
        STOF_CHECK(!t.name.empty(), "no name");
        STOF_CHECK(t.dtype != DType::undefined && static_cast<uint8_t>(t.dtype) <= static_cast<uint8_t>(DType::boolean),
                   "dtype {} is not a tensor type", static_cast<int>(t.dtype));
        i128 n = dtype_size(t.dtype);
        for (int64_t d : t.shape) {
            STOF_CHECK(d >= 0, "negative dimension in {}", shape_str(t.shape));
            n *= d;
            STOF_CHECK(n <= kMaxBytes, "shape {} is too large", shape_str(t.shape));
        }
        const bool weights = t.buffer == BufferKind::weights;
        STOF_CHECK(t.buffer == BufferKind::arena || weights, "unknown buffer {}", static_cast<int>(t.buffer));
        STOF_CHECK(t.role <= TensorRole::weight, "unknown role {}", static_cast<int>(t.role));
        STOF_CHECK((t.role == TensorRole::weight) == weights, "a {} tensor must live in the {} buffer",
                   t.role == TensorRole::weight ? "weight" : "non-weight", t.role == TensorRole::weight ? "weights" : "arena");
        STOF_CHECK(t.offset % kAlignment == 0, "offset {} is not a multiple of {}", t.offset, kAlignment);
        const uint64_t size = weights ? p_.weights_bytes() : p_.arena_bytes;
        STOF_CHECK(t.offset <= size && static_cast<uint64_t>(n) <= size - t.offset,
                   "bytes {}..{} lie outside the {} buffer ({} bytes)", t.offset, static_cast<uint64_t>(t.offset + n),
                   weights ? "weights" : "arena", size);
        return static_cast<int64_t>(n);
    }

    // Placeholder weights (Plan::placeholders): distinct float weight tensors past the real
    // contents, inside placeholder_end.
    void check_placeholders() {
        if (p_.placeholders.empty()) {
            STOF_CHECK(p_.placeholder_end == 0, "placeholders: placeholder_end {} without placeholder tensors",
                       p_.placeholder_end);
            return;
        }
        const uint64_t begin = (p_.weights.size() + kAlignment - 1) / kAlignment * kAlignment;
        STOF_CHECK(p_.placeholder_end >= begin && p_.placeholder_end <= static_cast<uint64_t>(kMaxBytes),
                   "placeholders: placeholder_end {} is not between the weights' end {} and 2^48", p_.placeholder_end, begin);
        std::set<int32_t> seen;
        for (int32_t t : p_.placeholders) {
            STOF_CHECK(t >= 0 && static_cast<size_t>(t) < p_.tensors.size(), "placeholders: tensor index {} is out of range", t);
            const TensorDesc& d = p_.tensors[static_cast<size_t>(t)];
            STOF_CHECK(seen.insert(t).second, "placeholders: tensor '{}' is listed twice", d.name);
            STOF_CHECK(d.role == TensorRole::weight && is_float(d.dtype) && d.offset >= begin,
                       "placeholders: tensor '{}' is not a float weight past the weights' contents", d.name);
        }
    }

    void check_io(const std::vector<int32_t>& list, TensorRole role, const char* what) {
        std::set<int32_t> seen;
        for (int32_t t : list) {
            STOF_CHECK(t >= 0 && static_cast<size_t>(t) < p_.tensors.size(),
                       "tensors: {} index {} is out of range ({} tensors)", what, t, p_.tensors.size());
            STOF_CHECK(p_.tensors[t].role == role, "tensors: {} '{}' does not have the role {}", what, p_.tensors[t].name, what);
            STOF_CHECK(seen.insert(t).second, "tensors: {} '{}' is listed twice", what, p_.tensors[t].name);
        }
        for (size_t i = 0; i < p_.tensors.size(); ++i)
            STOF_CHECK(p_.tensors[i].role != role || seen.count(static_cast<int32_t>(i)),
                       "tensors: tensor {} ('{}') has the role {} but is not listed as one", i, p_.tensors[i].name, what);
    }

    // --- kernels and masks -------------------------------------------------------

    void check_kernels() {
        std::set<std::string> keys;
        for (size_t i = 0; i < p_.kernels.size(); ++i) {
            const KernelDesc& k = p_.kernels[i];
            const auto fail_if = [&](bool bad, const std::string& why) {
                if (bad) STOF_FAIL("kernels: kernel {} ('{}'): {}", i, k.key, why);
            };
            fail_if(k.key.empty(), "no key");
            fail_if(!keys.insert(k.key).second, "the key is used twice");
            fail_if(k.entry.empty(), "no entry function name");
            fail_if(k.cubin.empty() && k.ptx.empty(), "neither a cubin nor PTX");
            fail_if(!k.cubin.empty() && !valid_arch(k.arch), "its cubin's arch '" + k.arch + "' is not like sm_90");
            for (ParamKind pk : k.params) fail_if(pk > ParamKind::f32, "unknown parameter kind");
        }
    }

    void check_masks() {
        filled_.assign(p_.masks.size(), 0);
        for (size_t i = 0; i < p_.masks.size(); ++i) {
            const SparseMask& m = p_.masks[i].mask;
            try {
                STOF_CHECK(m.rows >= 0 && m.cols >= 0 && m.rows <= kMaxMaskSide && m.cols <= kMaxMaskSide,
                           "size {}x{} is out of range", m.rows, m.cols);
                if (p_.masks[i].runtime) {
                    STOF_CHECK(m.row_ptr.empty() && m.col_idx.empty() && m.bitmap_idx.empty() && m.bitmaps.empty(),
                               "a run-time mask carries arrays");
                    STOF_CHECK(m.rows >= 1 && m.cols >= 1 && m.mask_batch >= 1 && m.mask_heads >= 1 && m.mask_batch <= 65535 &&
                                   m.mask_heads <= 65535,
                               "sizes {}x{} with {}x{} patterns must be positive", m.rows, m.cols, m.mask_batch, m.mask_heads);
                    for (int32_t t : {m.tile_m, m.tile_n})
                        STOF_CHECK(t >= 8 && t <= 256 && t % 8 == 0, "tile side {} is not a multiple of 8 in 8..256", t);
                    const i128 tiles = static_cast<i128>(m.mask_batch) * m.mask_heads * ((m.rows + m.tile_m - 1) / m.tile_m) *
                                       ((m.cols + m.tile_n - 1) / m.tile_n);
                    STOF_CHECK(tiles + 1 <= 0x7ffffffe, "{} tiles are too many", static_cast<int64_t>(tiles));
                    continue;
                }
                filled_[i] = 1;
                m.validate();
            } catch (const Error& e) {
                STOF_FAIL("masks: mask {} ('{}'): {}", i, p_.masks[i].spec, e.what());
            }
        }
    }

    // --- steps ------------------------------------------------------------------

    const TensorDesc& tensor(int32_t t, const char* what) const {
        STOF_CHECK(t >= 0 && static_cast<size_t>(t) < p_.tensors.size(), "{} tensor index {} is out of range ({} tensors)",
                   what, t, p_.tensors.size());
        return p_.tensors[t];
    }
    void writable(int32_t t, const char* what) const {
        STOF_CHECK(p_.tensors[t].buffer == BufferKind::arena, "{} '{}' is a weight (read-only)", what, p_.tensors[t].name);
    }
    // `elements` elements of the tensor's dtype from `byte_offset` lie inside tensor t.
    void inside(int32_t t, uint64_t byte_offset, i128 elements, const char* what) const {
        const i128 end = static_cast<i128>(byte_offset) + elements * static_cast<i128>(dtype_size(p_.tensors[t].dtype));
        STOF_CHECK(end <= bytes_[t], "{} reaches byte {} of '{}', which has {} bytes", what,
                   static_cast<int64_t>(std::min<i128>(end, std::numeric_limits<int64_t>::max())), p_.tensors[t].name,
                   bytes_[t]);
    }

    void check_step(const Step& s) {
        switch (s.kind) {
            case StepKind::launch: return check_launch(s.launch);
            case StepKind::gemm: return check_gemm(s.gemm);
            case StepKind::attention: return check_attention(s.attention);
            case StepKind::key_valid: return check_key_valid(s.key_valid);
            case StepKind::copy: return check_copy(s.copy);
            case StepKind::mask_convert: return check_mask_convert(s.mask_convert);
        }
        STOF_FAIL("unknown step kind {}", static_cast<int>(s.kind));
    }

    void check_launch(const LaunchStep& l) {
        STOF_CHECK(l.kernel >= 0 && static_cast<size_t>(l.kernel) < p_.kernels.size(),
                   "kernel index {} is out of range ({} kernels)", l.kernel, p_.kernels.size());
        const KernelDesc& k = p_.kernels[l.kernel];
        STOF_CHECK(l.args.size() == k.params.size(), "{} arguments for kernel '{}', which takes {}", l.args.size(), k.key,
                   k.params.size());
        for (size_t i = 0; i < l.args.size(); ++i) {
            const Arg& a = l.args[i];
            STOF_CHECK(a.kind == k.params[i], "argument {} of kernel '{}' has kind {}, the parameter {}", i, k.key,
                       static_cast<int>(a.kind), static_cast<int>(k.params[i]));
            if (a.kind == ParamKind::pointer) {
                tensor(a.tensor, "argument");
                STOF_CHECK(a.byte_offset <= static_cast<uint64_t>(bytes_[a.tensor]),
                           "argument {}: byte offset {} is past the end of '{}' ({} bytes)", i, a.byte_offset,
                           p_.tensors[a.tensor].name, bytes_[a.tensor]);
            } else if (a.kind == ParamKind::i32) {
                STOF_CHECK(a.i >= std::numeric_limits<int32_t>::min() && a.i <= std::numeric_limits<int32_t>::max(),
                           "argument {}: {} does not fit an i32", i, a.i);
            }
        }
        for (uint32_t g : l.grid) STOF_CHECK(g >= 1, "an empty grid");
        STOF_CHECK(l.grid[0] <= 0x7fffffffu && l.grid[1] <= 65535 && l.grid[2] <= 65535, "grid {}x{}x{} is too large",
                   l.grid[0], l.grid[1], l.grid[2]);
        for (uint32_t b : l.block) STOF_CHECK(b >= 1, "an empty block");
        STOF_CHECK(l.block[0] <= 1024 && l.block[1] <= 1024 && l.block[2] <= 64 &&
                       static_cast<uint64_t>(l.block[0]) * l.block[1] * l.block[2] <= 1024,
                   "block {}x{}x{} has more than 1024 threads", l.block[0], l.block[1], l.block[2]);
        STOF_CHECK(l.shared_bytes <= 256 * 1024, "{} bytes of shared memory", l.shared_bytes);
    }

    // A row-major rows × cols matrix with row stride ld, batched with batch_stride, inside tensor t.
    void matrix(int32_t t, uint64_t offset, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t batch_stride,
                const char* what) const {
        STOF_CHECK(ld >= cols, "{}: row stride {} is below its {} columns", what, ld, cols);
        STOF_CHECK(batch_stride >= 0, "{}: negative batch stride {}", what, batch_stride);
        const i128 extent = static_cast<i128>(batch - 1) * batch_stride + static_cast<i128>(rows - 1) * ld + cols;
        inside(t, offset, extent, what);
    }

    void check_gemm(const GemmStep& g) {
        const TensorDesc& a = tensor(g.a, "a");
        const TensorDesc& b = tensor(g.b, "b");
        const TensorDesc& d = tensor(g.d, "d");
        STOF_CHECK(a.dtype == DType::f32 || a.dtype == DType::f16 || a.dtype == DType::bf16,
                   "a is {}; gemm takes f32, f16 or bf16", dtype_name(a.dtype));
        STOF_CHECK(b.dtype == a.dtype && d.dtype == a.dtype, "dtypes differ: a {}, b {}, d {}", dtype_name(a.dtype),
                   dtype_name(b.dtype), dtype_name(d.dtype));
        writable(g.d, "d");
        // Columns of d: half of the product's for swiglu.
        const bool swiglu = g.epilogue == Epilogue::swiglu;
        const int64_t d_cols = swiglu ? g.n / 2 : g.n;
        if (fused_epilogue(g.epilogue)) {
            STOF_CHECK(g.algo < fused_configs(g.epilogue), "configuration {} is not one of the fused GEMM's {}", g.algo,
                       fused_configs(g.epilogue));
            STOF_CHECK(a.dtype != DType::f32, "the fused GEMM takes f16 or bf16, not f32");
            STOF_CHECK(g.batch == 1 && !g.trans_a && !g.trans_b && g.alpha == 1 && g.c < 0,
                       "the fused GEMM runs one GEMM (batch 1), untransposed, with alpha 1 and no c");
            STOF_CHECK(!swiglu || g.n % 2 == 0, "swiglu pairs the product's columns, but n = {} is odd", g.n);
            STOF_CHECK(g.lda == g.k && g.ldb == g.n && g.ldd == d_cols,
                       "the fused GEMM needs contiguous rows (lda = k, ldb = n, ldd = {}), not {}, {}, {}",
                       swiglu ? "n/2" : "n", g.lda, g.ldb, g.ldd);
        } else {
            STOF_CHECK(g.algo < kGemmAlgos, "algorithm {} is not one of cuBLASLt's first {} candidates", g.algo, kGemmAlgos);
        }
        STOF_CHECK(g.m >= 1 && g.n >= 1 && g.k >= 1 && g.batch >= 1 && g.m <= kMaxBytes && g.n <= kMaxBytes &&
                       g.k <= kMaxBytes && g.batch <= kMaxBytes,
                   "sizes m={} n={} k={} batch={} must be positive", g.m, g.n, g.k, g.batch);
        matrix(g.a, g.a_offset, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch, g.batch_stride_a, "a");
        matrix(g.b, g.b_offset, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch, g.batch_stride_b, "b");
        matrix(g.d, g.d_offset, g.m, d_cols, g.ldd, g.batch, g.batch_stride_d, "d");
        STOF_CHECK(g.batch == 1 || g.batch_stride_d >= (g.m - 1) * g.ldd + d_cols,
                   "d: batch stride {} makes the batches of the output overlap", g.batch_stride_d);
        if (g.c >= 0) {
            const TensorDesc& c = tensor(g.c, "c");
            STOF_CHECK(c.dtype == d.dtype, "c is {}, d {}", dtype_name(c.dtype), dtype_name(d.dtype));
            matrix(g.c, g.c_offset, g.m, g.n, g.ldc, g.batch, g.batch_stride_c, "c");
        } else {
            STOF_CHECK(g.c == -1, "c tensor index {} is out of range", g.c);
            STOF_CHECK(g.beta == 0, "beta is {} but there is no c", g.beta);
        }
        STOF_CHECK(g.epilogue <= Epilogue::rotary, "unknown epilogue {}", static_cast<int>(g.epilogue));
        check_rotary(g, d);
        const bool has_bias = g.epilogue == Epilogue::bias || g.epilogue == Epilogue::bias_gelu ||
                              g.epilogue == Epilogue::bias_relu || g.epilogue == Epilogue::bias_gelu_erf;
        if (has_bias) {
            const TensorDesc& bias = tensor(g.bias, "bias");
            STOF_CHECK(bias.dtype == d.dtype, "bias is {}, d {}", dtype_name(bias.dtype), dtype_name(d.dtype));
            inside(g.bias, 0, g.n, "bias");
        } else {
            STOF_CHECK(g.bias == -1, "a bias tensor ({}) without a bias epilogue", g.bias);
        }
    }

    // Epilogue::rotary's tables: [rows, head_dim] of d's dtype, rotating whole heads of the
    // product's columns; every other epilogue leaves RotaryOperands as constructed.
    void check_rotary(const GemmStep& g, const TensorDesc& d) {
        const RotaryOperands& r = g.rotary;
        if (g.epilogue != Epilogue::rotary) {
            STOF_CHECK(r.cos == -1 && r.sin == -1 && r.rows == 0 && r.cols == 0 && r.head_dim == 0,
                       "rotary operands without a rotary epilogue");
            return;
        }
        STOF_CHECK(r.head_dim == 64 || r.head_dim == 128, "rotary: head_dim {} is not 64 or 128", r.head_dim);
        STOF_CHECK(r.cols > 0 && r.cols <= g.n && r.cols % r.head_dim == 0,
                   "rotary: {} rotated columns are not whole heads of {} within n = {}", r.cols, r.head_dim, g.n);
        STOF_CHECK(r.rows >= 1 && r.rows <= kMaxBytes, "rotary: {} positions", r.rows);
        for (const auto& [index, what] : {std::pair{r.cos, "rotary cos"}, std::pair{r.sin, "rotary sin"}}) {
            const TensorDesc& t = tensor(index, what);
            STOF_CHECK(t.dtype == d.dtype, "{} is {}, d {}", what, dtype_name(t.dtype), dtype_name(d.dtype));
            inside(index, 0, r.rows * r.head_dim, what);
        }
    }

    void operand(const AttentionOperand& o, int64_t batch, int64_t heads, int64_t seq, int64_t dim, const char* what) {
        tensor(o.tensor, what);
        STOF_CHECK(o.stride_b >= 0 && o.stride_h >= 0 && o.stride_s >= 0, "{}: negative stride", what);
        const i128 extent = static_cast<i128>(batch - 1) * o.stride_b + static_cast<i128>(heads - 1) * o.stride_h +
                            static_cast<i128>(seq - 1) * o.stride_s + dim;
        inside(o.tensor, o.byte_offset, extent, what);
    }

    void check_attention(const AttentionStep& a) {
        STOF_CHECK(a.batch >= 1 && a.heads >= 1 && a.kv_heads >= 1 && a.seq_q >= 1 && a.seq_k >= 1 && a.head_dim >= 1,
                   "sizes batch={} heads={} kv_heads={} seq_q={} seq_k={} head_dim={} must be positive", a.batch, a.heads,
                   a.kv_heads, a.seq_q, a.seq_k, a.head_dim);
        STOF_CHECK(a.heads % a.kv_heads == 0, "heads {} is not a multiple of kv_heads {}", a.heads, a.kv_heads);
        operand(a.q, a.batch, a.heads, a.seq_q, a.head_dim, "q");
        operand(a.k, a.batch, a.kv_heads, a.seq_k, a.head_dim, "k");
        operand(a.v, a.batch, a.kv_heads, a.seq_k, a.head_dim, "v");
        operand(a.o, a.batch, a.heads, a.seq_q, a.head_dim, "o");
        const DType dt = p_.tensors[a.q.tensor].dtype;
        STOF_CHECK(dt == DType::f16 || dt == DType::bf16, "q is {}; attention takes f16 or bf16", dtype_name(dt));
        for (const AttentionOperand* o : {&a.k, &a.v, &a.o})
            STOF_CHECK(p_.tensors[o->tensor].dtype == dt, "operands differ in dtype ('{}' is {}, q {})",
                       p_.tensors[o->tensor].name, dtype_name(p_.tensors[o->tensor].dtype), dtype_name(dt));
        writable(a.o.tensor, "o");
        STOF_CHECK(std::isfinite(a.scale), "scale {} is not finite", a.scale);
        STOF_CHECK(a.mask >= 0 && static_cast<size_t>(a.mask) < p_.masks.size(), "mask index {} is out of range ({} masks)",
                   a.mask, p_.masks.size());
        STOF_CHECK(filled_[a.mask], "run-time mask {} is read before a mask_convert step fills it", a.mask);
        const SparseMask& m = p_.masks[a.mask].mask;
        STOF_CHECK(a.fold >= 1 && a.fold <= 64, "fold {} is not in 1..64", a.fold);
        if (a.fold > 1) {
            STOF_CHECK(a.seq_q % a.fold == 0 && a.seq_k % a.fold == 0, "fold {} does not divide the scores {}x{}", a.fold,
                       a.seq_q, a.seq_k);
            STOF_CHECK(!p_.masks[a.mask].runtime, "a run-time mask cannot be folded");
        }
        STOF_CHECK(m.rows == a.seq_q / a.fold && m.cols == a.seq_k / a.fold, "mask {} is {}x{}, the scores {}x{}{}", a.mask,
                   m.rows, m.cols, a.seq_q, a.seq_k, a.fold > 1 ? fmt::format(" folded by {}", a.fold) : "");
        STOF_CHECK((m.mask_batch == 1 || m.mask_batch == a.batch) && (m.mask_heads == 1 || m.mask_heads == a.heads),
                   "mask {} has {}x{} patterns for batch {} and {} heads", a.mask, m.mask_batch, m.mask_heads, a.batch,
                   a.heads);
        if (a.key_valid != -1) {
            const TensorDesc& kv = tensor(a.key_valid, "key_valid");
            STOF_CHECK(kv.dtype == DType::i64, "key_valid '{}' is {}, not i64 words", kv.name, dtype_name(kv.dtype));
            const auto written = key_valid_fold_.find(a.key_valid);
            const int32_t words_fold = written == key_valid_fold_.end() ? 1 : written->second;
            STOF_CHECK(words_fold == a.fold, "key_valid '{}' holds words folded by {}, the step's mask by {}", kv.name,
                       words_fold, a.fold);
            inside(a.key_valid, 0, key_valid_words(a.batch, a.seq_k, a.fold), "key_valid");
        }
        if (a.bias != -1) {
            const TensorDesc& bias = tensor(a.bias, "bias");
            STOF_CHECK(bias.dtype == dt, "bias '{}' is {}, q {}", bias.name, dtype_name(bias.dtype), dtype_name(dt));
            STOF_CHECK(a.bias_stride_h >= 0 && a.bias_stride_s >= 0, "bias: negative stride");
            // Folded: the residue blocks one after the other (kernels::folded_attention_problems).
            const int32_t fq = a.seq_q / a.fold, fk = a.seq_k / a.fold;
            const i128 block = a.bias_stride_h ? static_cast<i128>(a.heads) * a.bias_stride_h
                                               : static_cast<i128>(fq) * a.bias_stride_s;
            inside(a.bias, 0,
                   (a.fold - 1) * block + static_cast<i128>(a.heads - 1) * a.bias_stride_h +
                       static_cast<i128>(fq - 1) * a.bias_stride_s + fk,
                   "bias");
        }
        STOF_CHECK(a.kernel >= 0 && a.kernel <= 2, "kernel {} is not 0 (block-wise), 1 (row-wise) or 2 (block-wise sm_90)",
                   a.kernel);
    }

    void check_key_valid(const KeyValidStep& k) {
        const TensorDesc& mask = tensor(k.mask, "mask");
        const TensorDesc& words = tensor(k.words, "words");
        STOF_CHECK(k.batch >= 1 && k.seq >= 1, "sizes batch={} seq={} must be positive", k.batch, k.seq);
        STOF_CHECK(is_integer(mask.dtype) || mask.dtype == DType::boolean, "mask '{}' is {}, not an integer or bool tensor",
                   mask.name, dtype_name(mask.dtype));
        STOF_CHECK(bytes_[k.mask] == static_cast<i128>(k.batch) * k.seq * static_cast<int64_t>(dtype_size(mask.dtype)),
                   "mask '{}' {} does not hold [{}, {}]", mask.name, shape_str(mask.shape), k.batch, k.seq);
        STOF_CHECK(words.dtype == DType::i64, "words '{}' is {}, not i64", words.name, dtype_name(words.dtype));
        STOF_CHECK(k.fold >= 1 && k.fold <= 64 && k.seq % k.fold == 0, "fold {} is not a divisor of seq {} in 1..64", k.fold,
                   k.seq);
        inside(k.words, 0, key_valid_words(k.batch, k.seq, k.fold), "words");
        writable(k.words, "words");
        key_valid_fold_[k.words] = k.fold;
    }

    // The words of key validity for batch rows of seq keys folded by fold (KeyValidStep).
    static i128 key_valid_words(int32_t batch, int32_t seq, int32_t fold) {
        return static_cast<i128>(fold) * batch * ((static_cast<int64_t>(seq / fold) + 63) / 64);
    }

    void check_mask_convert(const MaskConvertStep& c) {
        STOF_CHECK(c.mask >= 0 && static_cast<size_t>(c.mask) < p_.masks.size(), "mask index {} is out of range ({} masks)",
                   c.mask, p_.masks.size());
        STOF_CHECK(p_.masks[c.mask].runtime, "mask {} is not a run-time mask", c.mask);
        const SparseMask& m = p_.masks[c.mask].mask;
        const TensorDesc& keep = tensor(c.keep, "keep");
        STOF_CHECK(keep.dtype == DType::boolean, "keep '{}' is {}, not bool", keep.name, dtype_name(keep.dtype));
        STOF_CHECK(bytes_[c.keep] == static_cast<i128>(m.mask_batch) * m.mask_heads * m.rows * m.cols,
                   "keep '{}' {} does not hold [{}, {}, {}, {}]", keep.name, shape_str(keep.shape), m.mask_batch, m.mask_heads,
                   m.rows, m.cols);
        filled_[c.mask] = 1;
    }

    void check_copy(const CopyStep& c) {
        tensor(c.src, "src");
        tensor(c.dst, "dst");
        writable(c.dst, "dst");
        STOF_CHECK(c.bytes >= 1, "an empty copy");
        const auto in_range = [&](int32_t t, uint64_t off, const char* what) {
            STOF_CHECK(off <= static_cast<uint64_t>(bytes_[t]) && c.bytes <= static_cast<uint64_t>(bytes_[t]) - off,
                       "{} bytes {}..{} lie outside '{}' ({} bytes)", what, off, static_cast<uint64_t>(off + c.bytes),
                       p_.tensors[t].name, bytes_[t]);
        };
        in_range(c.src, c.src_offset, "src");
        in_range(c.dst, c.dst_offset, "dst");
        const TensorDesc& s = p_.tensors[c.src];
        const TensorDesc& d = p_.tensors[c.dst];
        if (s.buffer == d.buffer) {
            const uint64_t s0 = s.offset + c.src_offset, d0 = d.offset + c.dst_offset;
            STOF_CHECK(s0 + c.bytes <= d0 || d0 + c.bytes <= s0, "source and destination overlap");
        }
    }
};

}  // namespace

namespace {

// A ranged plan: its variables, its buckets' sizes, and each bucket's inputs and outputs
// against the first bucket's and the variables they follow.
void check_ranges(const Plan& p) {
    const ShapeRanges& r = p.ranges;
    STOF_CHECK(p.tensors.empty() && p.kernels.empty() && p.masks.empty() && p.steps.empty() && p.segments.empty() &&
                   p.weights.empty() && p.inputs.empty() && p.outputs.empty() && p.arena_bytes == 0,
               "shapes: a plan with shape buckets holds no tensors, kernels or steps of its own");
    STOF_CHECK(!r.vars.empty(), "shapes: a plan with shape buckets has no shape variables");
    STOF_CHECK(p.buckets.size() <= kMaxBuckets, "shapes: {} buckets, more than {}", p.buckets.size(), kMaxBuckets);
    STOF_CHECK(r.bucket_values.size() == p.buckets.size(), "shapes: {} bucket sizes for {} buckets", r.bucket_values.size(),
               p.buckets.size());
    std::set<std::string> names;
    size_t product = 1;
    for (size_t k = 0; k < r.vars.size(); ++k) {
        const ShapeVar& v = r.vars[k];
        STOF_CHECK(!v.name.empty() && names.insert(v.name).second, "shapes: the shape variable '{}' is unnamed or twice",
                   v.name);
        STOF_CHECK(v.min >= 1 && v.min <= v.max && v.max <= std::numeric_limits<int32_t>::max(),
                   "shapes: '{}' has the range {}..{}", v.name, v.min, v.max);
        // Its bucket sizes lie in the range and end with max (the first may exceed min).
        const std::vector<int64_t> sizes = var_buckets(r, k);
        STOF_CHECK(!sizes.empty() && sizes.back() == v.max && sizes.front() >= v.min,
                   "shapes: the buckets of '{}' ({}) leave its range {}..{} or do not end with its maximum", v.name,
                   fmt::join(sizes, ", "), v.min, v.max);
        product *= sizes.size();
        STOF_CHECK(product <= kMaxBuckets, "shapes: the variables have more than {} buckets", kMaxBuckets);
    }
    STOF_CHECK(product == p.buckets.size(), "shapes: the variables have {} buckets, the plan holds {}", product,
               p.buckets.size());
    std::set<std::vector<int64_t>> seen;
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        const std::vector<int64_t>& vals = r.bucket_values[b];
        STOF_CHECK(vals.size() == r.vars.size(), "shapes: bucket {} has {} sizes for {} variables", b, vals.size(),
                   r.vars.size());
        STOF_CHECK(seen.insert(vals).second, "shapes: bucket {} repeats an earlier bucket's sizes", b);
    }
    const Plan& first = p.buckets[0];
    STOF_CHECK(r.input_dims.size() == first.inputs.size() && r.output_dims.size() == first.outputs.size(),
               "shapes: {} inputs and {} outputs described, the buckets have {} and {}", r.input_dims.size(),
               r.output_dims.size(), first.inputs.size(), first.outputs.size());
    std::vector<bool> used(r.vars.size(), false);
    for (const auto* list : {&r.input_dims, &r.output_dims})
        for (const std::vector<int32_t>& dims : *list)
            for (int32_t v : dims) {
                STOF_CHECK(v >= -1 && v < static_cast<int32_t>(r.vars.size()), "shapes: variable index {} out of range", v);
                if (v >= 0 && list == &r.input_dims) used[static_cast<size_t>(v)] = true;
            }
    for (size_t v = 0; v < used.size(); ++v)
        STOF_CHECK(used[v], "shapes: no input dimension follows the variable '{}'", r.vars[v].name);
    for (size_t b = 0; b < p.buckets.size(); ++b) {
        const Plan& q = p.buckets[b];
        STOF_CHECK(!q.ranged(), "bucket {}: holds buckets of its own", b);
        STOF_CHECK(!q.has_placeholders(), "bucket {}: has placeholder weights", b);
        try {
            validate(q);
        } catch (const Error& e) {
            STOF_FAIL("bucket {}: {}", b, e.what());
        }
        auto check_io = [&](const std::vector<int32_t>& io, const std::vector<int32_t>& io0,
                            const std::vector<std::vector<int32_t>>& dims, const char* what) {
            STOF_CHECK(io.size() == io0.size(), "bucket {}: {} {}s, the first bucket has {}", b, io.size(), what, io0.size());
            for (size_t i = 0; i < io.size(); ++i) {
                const TensorDesc& t = q.tensors[static_cast<size_t>(io[i])];
                const TensorDesc& t0 = first.tensors[static_cast<size_t>(io0[i])];
                STOF_CHECK(t.name == t0.name && t.dtype == t0.dtype && t.shape.size() == dims[i].size(),
                           "bucket {}: {} {} ('{}') differs from the first bucket's or its shape variables", b, what, i,
                           t.name);
                STOF_CHECK(bound_shape(t0.shape, dims[i], r.bucket_values[b]) == t.shape,
                           "bucket {}: {} '{}' has shape {}, not the one its shape variables give", b, what, t.name,
                           shape_str(t.shape));
            }
        };
        check_io(q.inputs, first.inputs, r.input_dims, "input");
        check_io(q.outputs, first.outputs, r.output_dims, "output");
    }
}

}  // namespace

void validate(const Plan& p) {
    if (p.ranged() || !p.ranges.vars.empty()) {
        check_ranges(p);
        return;
    }
    Checker(p).run();
}

}  // namespace stof::plan
