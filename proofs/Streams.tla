------------------------------- MODULE Streams -------------------------------
(***************************************************************************)
(* Streams (issue 11, proposed rules O1-O4 in DESIGN terms): the Device's  *)
(* ordering of work on several streams at byte grain, detect mode, and     *)
(* stream-ordered reuse of memory with pins.                               *)
(*                                                                         *)
(* What it models                                                          *)
(*   queue[s]      stream s's queue on the device: launches, and the event *)
(*                 waits the Device inserted before them.  Exec runs the   *)
(*                 head of any queue, in any interleaving the waits allow  *)
(*                 (a wait on <<t, q>> passes once t ran its q-th launch)  *)
(*                 -- what DeferredHostBackend does with a random seed.    *)
(*   issued, done  per stream: launches queued (the host's seq) and run    *)
(*   known         per stream: the prefix the host learned completed       *)
(*                 (event query, Poll; a finish at OutOfMemory: ToStorage) *)
(*   vc            per stream, the vector clock of HappensBefore: for each *)
(*                 other stream the newest seq known to run before this    *)
(*                 stream's next work (joined through waits, O2)           *)
(*   writers, readers                                                      *)
(*                 per byte, HappensBefore's record: the last writer (in   *)
(*                 detect mode every writer it raced with too) and the     *)
(*                 readers since (ordering mode: newest per stream; detect *)
(*                 mode: every reader not known complete)                  *)
(*   mem           the memory: one allocation at a time covers all of it   *)
(*                 (gen, home stream, pins); "live", "dropped" (the user's *)
(*                 last handle went, pins still held), "lane" (free in its *)
(*                 home stream's lane), "storage"                          *)
(*   reports, raceTaint                                                    *)
(*                 detect mode: the Race failures reported (earlier and    *)
(*                 later launch, byte, kind) and the launches whose        *)
(*                 outputs they taint                                      *)
(* and ghosts the Device never reads:                                      *)
(*   L[j]          launch j in host order: stream, seq, generation of the  *)
(*                 memory it bound, reads, writes, the sources it waited   *)
(*                 on, the streams it needed to wait on, and `before`: the *)
(*                 launches guaranteed to run before it                    *)
(*   pre[s]        the launches guaranteed to run before s's next work by  *)
(*                 stream order and waits, transitively -- as SETS of      *)
(*                 launches, independent of the clock representation       *)
(*                                                                         *)
(* Two accesses CONFLICT when they touch the same byte of memory, at least *)
(* one writes it, or they belong to different allocations of that memory   *)
(* (reuse: no use of the new allocation may overlap any use of the old     *)
(* one, whatever bytes it touched, O3).  The properties, by rule:                                    *)
(*   O1_HostOrder           (step, ordering mode) when a launch runs,      *)
(*                          every earlier-issued launch conflicting with   *)
(*                          it has already run -- in every interleaving    *)
(*   O2_WaitsOncePerSource  a launch waits at most once per stream         *)
(*   O2_WaitsOnlyWhenNeeded it waits on stream t only if some earlier      *)
(*                          conflicting launch on t was not yet ordered    *)
(*                          before it by waits (transitively) or learned   *)
(*                          completion                                     *)
(*   O3_ReuseAfterUse       (step) memory is handed to a new allocation on *)
(*                          stream s only once every launch on another     *)
(*                          stream that used it has run                    *)
(*   O3_HomeReusesAtOnce    memory free in its home stream's lane can be   *)
(*                          handed to that stream's next allocation at     *)
(*                          once (nothing to wait for)                     *)
(*   O3_DetectReusesCompletedMemory  (step, detect mode) memory goes to a  *)
(*                          new allocation only once every launch that     *)
(*                          used it ran: every use is pinned, so no race   *)
(*                          ever crosses allocations (NoCrossAllocationRace *)
(*                          holds there)                                   *)
(*   O4_EveryRaceReported   (detect mode) every access with an unordered   *)
(*                          conflicting earlier access is reported, per    *)
(*                          kind (read-after-write, write-after-read,      *)
(*                          write-after-write), naming such an access      *)
(*   O4_NoFalseRace         every report is such a pair, of its kind       *)
(*   O4_RaceTaints          read-after-write and write-after-write taint   *)
(*                          the later launch's outputs, write-after-read   *)
(*                          reaches the earlier reader as a late failure   *)
(*   O4_ReorderReported     (step, detect mode) a launch that runs before  *)
(*                          an earlier conflicting one was reported        *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   Byte offsets inside allocations (one allocation covers the memory,    *)
(*   bytes 1..NumBytes), several allocations at once, the taint itself     *)
(*   (Scopes.tla: a Race is a failure like any other; here only which      *)
(*   launches it taints), the records' lazy creation (the C++ makes an     *)
(*   allocation's record at its first cross-stream access, "as if the home *)
(*   stream wrote every byte at its tail then"; here, as in detect mode,   *)
(*   from creation: it only adds waits), record pruning, host copies (a    *)
(*   finish of one stream: like a Poll that learns everything), stream     *)
(*   creation and destruction, threads (O5: every call is one atomic step  *)
(*   here), storage failure.  ToStorage (a lane's memory going back to     *)
(*   storage) happens only with every queue drained and learned: the       *)
(*   Device's finish_all() before its OutOfMemory retry; a storage that    *)
(*   frees memory with work still queued must itself synchronise          *)
(*   (cudaFree does) -- not modelled.                                      *)
(*                                                                         *)
(* Bounds (a launch reads at most one byte and writes at most one):       *)
(*   Streams.cfg        ordering, 2 streams, 1 byte, 3 launches, 1 alloc   *)
(*   StreamsBytes.cfg   ordering, 2 streams, 2 bytes, 2 launches, 1 alloc  *)
(*   StreamsChain.cfg   ordering, 3 streams, 1 byte, 3 launches (launch j  *)
(*                      on stream j), 1 allocation                         *)
(*   StreamsReuse.cfg   ordering, 2 streams, 1 byte, 2 launches, 3 allocs  *)
(*   StreamsDetect.cfg  detect, 2 streams, 1 byte, 3 launches, 1 alloc     *)
(*   StreamsDetectReuse.cfg  detect, 2 streams, 1 byte, 2 launches,        *)
(*                      2 allocations                                      *)
(* (2 streams, 2 bytes, 3 launches, 2 allocations in one config took      *)
(* 1 470 061 states even with these bindings, and with any read and write  *)
(* sets it passed a million and was cut; the split keeps each run under    *)
(* half a minute of CPU.)                                                  *)
(*                                                                         *)
(* Mutations (proofs/mutants/Streams_<name>.cfg):                          *)
(*   raw_skipped         a read does not wait for the last writer on       *)
(*                       another stream                                    *)
(*   war_not_waited      a write does not wait for readers on another      *)
(*                       stream                                            *)
(*   reuse_before_pin    dropping an allocation frees its memory to the    *)
(*                       lane although another stream's work holds a pin   *)
(*   other_lane_reuse    another stream takes memory from a lane at once   *)
(*   fresh_record_empty  a new allocation's record forgets the home        *)
(*                       stream's earlier use of the memory                *)
(*   wait_per_hazard     one wait per hazard, not per source stream        *)
(*   forget_wait         a wait is not recorded in the waiter's clock, so  *)
(*                       the stream's later work waits again for it        *)
(*   home_waits          the home stream's reuse waits for its queue       *)
(*   detect_misses_waw   detect mode misses write-after-write              *)
(*   detect_forgets_readers  detect mode drops the readers on a write (as  *)
(*                       ordering mode may), missing a later write-after-  *)
(*                       read                                              *)
(*   war_taints_writer   detect mode taints the writer, not the earlier    *)
(*                       reader, for a write-after-read                    *)
(*   ignores_completion  completion the host learned orders nothing: in    *)
(*                       detect mode, races reported with finished work    *)
(*   detect_pins_foreign_only  detect mode pins only another stream's use  *)
(*                       (as ordering mode): the home stream reuses memory *)
(*                       a pending launch still reads, and another         *)
(*                       stream's write of the new allocation races with   *)
(*                       that read unreported (stream_fuzzer found it)     *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS NumStreams,   \* streams 1..NumStreams (1: the default stream)
          NumBytes,     \* bytes 1..NumBytes of the memory
          MaxLaunches,  \* launches over a behaviour
          MaxAllocs,    \* allocations (generations of the memory)
          Mode,         \* "wait" (StreamOrdering::Wait) or "detect"
          Placement,    \* "any": a launch on any stream; "round_robin":
                        \* launch j on stream ((j - 1) % NumStreams) + 1
          Mutation

ASSUME Mode \in {"wait", "detect"}
ASSUME Placement \in {"any", "round_robin"}

Streams == 1..NumStreams
Bytes   == 1..NumBytes
Ordering == Mode = "wait"
Detect   == Mode = "detect"
Kinds == {"RAW", "WAR", "WAW"}

VARIABLES queue, issued, done, known, vc, writers, readers, mem,
          reports, raceTaint, L, pre

vars == <<queue, issued, done, known, vc, writers, readers, mem,
          reports, raceTaint, L, pre>>

\* A point: launch `id`, the `q`-th on stream `s`.
Point(s, q, id) == [s |-> s, q |-> q, id |-> id]

Init ==
    /\ queue = [s \in Streams |-> <<>>]
    /\ issued = [s \in Streams |-> 0]
    /\ done = [s \in Streams |-> 0]
    /\ known = [s \in Streams |-> 0]
    /\ vc = [s \in Streams |-> [t \in Streams |-> 0]]
    /\ writers = [b \in Bytes |-> {}]
    /\ readers = [b \in Bytes |-> {}]
    /\ mem = [state |-> "storage", gen |-> 0, home |-> 1, pins |-> {}]
    /\ reports = {}
    /\ raceTaint = {}
    /\ L = <<>>
    /\ pre = [s \in Streams |-> {}]

Ids == 1..Len(L)
Ran(i) == L[i].q <= done[L[i].s]
Learned(i) == L[i].q <= known[L[i].s]
Acc(i) == L[i].R \cup L[i].W

\* Launch i and an access (gen, R, W) conflict on byte b.
\* Another allocation's use of the memory conflicts with every byte of the
\* new one: the Device forgot which bytes it touched when it ended, and
\* the new allocation's record names the home stream's tail as the writer
\* of all of them (HappensBefore::created).
ConflictOn(i, gen, R, W, b) ==
    /\ b \in R \cup W
    /\ \/ L[i].gen # gen
       \/ b \in Acc(i) /\ (b \in L[i].W \/ b \in W)
Conflict(i, j) == \E b \in Bytes : ConflictOn(i, L[j].gen, L[j].R, L[j].W, b)

\* The kinds of conflict of a later access (gen, R, W) with launch i on b:
\* another allocation's use of the memory counts as a write (its creation
\* overwrites what the old one may still read), and a write of the new
\* allocation over a byte the old one's launch read is a write after read:
\* that reader is the one whose outputs may be computed from the new bytes.
KindsOn(i, gen, R, W, b) ==
    IF ~ConflictOn(i, gen, R, W, b) THEN {}
    ELSE LET iw == b \in L[i].W \/ L[i].gen # gen
         IN  (IF iw /\ b \in R THEN {"RAW"} ELSE {})
             \cup (IF iw /\ b \in W THEN {"WAW"} ELSE {})
             \cup (IF b \in L[i].R /\ b \in W THEN {"WAR"} ELSE {})

\* HappensBefore::ordered_before: point p runs before stream s's next work.
Ordered(p, s) ==
    \/ p.s = s
    \/ p.q <= vc[s][p.s]
    \/ p.q <= known[p.s] /\ Mutation # "ignores_completion"

\* HappensBefore::plan: the earlier accesses not ordered before work on s.
Hazards(s, R, W) ==
    LET raw == UNION {{[e |-> w, k |-> "RAW", b |-> x] : w \in writers[x]} : x \in R}
        waw == UNION {{[e |-> w, k |-> "WAW", b |-> x] : w \in writers[x]} : x \in W}
        war == UNION {{[e |-> r, k |-> "WAR", b |-> x] : r \in readers[x]} : x \in W}
        all == (IF Mutation = "raw_skipped" THEN {} ELSE raw)
               \cup (IF Mutation = "detect_misses_waw" /\ Detect THEN {} ELSE waw)
               \cup (IF Mutation = "war_not_waited" THEN {} ELSE war)
    IN  {h \in all : ~Ordered(h.e, s)}

Max(a, b) == IF a >= b THEN a ELSE b
StreamSeq(set) == SelectSeq([t \in Streams |-> t], LAMBDA t : t \in set)
Range(seq) == {seq[i] : i \in DOMAIN seq}

\* Ordering mode: the source streams waited on, in stream order; one wait
\* each (O2), or one per (stream, byte) hazard under wait_per_hazard.
WaitSources(hz) ==
    LET srcs == {h.e.s : h \in hz}
    IN  IF Mutation = "wait_per_hazard"
        THEN LET pairs == [k \in 1..(NumStreams * NumBytes) |->
                              <<((k - 1) \div NumBytes) + 1, ((k - 1) % NumBytes) + 1>>]
                 hit == SelectSeq(pairs, LAMBDA p : \E h \in hz : h.e.s = p[1] /\ h.b = p[2])
             IN  [i \in DOMAIN hit |-> hit[i][1]]
        ELSE StreamSeq(srcs)

IdsOn(t) == {i \in Ids : L[i].s = t}
LastOn(t) == CHOOSE i \in Ids : L[i].s = t /\ L[i].q = issued[t]

Launch(s, R, W) ==
    /\ mem.state = "live"
    /\ Len(L) < MaxLaunches
    /\ R \cup W # {}
    /\ LET j     == Len(L) + 1
           p     == Point(s, issued[s] + 1, j)
           hz    == Hazards(s, R, W)
           waits == IF Ordering THEN WaitSources(hz) ELSE <<>>
           srcs  == Range(waits)
           \* What was ordered before s's next work before these waits.
           known0 == pre[s] \cup {i \in Ids : Learned(i)}
           need  == {L[i].s : i \in {i \in Ids : L[i].s # s /\ i \notin known0
                                               /\ \E b \in Bytes : ConflictOn(i, mem.gen, R, W, b)}}
           before == known0 \cup UNION {IdsOn(t) \cup pre[t] : t \in srcs}
           newvc == [u \in Streams |->
                       LET m == {vc[t][u] : t \in srcs}
                           \* every source's own clock (transitive order)
                           joined == IF m = {} THEN 0
                                     ELSE CHOOSE x \in m : \A y \in m : x >= y
                           \* the source's own tail
                           tail == IF u \in srcs THEN issued[u] ELSE 0
                       IN  IF Mutation = "forget_wait" THEN vc[s][u]
                           ELSE Max(vc[s][u], Max(joined, tail))]
           waitItems == [i \in DOMAIN waits |->
                           [kind |-> "wait", t |-> waits[i], q |-> issued[waits[i]]]]
           \* Ordering mode: a write becomes the byte's only writer and
           \* clears its readers; a read replaces this stream's reader.
           \* Detect mode: a write keeps every writer it was not ordered
           \* after; readers stay until known complete.
           live(x) == x.q > known[x.s]
           newW == [b \in Bytes |->
                      IF b \notin W THEN writers[b]
                      ELSE IF Ordering THEN {p}
                      ELSE {w \in writers[b] : ~Ordered(w, s)} \cup {p}]
           newR == [b \in Bytes |->
                      CASE b \notin R \cup W -> readers[b]
                        [] Ordering /\ b \in W -> {}
                        [] Ordering -> {r \in readers[b] : r.s # s} \cup {p}
                        [] OTHER ->
                             (IF b \in W /\ Mutation = "detect_forgets_readers" THEN {}
                              ELSE {r \in readers[b] : live(r)})
                             \cup (IF b \in R THEN {p} ELSE {})]
           newReports == IF Detect
                         THEN {[earlier |-> h.e.id, later |-> j, byte |-> h.b, kind |-> h.k] : h \in hz}
                         ELSE {}
           tainted == IF Detect
                      THEN {IF h.k = "WAR" /\ Mutation # "war_taints_writer" THEN h.e.id ELSE j
                              : h \in hz}
                      ELSE {}
       IN  /\ queue' = [queue EXCEPT ![s] = @ \o waitItems \o << [kind |-> "launch", id |-> j] >>]
           /\ issued' = [issued EXCEPT ![s] = @ + 1]
           /\ vc' = [vc EXCEPT ![s] = newvc]
           /\ writers' = newW
           /\ readers' = newR
           /\ reports' = reports \cup newReports
           /\ raceTaint' = raceTaint \cup tainted
           \* O3: a pin for another stream's use; in detect mode for every
           \* use (no wait orders another stream's write of the memory's next
           \* allocation after this one's pending read).
           /\ mem' = IF s # mem.home \/ (Detect /\ Mutation # "detect_pins_foreign_only")
                     THEN [mem EXCEPT !.pins = @ \cup {[s |-> s, q |-> p.q]}]
                     ELSE mem
           /\ L' = Append(L, [s |-> s, q |-> p.q, gen |-> mem.gen, R |-> R, W |-> W,
                              waits |-> waits, need |-> need, before |-> before])
           /\ pre' = [pre EXCEPT ![s] = before \cup {j}]
    /\ UNCHANGED <<done, known>>

\* The device runs stream s's next launch: the waits queued before it have
\* all passed (a wait passing is not observable on its own, so it is one
\* step with the launch after it).
Exec(s) ==
    /\ queue[s] # <<>>
    /\ LET n == CHOOSE n \in DOMAIN queue[s] : queue[s][n].kind = "launch"
                                              /\ \A m \in 1..(n - 1) : queue[s][m].kind = "wait"
       IN  /\ \A m \in 1..(n - 1) : done[queue[s][m].t] >= queue[s][m].q
           /\ queue' = [queue EXCEPT ![s] = SubSeq(@, n + 1, Len(@))]
    /\ done' = [done EXCEPT ![s] = @ + 1]
    /\ UNCHANGED <<issued, known, vc, writers, readers, mem, reports, raceTaint, L, pre>>

\* The host learns (event query) that s ran its work so far; pins of that
\* work drop; a dropped allocation with no pin left ends: its memory goes
\* to its home stream's lane.  (Learning all that ran loses no behaviour:
\* Poll can happen after every single Exec, so every prefix is learned in
\* some behaviour.)
Poll(s) ==
    /\ known[s] < done[s]
    /\ known' = [known EXCEPT ![s] = done[s]]
    /\ LET pins == {x \in mem.pins : ~(x.s = s /\ x.q <= done[s])}
       IN  mem' = IF mem.state = "dropped" /\ pins = {}
                  THEN [mem EXCEPT !.pins = pins, !.state = "lane"]
                  ELSE [mem EXCEPT !.pins = pins]
    /\ UNCHANGED <<queue, issued, done, vc, writers, readers, reports, raceTaint, L, pre>>

\* create_buffer(size, s): from storage, or at once from s's own lane (O3).
Create(s) ==
    /\ mem.gen < MaxAllocs
    /\ \/ mem.state = "storage"
       \/ /\ mem.state = "lane"
          /\ mem.home = s \/ Mutation = "other_lane_reuse"
          /\ Mutation = "home_waits" => queue[s] = <<>>
    /\ mem' = [state |-> "live", gen |-> mem.gen + 1, home |-> s, pins |-> {}]
    \* The record starts with the memory's earlier use: the home stream's
    \* tail as the writer of every byte (HappensBefore::created).
    /\ writers' = [b \in Bytes |->
                     IF issued[s] = 0 \/ Mutation = "fresh_record_empty" THEN {}
                     ELSE {Point(s, issued[s], LastOn(s))}]
    /\ readers' = [b \in Bytes |-> {}]
    /\ UNCHANGED <<queue, issued, done, known, vc, reports, raceTaint, L, pre>>

\* The user drops the last handle: the allocation ends now if no other
\* stream holds a pin, else when the last pin drops (Poll).  Its record goes.
Drop ==
    /\ mem.state = "live"
    /\ mem' = [mem EXCEPT !.state = IF mem.pins = {} \/ Mutation = "reuse_before_pin"
                                    THEN "lane" ELSE "dropped"]
    /\ writers' = [b \in Bytes |-> {}]
    /\ readers' = [b \in Bytes |-> {}]
    /\ UNCHANGED <<queue, issued, done, known, vc, reports, raceTaint, L, pre>>

\* The lane's memory goes back to storage: the Device's last step before
\* OutOfMemory (finish_all, then the pool sweeps) -- every queue drained
\* and learned.
ToStorage ==
    /\ mem.state = "lane"
    /\ \A s \in Streams : queue[s] = <<>>
    /\ mem' = [mem EXCEPT !.state = "storage"]
    /\ known' = done
    /\ UNCHANGED <<queue, issued, done, vc, writers, readers, reports, raceTaint, L, pre>>

\* In Next a launch reads at most one byte and writes at most one (the same
\* or another): every conflict kind, across bytes and within one, at a
\* fraction of the states of every subset.
Bindings == {{}} \cup {{b} : b \in Bytes}

Next ==
    \/ \E s \in Streams, R, W \in Bindings :
          /\ Placement = "round_robin" => s = (Len(L) % NumStreams) + 1
          /\ Launch(s, R, W)
    \/ \E s \in Streams : Exec(s) \/ Create(s)
    \/ \E s \in Streams : Poll(s)
    \/ Drop
    \/ ToStorage

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)
TypeOK ==
    /\ issued \in [Streams -> 0..MaxLaunches]
    /\ \A s \in Streams : known[s] <= done[s] /\ done[s] <= issued[s]
    /\ mem.state \in {"live", "dropped", "lane", "storage"}
    /\ Len(L) <= MaxLaunches

\* Launch j starts running in this step.
Starts(j) == ~Ran(j) /\ L[j].q <= done'[L[j].s]

\* O1: in ordering mode, work runs in host order wherever it conflicts.
O1_HostOrder ==
    [][Ordering => \A j \in Ids : Starts(j) =>
                     \A i \in 1..(j - 1) : Conflict(i, j) => Ran(i)]_vars

\* O2: at most one wait per source stream, and only where needed.
O2_WaitsOncePerSource ==
    \A j \in Ids : Len(L[j].waits) = Cardinality(Range(L[j].waits))
O2_WaitsOnlyWhenNeeded ==
    \A j \in Ids : Range(L[j].waits) \subseteq L[j].need

\* O3: memory goes to a new allocation on s only once every launch on
\* another stream that used it has run.
O3_ReuseAfterUse ==
    [][\A s \in Streams : Create(s) => \A i \in Ids : L[i].s # s => Ran(i)]_vars
\* O3 in detect mode: every use pinned, memory is reused only once all
\* of them ran.
O3_DetectReusesCompletedMemory ==
    [][Detect => \A s \in Streams : Create(s) => \A i \in Ids : Ran(i)]_vars
\* O3: the home stream reuses its lane's memory at once.
O3_HomeReusesAtOnce ==
    (mem.state = "lane" /\ mem.gen < MaxAllocs) => ENABLED Create(mem.home)

\* O4 (detect mode).  Unordered: not before j by stream order, waits or
\* completion learned when j was issued.  (With no waits inserted, the
\* learned prefixes are closed under `before`: nothing is missed.)
Unordered(i, j) == i < j /\ i \notin L[j].before
O4_EveryRaceReported ==
    Detect =>
      \A j \in Ids, b \in Bytes, k \in Kinds :
        (\E i \in Ids : Unordered(i, j) /\ k \in KindsOn(i, L[j].gen, L[j].R, L[j].W, b))
          => \E r \in reports : r.later = j /\ r.byte = b /\ r.kind = k
O4_NoFalseRace ==
    \A r \in reports :
      /\ Unordered(r.earlier, r.later)
      /\ r.kind \in KindsOn(r.earlier, L[r.later].gen, L[r.later].R, L[r.later].W, r.byte)
O4_RaceTaints ==
    \A r \in reports :
      IF r.kind = "WAR" THEN r.earlier \in raceTaint ELSE r.later \in raceTaint
O4_ReorderReported ==
    [][Detect => \A j \in Ids : Starts(j) =>
                   \A i \in 1..(j - 1) : Conflict(i, j) /\ ~Ran(i) =>
                     \E r \in reports : r.later = j /\ r.earlier \in Ids]_vars

(***************************************************************************)
(* Reachability witnesses (proofs/reach/Streams_*.cfg): each says          *)
(* something never happens; its config must violate it.                    *)
(***************************************************************************)
\* No launch ever waits.
NoWait == \A j \in Ids : L[j].waits = <<>>
\* No launch is ever held back by a wait at the head of its queue while
\* runnable work elsewhere has not run.
NoBlockedWait == \A s \in Streams :
    queue[s] # <<>> /\ Head(queue[s]).kind = "wait" => done[Head(queue[s]).t] >= Head(queue[s]).q
\* Work conflicting with earlier work on another stream is ordered after it
\* only by a wait on that very stream (never transitively, through a wait
\* on a third stream that had waited for it) or by learned completion.
NoTransitiveOrder ==
    \A j \in Ids : \A i \in Ids :
      (i < j /\ L[i].s # L[j].s /\ Conflict(i, j) /\ i \in L[j].before
        /\ L[i].q > known[L[i].s]) =>
        \E k \in Ids : k <= j /\ L[k].s = L[j].s /\ L[i].s \in Range(L[k].waits)
\* An allocation is never dropped while a pin holds it.
NoPinnedDrop == mem.state # "dropped"
\* The home stream never reuses memory while its own earlier work on it
\* has not run.
NoHomeReuseWhilePending ==
    [][\A s \in Streams : (Create(s) /\ mem.state = "lane") => queue[s] = <<>>]_vars
\* Ordering mode reorders nothing: no launch runs before an earlier one.
NoOvertake == [][\A j \in Ids : Starts(j) => \A i \in 1..(j - 1) : Ran(i)]_vars
\* No memory ever goes to another stream's allocation.
NoOtherStreamReuse ==
    [][\A s \in Streams : (Create(s) /\ mem.gen > 0) => s = mem.home]_vars
\* No race of each kind is ever reported.
NoRace(k) == \A r \in reports : r.kind # k
NoRAW == NoRace("RAW")
NoWAR == NoRace("WAR")
NoWAW == NoRace("WAW")
\* No race is ever reported between two allocations of the memory.
NoCrossAllocationRace == \A r \in reports : L[r.earlier].gen = L[r.later].gen
=============================================================================
