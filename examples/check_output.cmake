# Runs an example and fails unless its output contains every expected line.
# ctest's PASS_REGULAR_EXPRESSION passes when ANY of its expressions matches;
# this needs ALL of them, so an example cannot lose half its story and pass.
#   cmake -DEXAMPLE=<binary> -DEXPECT=<file, one expected substring a line> -P check_output.cmake
execute_process(COMMAND ${EXAMPLE} OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
message("${output}${errors}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${EXAMPLE} exited with ${status}")
endif()

# CMake lists split on ';' and an unbalanced '[' stops the split (the
# expected lines hold byte ranges such as "[0, 64)"), so both sides are
# compared with brackets and semicolons swapped for inert characters.
function(inert text out)
  string(REPLACE "[" "<" text "${text}")
  string(REPLACE "]" ">" text "${text}")
  string(REPLACE ";" "," text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
inert("${output}" output)
file(READ ${EXPECT} expected)
inert("${expected}" expected)
string(REPLACE "\n" ";" expected "${expected}")
foreach(line IN LISTS expected)
  if(line STREQUAL "")
    continue()
  endif()
  string(FIND "${output}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${EXAMPLE}: the output lacks the line\n  ${line}")
  endif()
endforeach()
