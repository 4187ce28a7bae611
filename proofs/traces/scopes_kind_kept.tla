------------------------ MODULE scopes_kind_kept ------------------------
\* expect: rejected at event 4
\* Hand-written, NOT a behaviour of the design: a launch's body fails with a
\* launch error, yet the read's report names its root as still TornDown, as
\* if the real error never replaced the provisional one (G4). proofs/check
\* expects ScopesTrace to reject it at the read.
TraceSizes == <<2>>
TraceLaunches == 1
Trace == <<
  [op |-> "create", alloc |-> 1, size |-> 2],
  [op |-> "launch", reads |-> << >>, writes |-> << <<1, 0, 2>> >>,
   status |-> "entered", p |-> 1],
  [op |-> "close", outcome |-> "fail", error |-> "Launch", graph |-> << <<1, 1>> >>],
  [op |-> "read", alloc |-> 1, lo |-> 0, hi |-> 2, ok |-> FALSE, failures |-> <<1>>,
   reports |-> << [f |-> 1, kind |-> "TornDown", origin |-> 1, path |-> << >>] >>],
  [op |-> "drop", alloc |-> 1, graph |-> << >>]
>>
=============================================================================
