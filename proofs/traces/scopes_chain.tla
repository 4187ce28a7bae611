--------------------------- MODULE scopes_chain ---------------------------
\* expect: accepted
\* Hand-written: DESIGN.md §1's story and the scope rules around it.
\* load_weights fails (OOM) and leaves buffer 1 unwritten; linear (needs 1)
\* and softmax (needs 2) are skipped and carry the root; the read of 3 names
\* the root, its error kind and the path. Then: a partial failure (S2), byte-precise reads
\* beside stale bytes (D1), a host write and a relaunch that repair (S5), a
\* throwing body (S3), a dropped buffer (P1), a refused binding (P3), an
\* empty write set (nothing minted), a read-write binding checked and
\* tainted (S5), and every buffer dropped: the graph is empty (R4).
TraceSizes == <<8, 8, 8, 4>>
TraceLaunches == 10
Trace == <<
  [op |-> "create", alloc |-> 1, size |-> 8],
  [op |-> "create", alloc |-> 2, size |-> 8],
  [op |-> "create", alloc |-> 3, size |-> 8],
  [op |-> "create", alloc |-> 4, size |-> 4],
  \* launch 1: load_weights
  [op |-> "launch", reads |-> << >>, writes |-> << <<1, 0, 8>> >>,
   status |-> "entered", p |-> 1, graph |-> << <<1, 1>> >>],
  [op |-> "close", outcome |-> "fail", error |-> "OutOfMemory", graph |-> << <<1, 1>> >>],
  \* launch 2: a host write of the input
  [op |-> "launch", reads |-> << >>, writes |-> << <<4, 0, 4>> >>,
   status |-> "entered", p |-> 2],
  [op |-> "close", outcome |-> "ok", graph |-> << <<1, 1>> >>],
  \* launch 3: linear, skipped: it needed 1
  [op |-> "launch", reads |-> << <<1, 0, 8>>, <<4, 0, 4>> >>, writes |-> << <<2, 0, 8>> >>,
   status |-> "skipped", root |-> 1, needed |-> 1, graph |-> << <<1, 2>> >>],
  \* launch 4: softmax, skipped: it needed 2
  [op |-> "launch", reads |-> << <<2, 0, 8>> >>, writes |-> << <<3, 0, 8>> >>,
   status |-> "skipped", root |-> 1, needed |-> 2, graph |-> << <<1, 3>> >>],
  [op |-> "read", alloc |-> 3, lo |-> 0, hi |-> 8, ok |-> FALSE, failures |-> <<1>>,
   reports |-> << [f |-> 1, origin |-> 1, path |-> <<2, 1>>, kind |-> "OutOfMemory"] >>],
  [op |-> "read", alloc |-> 4, lo |-> 0, hi |-> 4, ok |-> TRUE],
  \* launch 5: writes all of 2 (only reads are checked), fails after 4 bytes;
  \* while it runs the scope holds 1, whose bytes of 2 it took (S6: a tag of
  \* Device::hold_prior_claims, in case the body names only what it wrote)
  [op |-> "launch", reads |-> << <<4, 0, 4>> >>, writes |-> << <<2, 0, 8>> >>,
   status |-> "entered", p |-> 3, graph |-> << <<1, 3>>, <<3, 1>> >>],
  [op |-> "close", outcome |-> "fail", error |-> "Launch", written |-> << <<1, 0, 4>> >>,
   claims |-> << <<1, 1, 0, 8>>, <<2, 3, 4, 8>>, <<3, 1, 0, 8>> >>],
  [op |-> "read", alloc |-> 2, lo |-> 0, hi |-> 4, ok |-> TRUE],
  [op |-> "read", alloc |-> 2, lo |-> 2, hi |-> 6, ok |-> FALSE, failures |-> <<3>>,
   reports |-> << [f |-> 3, origin |-> 2, path |-> << >>, kind |-> "Launch"] >>],
  \* launch 6: a host write repairs 1
  [op |-> "launch", reads |-> << >>, writes |-> << <<1, 0, 8>> >>,
   status |-> "entered", p |-> 4],
  [op |-> "close", outcome |-> "ok", graph |-> << <<1, 1>>, <<3, 1>> >>],
  [op |-> "read", alloc |-> 3, lo |-> 0, hi |-> 8, ok |-> FALSE, failures |-> <<1>>,
   reports |-> << [f |-> 1, origin |-> 1, path |-> <<2, 1>>] >>],
  \* launch 7: softmax again, reading only the good half of 2: repairs 3;
  \* 1's last bytes are taken, and only the scope's hold keeps it till the
  \* close (S6)
  [op |-> "launch", reads |-> << <<2, 0, 4>> >>, writes |-> << <<3, 0, 8>> >>,
   status |-> "entered", p |-> 5, graph |-> << <<1, 1>>, <<3, 1>>, <<5, 1>> >>],
  [op |-> "close", outcome |-> "ok", graph |-> << <<3, 1>> >>],
  \* launch 8: a body that throws; its write set stays torn down
  [op |-> "launch", reads |-> << >>, writes |-> << <<4, 0, 2>> >>,
   status |-> "entered", p |-> 6],
  [op |-> "close", outcome |-> "throw", graph |-> << <<3, 1>>, <<6, 1>> >>],
  [op |-> "read", alloc |-> 4, lo |-> 0, hi |-> 4, ok |-> FALSE, failures |-> <<6>>,
   reports |-> << [f |-> 6, origin |-> 4, path |-> << >>, kind |-> "TornDown"] >>],
  [op |-> "drop", alloc |-> 2, graph |-> << <<6, 1>> >>],
  \* refused: 2 no longer exists; no launch number is used
  [op |-> "launch", reads |-> << <<2, 0, 1>> >>, writes |-> << >>, status |-> "refused"],
  \* launch 9: reads clean bytes, writes nothing: nothing minted
  [op |-> "launch", reads |-> << <<4, 2, 4>> >>, writes |-> << >>, status |-> "entered"],
  [op |-> "close", outcome |-> "ok", graph |-> << <<6, 1>> >>],
  \* launch 10: in place on 4, which is stale: checked, skipped, tainted
  [op |-> "launch", reads |-> << <<4, 0, 4>> >>, writes |-> << <<4, 0, 4>> >>,
   status |-> "skipped", root |-> 6, needed |-> 4,
   claims |-> << <<4, 6, 0, 4>> >>, graph |-> << <<6, 1>> >>],
  [op |-> "read", alloc |-> 4, lo |-> 2, hi |-> 4, ok |-> FALSE, failures |-> <<6>>,
   reports |-> << [f |-> 6, origin |-> 4, path |-> <<4>>] >>],
  [op |-> "drop", alloc |-> 4, graph |-> << >>],
  [op |-> "drop", alloc |-> 1],
  [op |-> "drop", alloc |-> 3, claims |-> << >>, graph |-> << >>]
>>
=============================================================================
