# cmake -DOUT=<file.cpp> -DROOT=<templates dir> -P embed_templates.cmake
# Writes a C++ source defining stof::codegen::template_files(): every
# templates/**/*.cuh as {relative path, contents}.
file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/*.cuh)
list(SORT files)
set(body "// Generated from templates/ by cmake/embed_templates.cmake.\n#include \"codegen/templates.hpp\"\n\nnamespace stof::codegen {\n\nconst std::vector<TemplateFile>& template_files() {\n    static const std::vector<TemplateFile> files = {\n")
foreach(f ${files})
  file(READ ${ROOT}/${f} text)
  string(FIND "${text}" ")stof_template\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter")
  endif()
  string(APPEND body "        {\"${f}\", R\"stof_template(${text})stof_template\"},\n")
endforeach()
string(APPEND body "    };\n    return files;\n}\n\n}  // namespace stof::codegen\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
