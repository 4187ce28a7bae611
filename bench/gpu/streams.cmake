# taintpool_stream_bench: the launch scope with and without a cross-stream
# binding beside the bare launch, thread scaling, and the two-stream
# pipeline against cudaMallocAsync (and c10's caching allocator where torch
# is found: TAINTPOOL_TORCH, cmake/TaintpoolTorch.cmake). bench/gpu/
# stream_bench.cpp says what is measured and how.
add_library(taintpool_stream_bench_kernels STATIC stream_bench_kernels.cu)
target_link_libraries(taintpool_stream_bench_kernels PUBLIC taintpool::cuda)
taintpool_set_cuda_warnings(taintpool_stream_bench_kernels)

add_executable(taintpool_stream_bench stream_bench.cpp)
target_link_libraries(taintpool_stream_bench PRIVATE taintpool::cuda
  taintpool_stream_bench_kernels)
taintpool_set_warnings(taintpool_stream_bench)

if(TAINTPOOL_BUILD_TESTS)
  add_test(NAME stream_bench_smoke COMMAND taintpool_stream_bench --quick)
  set_tests_properties(stream_bench_smoke PROPERTIES LABELS "gpu;bench" SKIP_RETURN_CODE 77
    TIMEOUT 300)
endif()

# The c10 baseline: a second binary, so that a torch whose headers do not
# build here costs only this target (run_on_device.sh builds it on its own
# and falls back to the binary above).
include(TaintpoolTorch)
if(TAINTPOOL_TORCH_FOUND)
  # torch's headers with torch's C++ standard and ABI, in a library of their
  # own: its interface (c10_pipeline.hpp) carries no standard-library type.
  add_library(taintpool_c10_pipeline STATIC c10_pipeline.cpp)
  target_include_directories(taintpool_c10_pipeline SYSTEM PRIVATE ${TAINTPOOL_TORCH_INCLUDE_DIRS})
  target_link_libraries(taintpool_c10_pipeline PUBLIC ${TAINTPOOL_TORCH_LIBRARIES}
    CUDA::toolkit)
  target_compile_definitions(taintpool_c10_pipeline PRIVATE
    _GLIBCXX_USE_CXX11_ABI=${TAINTPOOL_TORCH_CXX11_ABI}
    TAINTPOOL_TORCH_VERSION="${TAINTPOOL_TORCH_VERSION}")
  set_target_properties(taintpool_c10_pipeline PROPERTIES CXX_STANDARD 17 CXX_EXTENSIONS OFF)

  add_executable(taintpool_stream_bench_c10 stream_bench.cpp)
  target_compile_definitions(taintpool_stream_bench_c10 PRIVATE TAINTPOOL_WITH_C10=1)
  target_link_libraries(taintpool_stream_bench_c10 PRIVATE taintpool::cuda
    taintpool_stream_bench_kernels taintpool_c10_pipeline)
  set_target_properties(taintpool_stream_bench_c10 PROPERTIES
    BUILD_RPATH "${TAINTPOOL_TORCH_LIBRARY_DIR};${TAINTPOOL_TORCH_RUNTIME_DIRS}")
  foreach(_dir ${TAINTPOOL_TORCH_RUNTIME_DIRS})
    target_link_options(taintpool_stream_bench_c10 PRIVATE "-Wl,-rpath-link,${_dir}")
  endforeach()
  taintpool_set_warnings(taintpool_stream_bench_c10)
endif()
