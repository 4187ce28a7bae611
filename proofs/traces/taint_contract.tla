------------------------- MODULE taint_contract -------------------------
\* expect: accepted
\* Hand-written: calls that break the contract are refused and change
\* nothing (a dead or never-minted failure, an untag with no tag); ids are
\* never reused (G1); offsets from the top of the 64-bit space (2^31 - 1 and
\* just below), written as their ranks among the trace's offsets (TRACES.md).
TraceAllocs == {3, 4}
TraceOffsets == 10
TraceMaxId == 7
Trace == <<
  [op |-> "insert", f |-> 1],
  [op |-> "taint", alloc |-> 3, lo |-> 9, hi |-> 10, f |-> 1,
   claims |-> << <<1, 9, 10>> >>, graph |-> << <<1, 1>> >>],
  [op |-> "written", alloc |-> 3, lo |-> 8, hi |-> 10,
   claims |-> << >>, graph |-> << >>],
  [op |-> "taint", alloc |-> 3, lo |-> 0, hi |-> 4, f |-> 1, threw |-> TRUE,
   claims |-> << >>, graph |-> << >>],
  [op |-> "taint", alloc |-> 3, lo |-> 0, hi |-> 4, f |-> 7, threw |-> TRUE],
  [op |-> "taint", alloc |-> 3, lo |-> 4, hi |-> 4, f |-> 7, threw |-> FALSE],
  [op |-> "insert", f |-> 2, graph |-> << <<2, 0>> >>],
  [op |-> "untag", f |-> 2, threw |-> TRUE],
  [op |-> "tag", f |-> 1, threw |-> TRUE],
  [op |-> "skipped", f |-> 1, threw |-> TRUE],
  [op |-> "skipped", f |-> 2, threw |-> FALSE],
  [op |-> "tag", f |-> 2, graph |-> << <<2, 1>> >>],
  [op |-> "prune", f |-> 2, graph |-> << <<2, 1>> >>],
  [op |-> "untag", f |-> 2, graph |-> << >>],
  [op |-> "prune", f |-> 2, graph |-> << >>],
  [op |-> "insert", f |-> 3],
  [op |-> "replace", f |-> 3],
  [op |-> "taint", alloc |-> 4, lo |-> 0, hi |-> 7, f |-> 3],
  [op |-> "taint", alloc |-> 4, lo |-> 2, hi |-> 3, f |-> 3,
   claims |-> << <<3, 0, 7>> >>, graph |-> << <<3, 1>> >>],
  [op |-> "written", alloc |-> 4, lo |-> 3, hi |-> 5,
   claims |-> << <<3, 0, 3>>, <<3, 5, 7>> >>],
  [op |-> "taint", alloc |-> 4, lo |-> 3, hi |-> 5, f |-> 3,
   claims |-> << <<3, 0, 7>> >>],
  [op |-> "prune", f |-> 3, graph |-> << <<3, 1>> >>],
  [op |-> "taint", alloc |-> 3, lo |-> 0, hi |-> 1, f |-> 3, graph |-> << <<3, 2>> >>],
  [op |-> "move", alloc |-> 4, to |-> 3, threw |-> TRUE],
  [op |-> "clear", alloc |-> 3, graph |-> << <<3, 1>> >>],
  [op |-> "move", alloc |-> 4, to |-> 3, claims |-> << >>, graph |-> << <<3, 1>> >>],
  [op |-> "query", alloc |-> 3, lo |-> 4, hi |-> 6, fs |-> <<3>>, one |-> 3],
  [op |-> "clear", alloc |-> 3, graph |-> << >>]
>>
=============================================================================
