# PyTorch's c10 CUDA library, for the GPU benchmark's caching-allocator
# baseline (bench/gpu/c10_pipeline.cpp) and nothing else: taintpool never
# depends on torch.
#
#   TAINTPOOL_TORCH=AUTO  use torch if found (the default): TORCH_DIR, or the
#                         torch package python3 imports; silently skipped
#                         where there is none (CI);
#   TAINTPOOL_TORCH=ON    the same, but not finding it is a configure error;
#   TAINTPOOL_TORCH=OFF   never look.
#   TORCH_DIR             the torch package directory (the one holding
#                         include/ and lib/), e.g. from
#                         python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))'
#
# Sets TAINTPOOL_TORCH_FOUND, TAINTPOOL_TORCH_INCLUDE_DIRS,
# TAINTPOOL_TORCH_LIBRARIES (libc10_cuda.so, libc10.so),
# TAINTPOOL_TORCH_LIBRARY_DIR, TAINTPOOL_TORCH_CXX11_ABI (0 or 1: torch's
# _GLIBCXX_USE_CXX11_ABI, which code including its headers must match) and
# TAINTPOOL_TORCH_VERSION, and TAINTPOOL_TORCH_RUNTIME_DIRS (where the
# libraries libc10_cuda.so needs live).

include_guard(GLOBAL) # Asked by more than one GPU benchmark; torch is looked for once.

set(TAINTPOOL_TORCH AUTO CACHE STRING "Build the c10 baseline of the GPU benchmark: AUTO, ON or OFF")
set_property(CACHE TAINTPOOL_TORCH PROPERTY STRINGS AUTO ON OFF)
set(TORCH_DIR "" CACHE PATH "The torch package directory (holding include/ and lib/)")
string(TOUPPER "${TAINTPOOL_TORCH}" _taintpool_torch_mode)
set(TAINTPOOL_TORCH_FOUND OFF)

if(NOT _taintpool_torch_mode STREQUAL "OFF")
  find_program(_taintpool_python3 NAMES python3)
  set(_taintpool_torch_dir "${TORCH_DIR}")
  set(_taintpool_torch_abi "")
  set(_taintpool_torch_version "")
  if(_taintpool_python3)
    # One python3 call answers all three (importing torch takes seconds).
    execute_process(
      COMMAND ${_taintpool_python3} -c
        "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)"
      OUTPUT_VARIABLE _taintpool_torch_answer
      ERROR_QUIET
      RESULT_VARIABLE _taintpool_torch_result
      TIMEOUT 120)
    if(_taintpool_torch_result EQUAL 0)
      string(REPLACE "\n" ";" _taintpool_torch_lines "${_taintpool_torch_answer}")
      list(LENGTH _taintpool_torch_lines _taintpool_torch_count)
      if(_taintpool_torch_count GREATER_EQUAL 3)
        list(GET _taintpool_torch_lines 0 _taintpool_torch_python_dir)
        list(GET _taintpool_torch_lines 1 _taintpool_torch_abi)
        list(GET _taintpool_torch_lines 2 _taintpool_torch_version)
        if(NOT _taintpool_torch_dir)
          set(_taintpool_torch_dir "${_taintpool_torch_python_dir}")
        endif()
      endif()
    endif()
  endif()
  if(_taintpool_torch_dir
     AND EXISTS "${_taintpool_torch_dir}/include/c10/cuda/CUDACachingAllocator.h"
     AND EXISTS "${_taintpool_torch_dir}/lib/libc10_cuda.so"
     AND EXISTS "${_taintpool_torch_dir}/lib/libc10.so")
    if(_taintpool_torch_abi STREQUAL "")
      # No python to ask: torch wheels since 2.7 use the new ABI.
      set(_taintpool_torch_abi 1)
      set(_taintpool_torch_version "unknown")
    endif()
    set(TAINTPOOL_TORCH_FOUND ON)
    set(TAINTPOOL_TORCH_INCLUDE_DIRS "${_taintpool_torch_dir}/include")
    set(TAINTPOOL_TORCH_LIBRARY_DIR "${_taintpool_torch_dir}/lib")
    set(TAINTPOOL_TORCH_LIBRARIES "${_taintpool_torch_dir}/lib/libc10_cuda.so"
      "${_taintpool_torch_dir}/lib/libc10.so")
    set(TAINTPOOL_TORCH_CXX11_ABI "${_taintpool_torch_abi}")
    set(TAINTPOOL_TORCH_VERSION "${_taintpool_torch_version}")
    # The CUDA runtime and friends libc10_cuda.so needs come from the nvidia
    # wheels beside torch (nvidia/cu13/lib, nvidia/cuda_runtime/lib, ...).
    file(GLOB TAINTPOOL_TORCH_RUNTIME_DIRS LIST_DIRECTORIES true
      "${_taintpool_torch_dir}/../nvidia/*/lib")
    message(STATUS "taintpool: torch ${TAINTPOOL_TORCH_VERSION} at ${_taintpool_torch_dir} (CXX11 ABI ${TAINTPOOL_TORCH_CXX11_ABI}): the GPU benchmark gets its c10 baseline")
  elseif(_taintpool_torch_mode STREQUAL "ON")
    message(FATAL_ERROR "TAINTPOOL_TORCH=ON but no torch with c10 CUDA headers and libc10_cuda.so was found: set TORCH_DIR")
  else()
    message(STATUS "taintpool: no torch found; the GPU benchmark builds without its c10 baseline (TAINTPOOL_TORCH=AUTO)")
  endif()
endif()
