# TAINTPOOL_COVERAGE: instrument every C++ target for clang's source-based
# coverage (-fprofile-instr-generate -fcoverage-mapping), read back with
# llvm-profdata / llvm-cov. tests/coverage configures the `coverage` preset,
# runs the suite and prints the figures for core/.
#
# Source-based rather than gcov: its branch counts are the conditions written
# in the source, not the edges g++ adds for exceptions and inlined library
# code, so "90% of branches" measures our decisions. Needs clang; C++ only
# (nvcc takes none of these flags, and the coverage preset builds no CUDA).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "TAINTPOOL_COVERAGE needs clang (source-based coverage); found "
    "${CMAKE_CXX_COMPILER_ID}. Use the coverage preset or tests/coverage.")
endif()
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fprofile-instr-generate>
  $<$<COMPILE_LANGUAGE:CXX>:-fcoverage-mapping>)
add_link_options(-fprofile-instr-generate)
