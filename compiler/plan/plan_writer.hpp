// Writing plan files (layout: stof/plan_format.hpp).
#pragma once

#include "stof/plan.hpp"

#include <string>

namespace stof::plan {

// The plan file's bytes. Encodes `p` as it is (call plan::validate first:
// the reader rejects any plan validate rejects).
std::string serialize_plan(const Plan& p);

// Validates `p` and writes it to `path` (replacing it atomically through a
// temporary file next to it). Throws stof::Error on invalid plans or I/O errors.
void write_plan(const Plan& p, const std::string& path);

}  // namespace stof::plan
