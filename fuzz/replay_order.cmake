# An input's run must not depend on what ran before it in the process
# (issue 13): libFuzzer runs millions of inputs in one process and keeps an
# input for the coverage it showed once, so a run that differs with its
# predecessors makes the corpus, and every reproducer, lie. A target that
# keeps anything across inputs (device_fuzzer keeps its pages,
# testing/recycling_storage.hpp; the taint targets keep their harness and
# clear it) must leave the next input a state it cannot tell from a fresh
# process's. This script pins that for one target's committed corpus:
#
#   * the inputs replayed in reverse name order in one process must pass, as
#     they pass in name order (the fuzz.<target>.corpus test);
#   * with TRACES, a target that writes one trace per input under
#     TAINTPOOL_TRACE_OUT (device_fuzzer: the ScopesTrace of every op, with
#     its ids, results and claims; fuzz/common/device_trace.hpp) writes the
#     same bytes for every input whether it ran alone in its process, after
#     every input before it in name order, or after every input after it:
#     the same run, not merely a passing one; the taint targets too (their
#     taint_<name>.tla traces), since their harness gives its graph back at
#     its fresh table capacity (fuzz/ROUNDS.md, the fourteenth round).
#
# Cost: the traced form runs the replay driver once per input (5-10 s for
# device_fuzzer's 397 inputs under the ci or asan preset on the shared
# 2-core machine); the reversed form is one more replay (well under 1 s).
#
# Usage (fuzz/CMakeLists.txt registers it as fuzz.<target>.order):
#   cmake -DREPLAY=<target>_replay -DDIR=<corpus dir> -DWORK=<scratch dir>
#         [-DTRACES=ON] -P replay_order.cmake
cmake_minimum_required(VERSION 3.22)

foreach(required IN ITEMS REPLAY DIR WORK)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "replay_order.cmake: -D${required}= is required")
  endif()
endforeach()

file(GLOB inputs LIST_DIRECTORIES false "${DIR}/*")
list(FILTER inputs EXCLUDE REGEX "/README[^/]*$")
list(SORT inputs)
list(LENGTH inputs count)
if(count LESS 2)
  message(FATAL_ERROR "replay_order.cmake: ${DIR} holds ${count} inputs; an order needs two")
endif()
set(reversed ${inputs})
list(REVERSE reversed)

# Runs the driver over `files` in that order, tracing into `traces` (none:
# no tracing); any failing input fails the test.
function(replay traces)
  if(traces)
    file(MAKE_DIRECTORY "${traces}")
    set(env TAINTPOOL_TRACE_OUT=${traces})
  else()
    set(env --unset=TAINTPOOL_TRACE_OUT)
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} ${REPLAY} ${ARGN}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "replay_order.cmake: ${REPLAY} failed (${result}):\n${out}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK}")
if(NOT TRACES)
  replay("" ${reversed})
  message(STATUS "${count} inputs passed in reverse order in one process")
  return()
endif()

replay("${WORK}/forward" ${inputs})
replay("${WORK}/reversed" ${reversed})
foreach(input IN LISTS inputs)
  replay("${WORK}/alone" ${input})
endforeach()

file(GLOB alone RELATIVE "${WORK}/alone" "${WORK}/alone/*.tla")
list(LENGTH alone traced)
if(traced EQUAL 0)
  message(FATAL_ERROR "replay_order.cmake: no input wrote a trace: nothing was compared")
endif()
foreach(order IN ITEMS forward reversed)
  file(GLOB written RELATIVE "${WORK}/${order}" "${WORK}/${order}/*.tla")
  if(NOT written STREQUAL alone)
    message(FATAL_ERROR "replay_order.cmake: the inputs run ${order} in one process wrote "
                        "traces for other inputs than each run alone")
  endif()
  foreach(trace IN LISTS alone)
    file(SHA256 "${WORK}/alone/${trace}" expected)
    file(SHA256 "${WORK}/${order}/${trace}" got)
    if(NOT got STREQUAL expected)
      message(FATAL_ERROR "replay_order.cmake: ${trace} differs between a run alone and the "
                          "inputs run ${order} in one process: an input's run depends on what "
                          "ran before it (diff ${WORK}/alone/${trace} ${WORK}/${order}/${trace})")
    endif()
  endforeach()
endforeach()
message(STATUS "${traced} of ${count} inputs traced: the same trace alone, in name order and "
               "in reverse order")
