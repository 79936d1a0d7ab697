# STOF_PYTHON_EXE: the Python used by tests and to locate onnx.proto.
if(STOF_PYTHON)
  set(STOF_PYTHON_EXE ${STOF_PYTHON})
elseif(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  set(STOF_PYTHON_EXE ${CMAKE_SOURCE_DIR}/.venv/bin/python)
else()
  find_program(STOF_PYTHON_EXE NAMES python3 python)
endif()
message(STATUS "stofc: test python: ${STOF_PYTHON_EXE}")
