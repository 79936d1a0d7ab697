# STOF_CUTLASS_DIR: the CUTLASS source tree (include/ and tools/util/include/) the fused GEMM
# kernels of kernels/gemm are built with: -DSTOF_CUTLASS_DIR or $STOF_CUTLASS_DIR, else the
# copy inside the nvidia-cutlass Python package (tools/requirements.txt; tools/setup.sh
# installs it into .venv). CUTLASS 4.2 or newer.
if(NOT STOF_CUTLASS_DIR AND DEFINED ENV{STOF_CUTLASS_DIR})
  set(STOF_CUTLASS_DIR $ENV{STOF_CUTLASS_DIR})
endif()
if(NOT STOF_CUTLASS_DIR AND STOF_PYTHON_EXE)
  execute_process(
    COMMAND ${STOF_PYTHON_EXE} -c "import importlib.util, os; s = importlib.util.find_spec('cutlass_library'); print(os.path.join(list(s.submodule_search_locations)[0], 'source'))"
    OUTPUT_VARIABLE _cutlass OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(STOF_CUTLASS_DIR ${_cutlass})
endif()
if(NOT STOF_CUTLASS_DIR OR NOT EXISTS "${STOF_CUTLASS_DIR}/include/cutlass/version.h"
   OR NOT EXISTS "${STOF_CUTLASS_DIR}/tools/util/include/cutlass/util/packed_stride.hpp")
  message(FATAL_ERROR "stofc: CUTLASS not found (looked in '${STOF_CUTLASS_DIR}'). Run tools/setup.sh (it installs "
                      "the nvidia-cutlass package into .venv), pip install nvidia-cutlass==4.2.0, or pass "
                      "-DSTOF_CUTLASS_DIR=/path/to/cutlass (a CUTLASS 4.2+ source tree)")
endif()
file(STRINGS "${STOF_CUTLASS_DIR}/include/cutlass/version.h" _major REGEX "#define CUTLASS_MAJOR [0-9]+")
file(STRINGS "${STOF_CUTLASS_DIR}/include/cutlass/version.h" _minor REGEX "#define CUTLASS_MINOR [0-9]+")
string(REGEX MATCH "[0-9]+$" _major "${_major}")
string(REGEX MATCH "[0-9]+$" _minor "${_minor}")
if(_major LESS 4 OR (_major EQUAL 4 AND _minor LESS 2))
  message(FATAL_ERROR "stofc: CUTLASS ${_major}.${_minor} at ${STOF_CUTLASS_DIR}; 4.2 or newer is needed")
endif()
set(STOF_CUTLASS_DIR ${STOF_CUTLASS_DIR} CACHE PATH "CUTLASS source tree (include/, tools/util/include/)" FORCE)
message(STATUS "stofc: CUTLASS ${_major}.${_minor}: ${STOF_CUTLASS_DIR}")
