---------------------- MODULE scopes_skip_spends_id ----------------------
\* expect: rejected at event 7
\* Hand-written, NOT a behaviour of the design: a skipped launch mints
\* nothing, yet the next entered launch's provisional is 3, not 2, as if the
\* skip had spent an id (S4). proofs/check expects ScopesTrace to reject it
\* at that launch.
TraceSizes == <<1, 1>>
TraceLaunches == 3
Trace == <<
  [op |-> "create", alloc |-> 1, size |-> 1],
  [op |-> "create", alloc |-> 2, size |-> 1],
  [op |-> "launch", reads |-> << >>, writes |-> << <<1, 0, 1>> >>,
   status |-> "entered", p |-> 1],
  [op |-> "close", outcome |-> "fail", error |-> "Launch", graph |-> << <<1, 1>> >>],
  [op |-> "launch", reads |-> << <<1, 0, 1>> >>, writes |-> << <<2, 0, 1>> >>,
   status |-> "skipped", root |-> 1, needed |-> 1, graph |-> << <<1, 2>> >>],
  [op |-> "read", alloc |-> 2, lo |-> 0, hi |-> 1, ok |-> FALSE, failures |-> <<1>>],
  [op |-> "launch", reads |-> << >>, writes |-> << <<2, 0, 1>> >>,
   status |-> "entered", p |-> 3],
  [op |-> "close", outcome |-> "ok", graph |-> << <<1, 1>> >>],
  [op |-> "drop", alloc |-> 1, graph |-> << >>],
  [op |-> "drop", alloc |-> 2, graph |-> << >>]
>>
=============================================================================
