// The CUDA templates of templates/, embedded into stofc at build time.
#pragma once

#include <string>
#include <vector>

namespace stof::codegen {

struct TemplateFile {
    const char* name;  // include path, e.g. "stof/common.cuh"
    const char* source;
};

const std::vector<TemplateFile>& template_files();

}  // namespace stof::codegen
