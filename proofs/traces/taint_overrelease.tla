------------------------ MODULE taint_overrelease ------------------------
\* expect: rejected at event 3
\* Hand-written, NOT a behaviour of the design: the recorded claims show a
\* write of [2, 5) releasing byte 5 as well (T2 releases exactly its range).
\* proofs/check expects TaintTrace to reject it at the third event.
TraceAllocs == {1}
TraceOffsets == 10
TraceMaxId == 1
Trace == <<
  [op |-> "insert", f |-> 1],
  [op |-> "taint", alloc |-> 1, lo |-> 0, hi |-> 10, f |-> 1,
   claims |-> << <<1, 0, 10>> >>],
  [op |-> "written", alloc |-> 1, lo |-> 2, hi |-> 5,
   claims |-> << <<1, 0, 2>>, <<1, 6, 10>> >>],
  [op |-> "clear", alloc |-> 1, claims |-> << >>, graph |-> << >>]
>>
=============================================================================
