// Command-line helpers shared by stofc and stof-run.
#pragma once

#include "stof/tensor.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace stof::cli {

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
