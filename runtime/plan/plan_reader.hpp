// Reading plan files (layout: stof/plan_format.hpp).
//
// Every offset, size, count, enum value and checksum is checked before use, and
// every byte of the file is covered by a checksum or checked (reserved fields and
// the padding between sections are zero); then the plan is checked as a whole
// with plan::validate. Failures throw stof::Error prefixed with `what` (the file
// name) and naming the section:
//   "model.stof: section 'schedule' is damaged (checksum mismatch)".
// A plan of another format version names the stofc that wrote it. No input
// makes the reader crash or allocate more than a small multiple of its size.
#pragma once

#include "stof/plan.hpp"

#include <string>

namespace stof::plan {

Plan read_plan(const std::string& path);

// `bytes`: the contents of a plan file; `what` names it in messages.
// verify_checksums = false skips the crc32 checks (only the fuzzer does this,
// to reach the decoders behind them).
Plan parse_plan(const std::string& bytes, const std::string& what, bool verify_checksums = true);

}  // namespace stof::plan
