# taintpool_set_warnings(<target>)
#
# The project's warning policy, applied to every target it builds: the full
# -Wall -Wextra -Wpedantic set under g++ 12 and clang 14, as errors unless
# TAINTPOOL_WARNINGS_AS_ERRORS is off (consumers building us as a subproject
# with a newer compiler should not break on a new warning).
function(taintpool_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
    -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
    -Wconversion -Wsign-conversion -Wdouble-promotion -Wformat=2
    -Wimplicit-fallthrough)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 at -O3 reports -Wrestrict inside libstdc++'s own string
    # concatenation ("text" + std::to_string(n)): GCC bug 105329, a false
    # positive in the standard library, not in our code.
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(TAINTPOOL_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
