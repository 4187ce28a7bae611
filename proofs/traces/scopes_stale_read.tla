------------------------ MODULE scopes_stale_read ------------------------
\* expect: rejected at event 4
\* Hand-written, NOT a behaviour of the design: a launch fails and leaves
\* buffer 1 unwritten, yet the recorded read of its bytes succeeds (D1).
\* proofs/check expects ScopesTrace to reject it at the read.
TraceSizes == <<4>>
TraceLaunches == 1
Trace == <<
  [op |-> "create", alloc |-> 1, size |-> 4],
  [op |-> "launch", reads |-> << >>, writes |-> << <<1, 0, 4>> >>,
   status |-> "entered", p |-> 1],
  [op |-> "close", outcome |-> "fail", error |-> "Launch", graph |-> << <<1, 1>> >>],
  [op |-> "read", alloc |-> 1, lo |-> 0, hi |-> 2, ok |-> TRUE],
  [op |-> "drop", alloc |-> 1, graph |-> << >>]
>>
=============================================================================
