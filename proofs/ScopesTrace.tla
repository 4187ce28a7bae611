----------------------------- MODULE ScopesTrace -----------------------------
(***************************************************************************)
(* Trace validation for the device: is a sequence of buffer creations and  *)
(* drops, launches (host writes included), their outcomes and reads, with  *)
(* what the C++ Device observed, a behaviour of Scopes.tla?  The format is *)
(* in proofs/TRACES.md; proofs/check runs every proofs/traces/scopes_*.tla *)
(* through this spec.                                                      *)
(*                                                                         *)
(* The spec is Scopes.tla itself (its Launch, Succeed, Fail, PartialFail,  *)
(* Throw, Report), with the allocation sizes and the launch bound written  *)
(* as literals in the trace module (TraceSizes, TraceLaunches: computing   *)
(* them from a long trace costs TLC minutes), plus what Scopes leaves to   *)
(* Lifecycle: a buffer is                                                  *)
(* created fresh (its bytes count as written, D1) and dropped (its claims  *)
(* are cleared, P1).  Every state of the trace is also checked against     *)
(* Scopes' invariants (D1, D2, S4, G8, R1-R3): the oracle runs alongside   *)
(* the trace, so an accepted trace is one whose every read, skip and       *)
(* report the design's rules agree with.                                   *)
(*                                                                         *)
(* Events (fields marked ? are optional observations):                     *)
(*   create   alloc, size: a new buffer (ids fresh, never reused)          *)
(*   drop     alloc: its last handle went and the pool discovered it       *)
(*   launch   reads, writes (sequences of <<alloc, lo, hi>>), status:      *)
(*              "refused"  a bad binding (P3): nothing changes             *)
(*              "skipped"  root, needed?: S1 skip onto root; S4: no mint   *)
(*              "entered"  p?: the provisional id (absent or 0 when the    *)
(*                         write set is empty: nothing is minted)          *)
(*   close    outcome "ok" | "ok_only" | "fail" | "throw" (S1-S3, S6); a  *)
(*            failure names its error kind (error, G4) and maybe written?: *)
(*            <<i, lo, hi>> ranges of write binding i (S2); "ok_only" is a *)
(*            success naming the only ranges it wrote, written? (S6)       *)
(*            Follows every entered launch; a no-op for an empty write set *)
(*   read     alloc, lo, hi, ok (D1), failures? (G9, one per distinct      *)
(*            failure), reports? (G8: [f, origin?, path?, kind?] with path *)
(*            the `needed` allocations of the skip records, newest first,  *)
(*            and kind the root error's kind, G4; origin and path are left *)
(*            out when G7's cap may have cut the walk short)               *)
(*   any event: graph? = every live node with its tags; claims? = every    *)
(*            claim of every buffer as <<alloc, f, lo, hi>>.               *)
(***************************************************************************)
EXTENDS Scopes, TLC

CONSTANT TraceLog

Has(e, field) == field \in DOMAIN e
TEvents == {TraceLog[j] : j \in DOMAIN TraceLog}

VARIABLES i, alive, created,
          closing   \* an entered launch awaits its close event
tvars == <<vars, i, alive, created, closing>>

TInit ==
    /\ Init
    /\ i = 0
    /\ alive = {}
    /\ created = {}
    /\ closing = FALSE

ValidBinding(w) == w[1] \in alive /\ w[2] <= w[3] /\ w[3] <= Sizes[w[1]]

\* Observations any event may carry, against the state after it.
AllClaims(t) == UNION {{<<a, s[1], s[2], s[3]>> : s \in Segments(t[a])} : a \in Allocs}
ObservedAny(e) ==
    /\ Has(e, "graph") =>
          /\ Elems(e.graph) = {<<f, tags'[f]>> : f \in nodes'}
          /\ Len(e.graph) = Cardinality(nodes')
    /\ Has(e, "claims") =>
          /\ Elems(e.claims) = AllClaims(taint')
          /\ Len(e.claims) = Cardinality(AllClaims(taint'))

Create(e) ==
    /\ e.alloc \in Allocs \ created
    /\ alive' = alive \cup {e.alloc}
    /\ created' = created \cup {e.alloc}
    /\ UNCHANGED vars

Drop(e) ==
    /\ e.alloc \in alive
    /\ LET S == ApplyRes(Engine, e.alloc, ClearOp(taint[e.alloc]))
       IN  SetEngine(S)
    /\ why' = [why EXCEPT ![e.alloc] = [b \in Offsets(e.alloc) |-> 0]]
    /\ alive' = alive \ {e.alloc}
    /\ UNCHANGED <<kind, records, nextId, launches, scope, direct, reach, ended, created>>

Last(s) == s[Len(s)]
Bindings(e) == Elems(e.reads) \cup Elems(e.writes)

TLaunch(e) ==
    IF e.status = "refused"
    THEN /\ \E w \in Bindings(e) : ~ValidBinding(w)                      \* P3
         /\ UNCHANGED <<vars, alive, created>>
    ELSE /\ \A j \in DOMAIN e.reads : ValidBinding(e.reads[j])
         /\ \A j \in DOMAIN e.writes : ValidBinding(e.writes[j])
         /\ Launch(e.reads, e.writes)
         /\ CASE e.status = "skipped" ->
                   /\ scope'.k = 0
                   /\ e.root \in Ids
                   /\ Len(records'[e.root]) = Len(records[e.root]) + 1
                   /\ Has(e, "needed") => Last(records'[e.root]).needed = e.needed
              [] e.status = "entered" ->
                   /\ records' = records
                   /\ Has(e, "p") /\ e.p # 0 => scope'.p = e.p
                   /\ (~Has(e, "p") \/ e.p = 0) => e.writes = <<>>
              [] OTHER -> FALSE
         /\ UNCHANGED <<alive, created>>

TClose(e) ==
    /\ IF scope.k = 0
       THEN UNCHANGED vars          \* the launch had an empty write set
       ELSE CASE e.outcome = "ok" -> Succeed
              [] e.outcome = "ok_only" ->
                   SucceedOnly(IF Has(e, "written") THEN e.written ELSE <<>>)
              [] e.outcome = "fail" ->
                   IF Has(e, "written") THEN PartialFail(e.written, e.error) ELSE Fail(e.error)
              [] e.outcome = "throw" -> Throw
              [] OTHER -> FALSE
    /\ UNCHANGED <<alive, created>>

TRead(e) ==
    /\ ValidBinding(<<e.alloc, e.lo, e.hi>>)
    /\ LET fs == FailuresIn(taint[e.alloc], e.lo, e.hi)
       IN  /\ e.ok = (fs = {})                                            \* D1
           /\ Has(e, "failures") =>
                 Elems(e.failures) = fs /\ Len(e.failures) = Cardinality(fs)   \* G9
           /\ Has(e, "reports") =>
                 /\ {rp.f : rp \in Elems(e.reports)} = fs
                 /\ \A rp \in Elems(e.reports) :                           \* G8
                      LET w == WalkFrom(records[rp.f], e.alloc, Len(records[rp.f]) + 1)
                      IN  /\ Has(rp, "origin") => rp.origin = w.origin
                          /\ Has(rp, "kind") => rp.kind = kind[rp.f]              \* G4
                          /\ Has(rp, "path") =>
                                rp.path = [j \in DOMAIN w.path |->
                                             (CHOOSE r \in Elems(records[rp.f]) :
                                                r.k = w.path[j]).needed]
    /\ UNCHANGED <<vars, alive, created>>

TNext ==
    /\ i < Len(TraceLog)
    /\ LET e == TraceLog[i + 1]
       IN  /\ CASE e.op = "create" -> Create(e)
                [] e.op = "drop"   -> Drop(e)
                [] e.op = "launch" -> TLaunch(e)
                [] e.op = "close"  -> TClose(e)
                [] e.op = "read"   -> TRead(e)
                [] OTHER           -> FALSE
           /\ ObservedAny(e)
           \* exactly one close follows each entered launch, and nothing else
           \* comes between them
           /\ closing = (e.op = "close")
           /\ closing' = (e.op = "launch" /\ e.status = "entered")
    /\ i' = i + 1

TSpec == TInit /\ [][TNext]_tvars

\* Accepted iff the behaviour reached the last event; otherwise says where
\* it stopped (proofs/check compares that with the trace's expect line).
TraceAccepted ==
    LET d == TLCGet("stats").diameter
    IN  IF d - 1 = Len(TraceLog) THEN TRUE
        ELSE /\ Print("trace rejected at event " \o ToString(d), TRUE)
             /\ Print(TraceLog[d], FALSE)

=============================================================================
