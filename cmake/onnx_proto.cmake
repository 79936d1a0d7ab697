# Compiles onnx.proto with protoc into the static library stof_onnx_proto.
# The proto comes from -DSTOF_ONNX_PROTO, Debian's libonnx-dev, or the python
# onnx package (machines without libonnx-dev).
if(NOT STOF_ONNX_PROTO)
  if(EXISTS /usr/include/onnx/onnx.proto)
    set(_proto /usr/include/onnx/onnx.proto)
  elseif(STOF_PYTHON_EXE)
    execute_process(
      COMMAND ${STOF_PYTHON_EXE} -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'onnx.proto'))"
      OUTPUT_VARIABLE _proto OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(NOT _proto OR NOT EXISTS "${_proto}")
    message(FATAL_ERROR "stofc: onnx.proto not found. Install libonnx-dev (tools/setup.sh does), "
                        "pip install onnx, or pass -DSTOF_ONNX_PROTO=/path/to/onnx.proto")
  endif()
  set(STOF_ONNX_PROTO ${_proto} CACHE FILEPATH "onnx.proto to compile" FORCE)
endif()
message(STATUS "stofc: onnx.proto: ${STOF_ONNX_PROTO}")

set(_gen ${CMAKE_BINARY_DIR}/generated)
file(MAKE_DIRECTORY ${_gen})
add_custom_command(
  OUTPUT ${_gen}/onnx.pb.cc ${_gen}/onnx.pb.h
  COMMAND ${CMAKE_COMMAND} -E copy ${STOF_ONNX_PROTO} ${_gen}/onnx.proto
  COMMAND protobuf::protoc --cpp_out=${_gen} -I${_gen} ${_gen}/onnx.proto
  DEPENDS ${STOF_ONNX_PROTO}
  COMMENT "protoc onnx.proto")
add_library(stof_onnx_proto STATIC ${_gen}/onnx.pb.cc)
target_include_directories(stof_onnx_proto SYSTEM PUBLIC ${_gen})
target_link_libraries(stof_onnx_proto PUBLIC protobuf::libprotobuf)
