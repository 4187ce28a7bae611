----------------------------- MODULE Collectives -----------------------------
(***************************************************************************)
(* Taint across ranks: collectives whose ranks exchange a summary of the   *)
(* taint of what they contribute, per chunk (piece), and apply the verdict *)
(* at once or at their next synchronize.  Proposed rules C1-C5 (see        *)
(* core/include/taintpool/collective/collectives.hpp), with D1 as the      *)
(* ranks see it.                                                           *)
(*                                                                         *)
(* What it models                                                          *)
(*   taint[r][b][c]  what rank r's Device knows of chunk c of its buffer b: *)
(*                   0 (clean) or Known (some failure claims it)           *)
(*   late[r]         the chunks rank r will learn are stale at its next    *)
(*                   synchronize: written by a checked kernel that failed  *)
(*                   (a late failure), computed since from such chunks, or *)
(*                   fed stale by a collective whose verdict reached it    *)
(*                   late (C5) -- the Device attributes all of them alike  *)
(*   coll            the collective in progress: source and destination    *)
(*                   buffer, the ranks that called, each rank's summary    *)
(*                   (what it knew of its input when it called, C2) and    *)
(*                   its data (the truth of its input)                     *)
(*   verdict[r][k]   the chunks rank r marked stale for collective k (a    *)
(*                   history variable, for C3)                             *)
(* and the oracle the Devices never see:                                   *)
(*   bad[r][b][c]    TRUE iff chunk c of b on r was not computed from good *)
(*                   data: its writer failed (at once or late), or it was  *)
(*                   computed from bad data -- on this rank, or on any     *)
(*                   rank a collective mixed in.                           *)
(*                                                                         *)
(* Actions: a kernel that fails (Fail), fails late (FailLate), succeeds    *)
(* (Write), or computes chunk c of one buffer from chunk c of the other    *)
(* (Compute: skipped when its input is known stale, S1); a synchronize     *)
(* (Sync); a collective (an all-reduce: every rank's chunk c feeds every   *)
(* rank's chunk c) started (Start), then called by each rank in any order  *)
(* (Call).  A rank's call first synchronizes when its input awaits a       *)
(* verdict (C2), takes part whatever its input holds (C1), sends its       *)
(* summary; its own stale chunks are carried at once (C4); the last rank   *)
(* to call completes the collective and applies its verdict at once, the   *)
(* others learn theirs at their next synchronize (C5).  A rank that has    *)
(* called does nothing else until the collective completes (a call is one  *)
(* step of its Device; its outputs are ordered after the data).            *)
(*                                                                         *)
(* Invariants                                                              *)
(*   C3_NoStaleReportedGood  a chunk that is bad is known stale, or will   *)
(*       be at its rank's next synchronize -- and every read synchronizes  *)
(*       first, so no read ever returns a bad chunk as good (D1)           *)
(*   C3_Agreement  all ranks that applied collective k's verdict marked    *)
(*       the same chunks stale                                             *)
(*   C3_NoFalseAlarm  a chunk known stale is bad (chunk precision: the     *)
(*       summary never invents staleness)                                  *)
(*                                                                         *)
(* What it abstracts away: bytes inside a chunk (a chunk here is a piece), *)
(* failure texts, the reduction itself, the other collectives (they differ *)
(* only in which chunks feed which: an all-reduce mixes every rank into    *)
(* every rank, the strongest case), allocation lifetime, communicator      *)
(* failures (C6: unit tests), skip records.                                *)
(*                                                                         *)
(* Bounds (Collectives.cfg): 2 ranks, 2 buffers of 2 chunks, 2             *)
(* collectives, MaxSteps actions in all.                                   *)
(*                                                                         *)
(* Mutations (proofs/mutants/Collectives_*.cfg):                           *)
(*   "ignore_remote"      a rank's verdict reads only its own summary      *)
(*                        (the bug the issue describes: only the first     *)
(*                        rank can tell)                                   *)
(*   "summary_before_verdict" a rank summarizes its input without first    *)
(*                        synchronizing when it awaits a verdict (C2)      *)
(*   "early_verdict"      a rank decides from the summaries of the ranks   *)
(*                        that had called when it did, not all of them     *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS Ranks,          \* the ranks, e.g. {1, 2}
          Chunks,         \* chunks (pieces) per buffer, e.g. {1, 2}
          MaxCollectives, \* collectives over a behaviour
          MaxSteps,       \* actions over a behaviour
          Mutation        \* "none", or a seeded bug (above)

Bufs == {"a", "b"}
\* A chunk's known taint: 0 (clean) or Known. Which failure it is -- the
\* rank's own root (C4) or the collective's Remote one -- does not matter to
\* the invariants, and distinct ids would only multiply the states.
Known == 1
Other(b) == IF b = "a" THEN "b" ELSE "a"
\* verdict[r][k]: <<>> until rank r applied collective k, then <<the chunks>>.
NotYet == <<>>

VARIABLES taint, bad, late, coll, verdict, k, steps

vars == <<taint, bad, late, coll, verdict, k, steps>>

NoColl == [active |-> FALSE]

Init ==
  /\ taint = [r \in Ranks |-> [b \in Bufs |-> [c \in Chunks |-> 0]]]
  /\ bad = [r \in Ranks |-> [b \in Bufs |-> [c \in Chunks |-> FALSE]]]
  /\ late = [r \in Ranks |-> {}]
  /\ coll = NoColl
  /\ verdict = [r \in Ranks |-> [i \in 1..MaxCollectives |-> NotYet]]
  /\ k = 0
  /\ steps = 0

TypeOK ==
  /\ taint \in [Ranks -> [Bufs -> [Chunks -> Nat]]]
  /\ bad \in [Ranks -> [Bufs -> [Chunks -> BOOLEAN]]]
  /\ \A r \in Ranks : late[r] \subseteq (Bufs \X Chunks)
  /\ k \in Nat

\* A rank that has called the collective in progress waits for it.
Busy(r) == coll.active /\ r \in coll.called
Step == steps < MaxSteps /\ steps' = steps + 1

\* ---- local work on one rank --------------------------------------------

\* A kernel writing chunk c of b fails: the Device knows (S1, S2).
Fail(r, b, c) ==
  /\ ~Busy(r) /\ Step
  /\ taint' = [taint EXCEPT ![r][b][c] = Known]
  /\ bad' = [bad EXCEPT ![r][b][c] = TRUE]
  /\ late' = [late EXCEPT ![r] = @ \ {<<b, c>>}]
  /\ UNCHANGED <<coll, verdict, k>>

\* A checked kernel looks successful and is found failed at the next
\* synchronize (a late failure).
FailLate(r, b, c) ==
  /\ ~Busy(r) /\ Step
  /\ taint' = [taint EXCEPT ![r][b][c] = 0]
  /\ bad' = [bad EXCEPT ![r][b][c] = TRUE]
  /\ late' = [late EXCEPT ![r] = @ \cup {<<b, c>>}]
  /\ UNCHANGED <<coll, verdict, k>>

\* A kernel or a host write succeeds: the chunk is good (S5: repairs it).
Write(r, b, c) ==
  /\ ~Busy(r) /\ Step
  /\ taint' = [taint EXCEPT ![r][b][c] = 0]
  /\ bad' = [bad EXCEPT ![r][b][c] = FALSE]
  /\ late' = [late EXCEPT ![r] = @ \ {<<b, c>>}]
  /\ UNCHANGED <<coll, verdict, k>>

\* A kernel computes chunk c of Other(b) from chunk c of b: skipped when the
\* input is known stale (its output takes the root, S1); otherwise it runs,
\* and if the input is to be found stale late, so is its output (the
\* Device's replay at attribution).
Compute(r, b, c) ==
  LET to == Other(b) IN
  /\ ~Busy(r) /\ Step
  /\ IF taint[r][b][c] # 0
       THEN /\ taint' = [taint EXCEPT ![r][to][c] = taint[r][b][c]]
            /\ late' = [late EXCEPT ![r] = @ \ {<<to, c>>}]
       ELSE /\ taint' = [taint EXCEPT ![r][to][c] = 0]
            /\ late' = [late EXCEPT ![r] = IF <<b, c>> \in @ THEN @ \cup {<<to, c>>}
                                                              ELSE @ \ {<<to, c>>}]
  /\ bad' = [bad EXCEPT ![r][to][c] = bad[r][b][c]]
  /\ UNCHANGED <<coll, verdict, k>>

\* What synchronizing does to rank r's taint: every chunk it was to learn
\* about is known stale now.
Synced(r, t) ==
  [b \in Bufs |-> [c \in Chunks |->
     IF <<b, c>> \in late[r] THEN Known ELSE t[b][c]]]

Sync(r) ==
  /\ ~Busy(r) /\ late[r] # {} /\ Step
  /\ taint' = [taint EXCEPT ![r] = Synced(r, taint[r])]
  /\ late' = [late EXCEPT ![r] = {}]
  /\ UNCHANGED <<bad, coll, verdict, k>>

\* ---- a collective -------------------------------------------------------

\* An all-reduce reading buffer `src` and writing buffer `dst` on every rank
\* (src = dst: in place).
Start(src, dst) ==
  /\ ~coll.active /\ k < MaxCollectives /\ Step
  /\ coll' = [active |-> TRUE, src |-> src, dst |-> dst, called |-> {},
              summary |-> [r \in Ranks |-> [c \in Chunks |-> 0]],
              data |-> [r \in Ranks |-> [c \in Chunks |-> FALSE]],
              seen |-> [r \in Ranks |-> {}]]
  /\ k' = k + 1
  /\ UNCHANGED <<taint, bad, late, verdict>>

\* The chunks rank q marks stale (C3): those some rank's summary says are
\* stale -- every rank's, so all agree.
StaleFor(q, summary, seen) ==
  LET from == CASE Mutation = "ignore_remote" -> {q}
                [] Mutation = "early_verdict" -> seen[q]
                [] OTHER -> Ranks
  IN {c \in Chunks : \E s \in from : summary[s][c] # 0}

\* Rank r calls. C2: if its input awaits a verdict, it synchronizes first.
\* C1: it takes part whatever its input holds. Its summary is what it knows
\* now; its data what its input truly is.
Call(r) ==
  /\ coll.active /\ r \notin coll.called /\ Step
  /\ LET awaits == \E c \in Chunks : <<coll.src, c>> \in late[r]
         sync == awaits /\ Mutation # "summary_before_verdict"
         t == IF sync THEN Synced(r, taint[r]) ELSE taint[r]
         l == IF sync THEN {} ELSE late[r]
         called == coll.called \cup {r}
         summary == [coll.summary EXCEPT ![r] = [c \in Chunks |-> t[coll.src][c]]]
         data == [coll.data EXCEPT ![r] = [c \in Chunks |-> bad[r][coll.src][c]]]
         seen == [coll.seen EXCEPT ![r] = called]
         dst == coll.dst
         last == called = Ranks
         \* Every rank's new taint and late set for the destination, once
         \* the collective completes (the last call). A rank's own stale
         \* chunks keep its own failure (C4); chunks fed by others take the
         \* collective's failure on that rank, now for the last rank and at
         \* its next synchronize for the others (C5).
         fed(q) == StaleFor(q, summary, seen) \ {c \in Chunks : summary[q][c] # 0}
         newTaint(q, tq) ==
           [tq EXCEPT ![dst] = [c \in Chunks |->
              IF summary[q][c] # 0 THEN summary[q][c]
              ELSE IF c \in fed(q) /\ q = r THEN Known
              ELSE 0]]
         newLate(q, lq) ==
           (lq \ {<<dst, c>> : c \in Chunks})
             \cup (IF q = r THEN {} ELSE {<<dst, c>> : c \in fed(q)})
     IN
     /\ IF last
          THEN
            /\ taint' = [q \in Ranks |-> newTaint(q, IF q = r THEN t ELSE taint[q])]
            /\ late' = [q \in Ranks |-> newLate(q, IF q = r THEN l ELSE late[q])]
            /\ bad' = [q \in Ranks |-> [bad[q] EXCEPT ![dst] =
                         [c \in Chunks |-> \E s \in Ranks : data[s][c]]]]
            /\ verdict' = [q \in Ranks |-> [verdict[q] EXCEPT ![k] = <<StaleFor(q, summary, seen)>>]]
            /\ coll' = NoColl
          ELSE
            /\ taint' = [taint EXCEPT ![r] = t]
            /\ late' = [late EXCEPT ![r] = l]
            /\ bad' = bad
            /\ verdict' = verdict
            /\ coll' = [coll EXCEPT !.called = called, !.summary = summary, !.data = data,
                                    !.seen = seen]
     /\ UNCHANGED k

Next ==
  \/ \E r \in Ranks, b \in Bufs, c \in Chunks :
       Fail(r, b, c) \/ FailLate(r, b, c) \/ Write(r, b, c) \/ Compute(r, b, c)
  \/ \E r \in Ranks : Sync(r) \/ Call(r)
  \/ \E src, dst \in Bufs : Start(src, dst)

Spec == Init /\ [][Next]_vars

\* ---- invariants ----------------------------------------------------------

\* No stale byte is ever reported good: a bad chunk is known stale, or will
\* be at its rank's next synchronize, which every read makes first (D1).
C3_NoStaleReportedGood ==
  \A r \in Ranks, b \in Bufs, c \in Chunks :
    bad[r][b][c] => (taint[r][b][c] # 0 \/ <<b, c>> \in late[r])

\* All ranks agree on which output chunks of a collective are stale.
C3_Agreement ==
  \A i \in 1..MaxCollectives, r1, r2 \in Ranks :
    (verdict[r1][i] # NotYet /\ verdict[r2][i] # NotYet) => verdict[r1][i] = verdict[r2][i]

\* Chunk precision: nothing is known stale that is not bad.
C3_NoFalseAlarm ==
  \A r \in Ranks, b \in Bufs, c \in Chunks :
    (taint[r][b][c] # 0 \/ <<b, c>> \in late[r]) => bad[r][b][c]

=============================================================================
