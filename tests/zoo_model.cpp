#include "zoo_model.hpp"

#include "onnx/import.hpp"
#include "pipeline.hpp"
#include "stof/npy.hpp"
#include "test_util.hpp"

namespace stof::test {

std::map<std::string, Shape> stored_input_shapes(const std::filesystem::path& dir) {
    std::map<std::string, Shape> shapes;
    for (const auto& f : std::filesystem::directory_iterator(dir / "inputs"))
        shapes[f.path().stem().string()] = read_npy(f.path().string()).shape;
    return shapes;
}

ir::Graph zoo_graph(const std::string& name, Precision p) {
    const std::filesystem::path dir = std::filesystem::path(source_dir()) / "models" / name;
    ir::Graph g = import_onnx_file((dir / "model.onnx").string());
    PipelineOptions opt;
    opt.pass.input_shapes = stored_input_shapes(dir);
    opt.pass.plan_precision = p;
    run_pipeline(g, opt);
    return g;
}

}  // namespace stof::test
