// A picture of one pattern of a sparse mask, as a PNG file.
//
// Rows of the image are query rows (top to bottom), columns are key columns.
// Small masks: each entry is s×s pixels, s = clamp(1024 / max(rows, cols), 1, 16).
// Large masks: each pixel covers d×d entries, d = ceil(max(rows, cols) / max_px),
// and shows the mix of what it covers. Colours: empty tile light grey; full tile
// blue; partial tile: kept entries dark orange, masked entries pale orange. Tile
// borders are drawn darker where a tile is at least 12 pixels wide.
#pragma once

#include "stof/sparse_mask.hpp"

#include <string>

namespace stof {

// False when stofc was built without libpng.
bool mask_png_supported();

// Throws stof::Error when the file cannot be written or libpng is missing.
void write_mask_png(const SparseMask& m, int32_t pattern, const std::string& path, int max_px = 2048);

}  // namespace stof
