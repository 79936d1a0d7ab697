#include "mask/mask_image.hpp"

#include "stof/error.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <vector>

#ifdef STOF_HAVE_PNG
#include <png.h>

#include <csetjmp>
#endif

namespace stof {

namespace {

using Rgb = std::array<double, 3>;
constexpr Rgb kEmpty{242, 242, 242}, kFull{31, 119, 180}, kPartialKept{217, 72, 1}, kPartialMasked{253, 208, 162};

struct Image {
    int64_t width = 0, height = 0;
    std::vector<uint8_t> rgb;  // [height, width, 3]
};

// Entries [a0, a1) per pixel of size d: calls f(pixel, overlap) for each pixel touched.
template <class F> void for_pixels(int64_t a0, int64_t a1, int64_t d, F&& f) {
    for (int64_t q = a0 / d; q * d < a1; ++q) f(q, std::min(a1, (q + 1) * d) - std::max(a0, q * d));
}

Image render(const SparseMask& m, int32_t p, int max_px) {
    const int64_t rows = m.rows, cols = m.cols, big = std::max<int64_t>({rows, cols, 1});
    const int64_t d = big > max_px ? (big + max_px - 1) / max_px : 1;
    const int64_t s = d > 1 ? 1 : std::clamp<int64_t>(1024 / big, 1, 16);
    const int64_t ph = (rows + d - 1) / d, pw = (cols + d - 1) / d;  // pixels before scaling by s
    std::vector<double> full(static_cast<size_t>(ph * pw)), part(full.size()), kept(full.size());
    const int64_t trows = m.tile_rows(), wc = m.tile_n / 8;
    for (int64_t tr = 0; tr < trows; ++tr) {
        const size_t base = static_cast<size_t>(p) * (trows + 1) + tr;
        for (int32_t t = m.row_ptr[base]; t < m.row_ptr[base + 1]; ++t) {
            const int64_t tc = m.col_idx[static_cast<size_t>(t)], b = m.bitmap_idx[static_cast<size_t>(t)];
            const int64_t i0 = tr * m.tile_m, i1 = std::min(rows, i0 + m.tile_m);
            const int64_t j0 = tc * m.tile_n, j1 = std::min(cols, j0 + m.tile_n);
            std::vector<double>& area = b < 0 ? full : part;
            for_pixels(i0, i1, d, [&](int64_t y, int64_t hy) {
                for_pixels(j0, j1, d, [&](int64_t x, int64_t wx) {
                    area[static_cast<size_t>(y * pw + x)] += static_cast<double>(hy * wx);
                });
            });
            if (b < 0) continue;
            const uint64_t* words = m.bitmaps.data() + static_cast<size_t>(b) * m.words_per_tile();
            for (int64_t w = 0; w < m.words_per_tile(); ++w)
                for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
                    const int64_t bit = __builtin_ctzll(bits);
                    const int64_t i = i0 + w / wc * 8 + bit / 8, j = j0 + w % wc * 8 + bit % 8;
                    kept[static_cast<size_t>(i / d * pw + j / d)] += 1;
                }
        }
    }
    Image img;
    img.width = pw * s;
    img.height = ph * s;
    img.rgb.resize(static_cast<size_t>(img.width * img.height * 3));
    const bool grid_rows = m.tile_m * s / d >= 12, grid_cols = m.tile_n * s / d >= 12;
    // Pixel q (before scaling) starts a tile when a multiple of the tile size lies in [q*d, (q+1)*d).
    auto starts_tile = [d](int64_t q, int64_t tile) { return (q * d + tile - 1) / tile * tile < (q + 1) * d; };
    for (int64_t y = 0; y < img.height; ++y)
        for (int64_t x = 0; x < img.width; ++x) {
            const int64_t py = y / s, px = x / s;
            const size_t k = static_cast<size_t>(py * pw + px);
            const double area = static_cast<double>((std::min(rows, (py + 1) * d) - py * d) *
                                                    (std::min(cols, (px + 1) * d) - px * d));
            const double f = full[k], pk = kept[k], pm = part[k] - kept[k], e = area - full[k] - part[k];
            const bool border = (grid_rows && y % s == 0 && starts_tile(py, m.tile_m)) ||
                                (grid_cols && x % s == 0 && starts_tile(px, m.tile_n));
            for (int ch = 0; ch < 3; ++ch) {
                double v = (e * kEmpty[ch] + f * kFull[ch] + pk * kPartialKept[ch] + pm * kPartialMasked[ch]) / area;
                if (border) v *= 0.82;
                img.rgb[static_cast<size_t>((y * img.width + x) * 3 + ch)] = static_cast<uint8_t>(
                    std::clamp(v + 0.5, 0.0, 255.0));
            }
        }
    return img;
}

#ifdef STOF_HAVE_PNG
// Returns "" or libpng's complaint. No C++ objects live across setjmp.
const char* write_png_rows(FILE* fp, const Image& img, png_bytep* rows) {
    static thread_local char message[256];
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    if (png == nullptr) return "png_create_write_struct failed";
    png_infop info = png_create_info_struct(png);
    if (info == nullptr) {
        png_destroy_write_struct(&png, nullptr);
        return "png_create_info_struct failed";
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        std::snprintf(message, sizeof message, "libpng failed while writing");
        return message;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, static_cast<png_uint_32>(img.width), static_cast<png_uint_32>(img.height), 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return "";
}
#endif

}  // namespace

bool mask_png_supported() {
#ifdef STOF_HAVE_PNG
    return true;
#else
    return false;
#endif
}

void write_mask_png(const SparseMask& m, int32_t pattern, const std::string& path, int max_px) {
#ifdef STOF_HAVE_PNG
    STOF_CHECK(pattern >= 0 && pattern < m.patterns(), "mask picture: pattern {} out of range (mask has {})", pattern,
               m.patterns());
    STOF_CHECK(m.rows > 0 && m.cols > 0, "mask picture: the mask is empty ({}x{})", m.rows, m.cols);
    STOF_CHECK(max_px >= 16, "mask picture: max_px {} is too small", max_px);
    const Image img = render(m, pattern, max_px);
    std::vector<png_bytep> rows(static_cast<size_t>(img.height));
    for (int64_t y = 0; y < img.height; ++y)
        rows[static_cast<size_t>(y)] = const_cast<png_bytep>(img.rgb.data() + static_cast<size_t>(y * img.width * 3));
    FILE* fp = std::fopen(path.c_str(), "wb");
    STOF_CHECK(fp != nullptr, "cannot write mask picture {}", path);
    const std::string err = write_png_rows(fp, img, rows.data());
    const bool closed = std::fclose(fp) == 0;
    STOF_CHECK(err.empty(), "cannot write mask picture {}: {}", path, err);
    STOF_CHECK(closed, "cannot write mask picture {}: close failed", path);
#else
    (void)m;
    (void)pattern;
    (void)max_px;
    STOF_FAIL("cannot write {}: stofc was built without libpng (install libpng-dev and re-run cmake)", path);
#endif
}

}  // namespace stof
