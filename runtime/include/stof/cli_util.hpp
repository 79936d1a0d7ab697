// Command-line helpers shared by stofc and stof-run.
#pragma once

#include "stof/tensor.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace stof::cli {

// Exit codes of stofc and stof-run (docs/ERRORS.md).
inline constexpr int kExitError = 1;     // a stof::Error: bad model, plan, file, flag value, or a mismatch
inline constexpr int kExitUsage = 2;     // the command line does not parse (unknown option, missing argument)
inline constexpr int kExitInternal = 3;  // any other exception: a bug in stofc

// `text` with control characters, non-ASCII bytes and backslashes written as \xNN escapes
// (newlines kept when keep_newlines), for printing names that come from files (model,
// plan, .npy) on a terminal: no escape sequence from a file reaches it.
std::string printable(const std::string& text, bool keep_newlines = false);

// Creates directory `dir` (and its parents) for option `flag`; a stof::Error when it
// cannot be created or written.
void make_output_dir(const std::string& dir, const char* flag);

// "NAME=VALUE" → {NAME, VALUE}; `flag` names the option in errors.
std::pair<std::string, std::string> split_assignment(const std::string& arg, const char* flag);

// Checks, before any work, that `path` can be written as a file: not a directory
// (nor ending in '/'), in an existing directory the process may write to, and not
// something other than a regular file. `what` names the option in errors ("-o").
void check_output_file(const std::string& path, const char* what);

// A file name for a tensor name: characters outside [A-Za-z0-9._-] become '_'.
std::string tensor_file_name(const std::string& tensor_name);

// Tensors from NAME=FILE.npy arguments of option `flag` ("--input"); a name given twice is an error.
std::map<std::string, Tensor> read_named_npy(const std::vector<std::string>& args, const char* flag);

}  // namespace stof::cli
