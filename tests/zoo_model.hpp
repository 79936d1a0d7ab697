// The zoo models in tests: models/<name>/model.onnx with the .npy inputs of
// models/<name>/inputs/ (one file per input, named after it).
#pragma once

#include "ir/graph.hpp"
#include "precision.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace stof::test {

// The shapes of the .npy files in dir/inputs, by input name.
std::map<std::string, Shape> stored_input_shapes(const std::filesystem::path& dir);

// models/<name>/model.onnx at the shapes of its stored inputs, through the pipeline
// with plan precision p.
ir::Graph zoo_graph(const std::string& name, Precision p);

}  // namespace stof::test
