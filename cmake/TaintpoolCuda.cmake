# The CUDA backend's build switch (DESIGN.md §3.6), included from the top
# level because enable_language(CUDA) must run in the directory common to
# every target that compiles or links CUDA (taintpool::cuda, its GPU tests,
# its GPU benchmarks).
#
#   TAINTPOOL_CUDA=AUTO  build taintpool::cuda when nvcc is found (on PATH, in
#                        CUDACXX, or at /usr/local/cuda/bin/nvcc), else skip it
#                        with a message — everything else builds without CUDA;
#   TAINTPOOL_CUDA=ON    the same, but a missing nvcc is a configure error;
#   TAINTPOOL_CUDA=OFF   never look.
#
# Sets TAINTPOOL_CUDA_ENABLED. Architectures default to 90: SASS for sm_90
# (H100/H200) plus compute_90 PTX, which newer GPUs JIT-compile — override
# with -DCMAKE_CUDA_ARCHITECTURES as usual. The CUDA runtime is linked
# statically everywhere (CMake's default for CUDA targets, and
# CUDA::cudart_static for taintpool::cuda), so a process holds exactly one
# runtime instance and one per-thread "last error", which the backend reads.

set(TAINTPOOL_CUDA AUTO CACHE STRING "Build the CUDA backend taintpool::cuda: AUTO (if nvcc is found), ON (required) or OFF")
set_property(CACHE TAINTPOOL_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${TAINTPOOL_CUDA}" _taintpool_cuda_mode)
set(TAINTPOOL_CUDA_ENABLED OFF)

if(NOT _taintpool_cuda_mode STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_taintpool_nvcc_on_path nvcc)
    if(NOT _taintpool_nvcc_on_path)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    # nvcc compiles host code with the same g++ as the C++ sources, so one
    # ABI and one set of warnings apply; with clang as CXX, nvcc keeps its
    # default host compiler.
    if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
    endif()
    enable_language(CUDA)
    # CMake before 3.26 does not know nvcc's C++20 flag, so a .cu target that
    # links taintpool::core (cxx_std_20) would fail to generate ("requires
    # the language dialect CUDA20"). nvcc has taken -std=c++20 since 12.0.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION
       AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
       AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(TAINTPOOL_CUDA_ENABLED ON)
    message(STATUS "taintpool: CUDA backend enabled (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(_taintpool_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "TAINTPOOL_CUDA=ON but no CUDA compiler was found: put nvcc on PATH, set CUDACXX or CMAKE_CUDA_COMPILER")
  else()
    message(STATUS "taintpool: no CUDA compiler found; the CUDA backend is not built (TAINTPOOL_CUDA=AUTO)")
  endif()
endif()

# taintpool_set_cuda_warnings(<target>)
#
# The warning policy for nvcc-compiled sources (.cu): every nvcc warning, and
# g++'s -Wall -Wextra on the host code nvcc generates, as errors under
# TAINTPOOL_WARNINGS_AS_ERRORS. (-Wpedantic and the rest of
# taintpool_set_warnings do not apply: nvcc's generated host code trips them.)
# Keep .cu sources in their own targets so these flags never reach g++ and
# the C++ flags never reach nvcc.
function(taintpool_set_cuda_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  set_target_properties(${target} PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON
    CUDA_EXTENSIONS OFF)
  if(TAINTPOOL_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()
