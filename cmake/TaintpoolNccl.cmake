# The NCCL communicator's build switch (collective/nccl_communicator.hpp),
# included after TaintpoolCuda: taintpool::nccl sits on taintpool::cuda.
#
#   TAINTPOOL_NCCL=AUTO  build taintpool::nccl when the CUDA backend is built
#                        and nccl.h and libnccl are found, else skip it with a
#                        message — everything else builds without it;
#   TAINTPOOL_NCCL=ON    the same, but a missing NCCL is a configure error;
#   TAINTPOOL_NCCL=OFF   never look.
#
# Where it looks: TAINTPOOL_NCCL_ROOT (a directory with include/nccl.h and
# lib/libnccl.so*), the NCCL_ROOT and NCCL_HOME environment variables, the
# NCCL a pip-installed PyTorch ships (the Python package nvidia.nccl, found
# with the python3 on PATH or TAINTPOOL_NCCL_PYTHON: its directory has
# include/nccl.h and lib/libnccl.so.2, no unversioned libnccl.so), the CUDA
# toolkit's own directories, then the system's. Sets TAINTPOOL_NCCL_ENABLED.
# taintpool::nccl is built for this tree's tests and benchmarks and not
# installed: it links one machine's libnccl by path.

set(TAINTPOOL_NCCL AUTO CACHE STRING "Build the NCCL communicator taintpool::nccl: AUTO (if NCCL is found), ON (required) or OFF")
set_property(CACHE TAINTPOOL_NCCL PROPERTY STRINGS AUTO ON OFF)
set(TAINTPOOL_NCCL_ROOT "" CACHE PATH "A directory holding include/nccl.h and lib/libnccl.so* (e.g. the nvidia.nccl Python package)")
set(TAINTPOOL_NCCL_PYTHON "" CACHE FILEPATH "The Python whose nvidia.nccl package to look in (default: python3 on PATH)")
string(TOUPPER "${TAINTPOOL_NCCL}" _taintpool_nccl_mode)
set(TAINTPOOL_NCCL_ENABLED OFF)

if(NOT _taintpool_nccl_mode STREQUAL "OFF")
  if(NOT TAINTPOOL_CUDA_ENABLED)
    if(_taintpool_nccl_mode STREQUAL "ON")
      message(FATAL_ERROR "TAINTPOOL_NCCL=ON needs the CUDA backend (TAINTPOOL_CUDA found no nvcc)")
    endif()
    message(STATUS "taintpool: the NCCL communicator needs the CUDA backend; not built")
  else()
    set(_taintpool_nccl_roots ${TAINTPOOL_NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME})
    set(_taintpool_python "${TAINTPOOL_NCCL_PYTHON}")
    if(NOT _taintpool_python)
      find_program(_taintpool_python NAMES python3)
    endif()
    if(_taintpool_python)
      execute_process(
        COMMAND "${_taintpool_python}" -c "import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])"
        OUTPUT_VARIABLE _taintpool_pip_nccl OUTPUT_STRIP_TRAILING_WHITESPACE
        ERROR_QUIET RESULT_VARIABLE _taintpool_pip_status TIMEOUT 30)
      if(_taintpool_pip_status EQUAL 0 AND IS_DIRECTORY "${_taintpool_pip_nccl}")
        list(APPEND _taintpool_nccl_roots "${_taintpool_pip_nccl}")
      endif()
    endif()
    list(APPEND _taintpool_nccl_roots ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
    find_path(TAINTPOOL_NCCL_INCLUDE_DIR nccl.h
      HINTS ${_taintpool_nccl_roots} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(TAINTPOOL_NCCL_LIBRARY NAMES nccl libnccl.so.2
      HINTS ${_taintpool_nccl_roots} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
    if(TAINTPOOL_NCCL_INCLUDE_DIR AND TAINTPOOL_NCCL_LIBRARY)
      file(STRINGS "${TAINTPOOL_NCCL_INCLUDE_DIR}/nccl.h" _taintpool_nccl_version
        REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
      string(REGEX REPLACE "[^0-9]+" "." _taintpool_nccl_version "${_taintpool_nccl_version}")
      string(REGEX REPLACE "^\\.|\\.$" "" _taintpool_nccl_version "${_taintpool_nccl_version}")
      set(TAINTPOOL_NCCL_ENABLED ON)
      message(STATUS "taintpool: NCCL communicator enabled (NCCL ${_taintpool_nccl_version}, "
        "${TAINTPOOL_NCCL_INCLUDE_DIR}, ${TAINTPOOL_NCCL_LIBRARY})")
    elseif(_taintpool_nccl_mode STREQUAL "ON")
      message(FATAL_ERROR "TAINTPOOL_NCCL=ON but nccl.h or libnccl was not found: set TAINTPOOL_NCCL_ROOT to a directory with include/nccl.h and lib/libnccl.so*")
    else()
      message(STATUS "taintpool: no NCCL found; the NCCL communicator is not built (TAINTPOOL_NCCL=AUTO)")
    endif()
  endif()
endif()
