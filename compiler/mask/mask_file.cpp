#include "mask/mask_file.hpp"

#include "stof/error.hpp"
#include "stof/npy.hpp"

namespace stof {

MaskFile read_mask_file(const std::string& path, int64_t seq_q, int64_t seq_k, int64_t heads, int64_t batch) {
    const Tensor t = read_npy(path);
    STOF_CHECK(t.dtype == DType::boolean || t.dtype == DType::u8,
               "mask file {} has dtype {}; a mask must be bool or uint8 (nonzero = keep)", path, dtype_name(t.dtype));
    const Shape& s = t.shape;
    const std::string expected = fmt::format("[{0},{1}], [H,{0},{1}] or [B,H,{0},{1}]", seq_q, seq_k);
    STOF_CHECK(s.size() >= 2 && s.size() <= 4 && s[s.size() - 2] == seq_q && s[s.size() - 1] == seq_k,
               "mask file {} has shape {}; expected {} (seq_q {}, seq_k {})", path, shape_str(s), expected, seq_q, seq_k);
    MaskFile f;
    f.path = path;
    f.rows = seq_q;
    f.cols = seq_k;
    f.heads = s.size() >= 3 ? s[s.size() - 3] : 1;
    f.batch = s.size() == 4 ? s[0] : 1;
    STOF_CHECK(f.heads >= 1 && f.batch >= 1, "mask file {} has shape {} with no patterns; expected {}", path, shape_str(s),
               expected);
    STOF_CHECK(heads <= 0 || f.heads == 1 || f.heads == heads,
               "mask file {} has {} heads (shape {}); the attention has {} heads (use 1 to share one mask)", path, f.heads,
               shape_str(s), heads);
    STOF_CHECK(batch <= 0 || f.batch == 1 || f.batch == batch,
               "mask file {} has batch {} (shape {}); the attention has batch {} (use 1 to share one mask)", path, f.batch,
               shape_str(s), batch);
    f.keep.resize(static_cast<size_t>(t.numel()));
    for (size_t k = 0; k < f.keep.size(); ++k) f.keep[k] = t.bytes[k] != 0;
    return f;
}

void load_mask_files(MaskSpec& spec, int64_t seq_q, int64_t seq_k, int64_t heads, int64_t batch) {
    if (spec.kind == MaskSpec::Kind::file && spec.file == nullptr)
        spec.file = std::make_shared<const MaskFile>(read_mask_file(spec.path, seq_q, seq_k, heads, batch));
    if (spec.kind == MaskSpec::Kind::file) {
        const MaskFile& f = *spec.file;
        STOF_CHECK(f.rows == seq_q && f.cols == seq_k, "mask file {} was loaded for {}x{}, used for {}x{}", f.path, f.rows,
                   f.cols, seq_q, seq_k);
        STOF_CHECK((heads <= 0 || f.heads == 1 || f.heads == heads) && (batch <= 0 || f.batch == 1 || f.batch == batch),
                   "mask file {} has batch {}, heads {}; the attention has batch {}, heads {}", f.path, f.batch, f.heads, batch,
                   heads);
    }
    for (MaskSpec& c : spec.children) load_mask_files(c, seq_q, seq_k, heads, batch);
}

namespace {
void broadcast_dims(const MaskSpec& spec, std::pair<int64_t, int64_t>& dims, std::string& from) {
    if (spec.kind == MaskSpec::Kind::file) {
        STOF_CHECK(spec.file != nullptr, "mask file {} was not loaded (load_mask_files)", spec.path);
        const MaskFile& f = *spec.file;
        STOF_CHECK((f.batch == 1 || dims.first == 1 || f.batch == dims.first) &&
                       (f.heads == 1 || dims.second == 1 || f.heads == dims.second),
                   "mask files disagree: {} is [{}, {}] (batch, heads) but {} is [{}, {}]", f.path, f.batch, f.heads, from,
                   dims.first, dims.second);
        if (f.batch > 1 || f.heads > 1) from = f.path;
        dims = {std::max(dims.first, f.batch), std::max(dims.second, f.heads)};
    }
    for (const MaskSpec& c : spec.children) broadcast_dims(c, dims, from);
}
}  // namespace

std::pair<int64_t, int64_t> mask_pattern_dims(const MaskSpec& spec) {
    std::pair<int64_t, int64_t> dims{1, 1};
    std::string from;
    broadcast_dims(spec, dims, from);
    return dims;
}

}  // namespace stof
