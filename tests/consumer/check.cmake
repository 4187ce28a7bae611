# cmake -DMODE=<find_package|subdirectory|fetchcontent> -DSOURCE_DIR=<repo>
#       -DBUILD_DIR=<the build under test> -DWORK_DIR=<scratch> -P check.cmake
#
# Builds tests/consumer against taintpool the way MODE says (installing
# BUILD_DIR into a scratch prefix first for find_package), then runs it.
#
# WORK_DIR is kept between runs, so a second ctest run with nothing changed
# reconfigures, finds everything up to date and only runs the consumer,
# while a changed source or header is rebuilt as in any build tree. It is
# wiped and built from scratch when the consumer would be configured
# differently (another SOURCE_DIR, BUILD_DIR or CMake), so no stale cache
# can stand in for a fresh consumer.
foreach(var MODE SOURCE_DIR BUILD_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake needs -D${var}=...")
  endif()
endforeach()

set(stamp ${WORK_DIR}/configured-for.txt)
set(wanted "${MODE}|${SOURCE_DIR}|${BUILD_DIR}|${CMAKE_COMMAND}|${CMAKE_VERSION}")
set(found "")
if(EXISTS ${stamp})
  file(READ ${stamp} found)
endif()
if(NOT found STREQUAL wanted)
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

set(configure_args -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G Ninja
  -DCMAKE_BUILD_TYPE=Release -DTAINTPOOL_CONSUME=${MODE} -DTAINTPOOL_SOURCE_DIR=${SOURCE_DIR})
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  list(APPEND configure_args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
endif()
run(${CMAKE_COMMAND} ${configure_args})
file(WRITE ${stamp} "${wanted}")
# The consumer and what it links (taintpool::core), as a user's build would:
# not every optional target of a subproject (the CUDA, MPI and NCCL
# libraries), which took ten minutes on a busy two-core machine.
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer)
run(${WORK_DIR}/build/consumer)
