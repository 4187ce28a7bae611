--------------------------- MODULE taint_seed ---------------------------
\* expect: accepted
\* Hand-written: the seed's Taint tests as one run over two allocations --
\* a partial write releases only its bytes, disjoint claims keep their
\* failures, a new failure takes the bytes it claims, re-tainting counts once,
\* adjacent claims fuse, clear releases every claim, an empty range claims
\* nothing. Every event records the claims and the graph it left.
TraceAllocs == {1, 2}
TraceOffsets == 100
TraceMaxId == 3
Trace == <<
  [op |-> "insert", f |-> 1, graph |-> << <<1, 0>> >>],
  [op |-> "taint", alloc |-> 1, lo |-> 0, hi |-> 100, f |-> 1,
   claims |-> << <<1, 0, 100>> >>, graph |-> << <<1, 1>> >>],
  [op |-> "written", alloc |-> 1, lo |-> 40, hi |-> 60,
   claims |-> << <<1, 0, 40>>, <<1, 60, 100>> >>, graph |-> << <<1, 1>> >>],
  [op |-> "query", alloc |-> 1, lo |-> 0, hi |-> 40, fs |-> <<1>>, one |-> 1],
  [op |-> "query", alloc |-> 1, lo |-> 40, hi |-> 60, fs |-> <<>>, one |-> 0],
  [op |-> "query", alloc |-> 1, lo |-> 60, hi |-> 100, fs |-> <<1>>, one |-> 1],
  [op |-> "written", alloc |-> 1, lo |-> 0, hi |-> 40,
   claims |-> << <<1, 60, 100>> >>, graph |-> << <<1, 1>> >>],
  [op |-> "written", alloc |-> 1, lo |-> 60, hi |-> 100,
   claims |-> << >>, graph |-> << >>],
  [op |-> "insert", f |-> 2],
  [op |-> "insert", f |-> 3],
  [op |-> "taint", alloc |-> 1, lo |-> 0, hi |-> 50, f |-> 2],
  [op |-> "taint", alloc |-> 1, lo |-> 50, hi |-> 100, f |-> 3,
   claims |-> << <<2, 0, 50>>, <<3, 50, 100>> >>, graph |-> << <<2, 1>>, <<3, 1>> >>],
  [op |-> "query", alloc |-> 1, lo |-> 10, hi |-> 20, fs |-> <<2>>, one |-> 2],
  [op |-> "query", alloc |-> 1, lo |-> 40, hi |-> 60, fs |-> <<2, 3>>],
  [op |-> "taint", alloc |-> 2, lo |-> 10, hi |-> 20, f |-> 2,
   claims |-> << <<2, 10, 20>> >>, graph |-> << <<2, 2>>, <<3, 1>> >>],
  [op |-> "written", alloc |-> 1, lo |-> 0, hi |-> 50,
   claims |-> << <<3, 50, 100>> >>, graph |-> << <<3, 1>>, <<2, 1>> >>],
  [op |-> "taint", alloc |-> 1, lo |-> 25, hi |-> 75, f |-> 3,
   claims |-> << <<3, 25, 100>> >>],
  [op |-> "taint", alloc |-> 1, lo |-> 25, hi |-> 75, f |-> 3,
   claims |-> << <<3, 25, 100>> >>, graph |-> << <<2, 1>>, <<3, 1>> >>],
  [op |-> "taint", alloc |-> 2, lo |-> 20, hi |-> 30, f |-> 2,
   claims |-> << <<2, 10, 30>> >>],
  [op |-> "taint", alloc |-> 1, lo |-> 30, hi |-> 40, f |-> 2,
   claims |-> << <<3, 25, 30>>, <<2, 30, 40>>, <<3, 40, 100>> >>,
   graph |-> << <<2, 2>>, <<3, 1>> >>],
  [op |-> "clear", alloc |-> 1, claims |-> << >>, graph |-> << <<2, 1>> >>],
  [op |-> "taint", alloc |-> 2, lo |-> 5, hi |-> 5, f |-> 2,
   claims |-> << <<2, 10, 30>> >>],
  [op |-> "query", alloc |-> 2, lo |-> 15, hi |-> 15, fs |-> << >>, one |-> 0],
  [op |-> "clear", alloc |-> 2, claims |-> << >>, graph |-> << >>]
>>
=============================================================================
