----------------------------- MODULE TaintTrace -----------------------------
(***************************************************************************)
(* Trace validation for the taint engine: is a sequence of Taint and       *)
(* ErrorGraph calls, with the results the C++ observed, a behaviour of the *)
(* design?  The format is in proofs/TRACES.md; proofs/check runs every     *)
(* proofs/traces/taint_*.tla through this spec.                            *)
(*                                                                         *)
(* State: the claims of every allocation the trace names (TaintOps.tla:    *)
(* the same T1-T4 Taint.tla model-checks), and the graph (live ids, tag    *)
(* counts, the next id).  Each trace event is one step: the spec performs  *)
(* the operation the event names, and every result the event records must  *)
(* equal what the spec computes.  A trace is accepted iff every event      *)
(* matches (POSTCONDITION TraceAccepted: the behaviour reaches the end).   *)
(* Every state of the trace is also checked against T5 and R1-R3.          *)
(*                                                                         *)
(* What is checked per event (fields marked ? are optional observations):  *)
(*   insert   f = the next id (G1)                                         *)
(*   taint    T1 on alloc's claims; threw? iff f has no node (G2)          *)
(*   written  T2;  clear: T4;  prune f: G5;  replace f: G4 (no state)      *)
(*   query    T3: fs = failures(r) exactly; one? is in fs, or 0 iff empty  *)
(*   skipped  G7: f must be live (threw? otherwise)                        *)
(*   move     alloc -> to: the claims (and tags) move; refused (threw?)    *)
(*            if `to` still holds claims                                   *)
(*   tag f    G2 by hand (threw? iff f has no node)                        *)
(*   untag f  G3 of a hand tag (threw? iff f has no node or no tags; an    *)
(*            untag of a tag some claim holds breaks R1 and is caught)     *)
(*   any event: claims? = alloc's claims after it, as segments ascending;  *)
(*              graph? = every live node with its tags after it.           *)
(* Contract violations the engine must refuse (a dead failure, an untag    *)
(* with no tag) are events with threw |-> TRUE: the state must not change. *)
(***************************************************************************)
EXTENDS TaintOps, TLC

CONSTANT TraceLog   \* the trace: a sequence of event records (TRACES.md)

Has(e, field) == field \in DOMAIN e
Events == {TraceLog[j] : j \in DOMAIN TraceLog}

TraceAllocs == {e.alloc : e \in {x \in Events : Has(x, "alloc")}}
               \cup {e.to : e \in {x \in Events : Has(x, "to")}}
TraceIds ==
    LET named == {e.f : e \in {x \in Events : Has(x, "f")}}
    IN  1..(IF named = {} THEN 1
            ELSE CHOOSE m \in named : \A n \in named : n <= m)

VARIABLES i, claims, nodes, tags, nextId,
          hand   \* tags the trace took by hand (tag/untag events), not by a claim
vars == <<i, claims, nodes, tags, nextId, hand>>

Init ==
    /\ i = 0
    /\ claims = [a \in TraceAllocs |-> {}]
    /\ nodes = {}
    /\ tags = [f \in TraceIds |-> 0]
    /\ nextId = 1
    /\ hand = [f \in TraceIds |-> 0]

\* Apply a TaintOps result to allocation a: tags move, an untag to 0
\* removes the node (G3).
ApplyOn(a, res) ==
    LET t2 == [g \in TraceIds |-> tags[g] + (IF g \in res.tag THEN 1 ELSE 0)
                                          - (IF g \in res.untag THEN 1 ELSE 0)]
    IN  /\ claims' = [claims EXCEPT ![a] = res.claims]
        /\ tags' = t2
        /\ nodes' = nodes \ {g \in res.untag : t2[g] = 0}
        /\ UNCHANGED <<nextId, hand>>

Refused == UNCHANGED <<claims, nodes, tags, nextId, hand>>
Threw(e) == Has(e, "threw") /\ e.threw

\* The observations an event may carry, checked against the state after it.
IsSorted(seq) == \A j \in 1..(Len(seq) - 1) : seq[j][2] < seq[j + 1][2]
Observed(e) ==
    /\ Has(e, "claims") =>
          /\ Elems(e.claims) = Segments(claims'[e.alloc])
          /\ Len(e.claims) = Cardinality(Segments(claims'[e.alloc]))
          /\ IsSorted(e.claims)
    /\ Has(e, "graph") =>
          /\ Elems(e.graph) = {<<f, tags'[f]>> : f \in nodes'}
          /\ Len(e.graph) = Cardinality(nodes')

Step(e) ==
    CASE e.op = "insert" ->
            /\ e.f = nextId                                          \* G1
            /\ nodes' = nodes \cup {e.f}
            /\ tags' = [tags EXCEPT ![e.f] = 0]
            /\ nextId' = nextId + 1
            /\ UNCHANGED <<claims, hand>>
      [] e.op = "taint" ->
            IF e.hi > e.lo /\ e.f \notin nodes                       \* G2
            THEN Threw(e) /\ Refused
            ELSE ~Threw(e) /\ ApplyOn(e.alloc, TaintOp(claims[e.alloc], e.lo, e.hi, e.f))
      [] e.op = "written" ->
            ~Threw(e) /\ ApplyOn(e.alloc, WrittenOp(claims[e.alloc], e.lo, e.hi))
      [] e.op = "clear" ->
            ~Threw(e) /\ ApplyOn(e.alloc, ClearOp(claims[e.alloc]))
      [] e.op = "query" ->
            LET fs == FailuresIn(claims[e.alloc], e.lo, e.hi)
            IN  /\ Elems(e.fs) = fs /\ Len(e.fs) = Cardinality(fs)       \* T3
                /\ \A j \in 1..(Len(e.fs) - 1) : e.fs[j] < e.fs[j + 1]
                /\ Has(e, "one") => IF fs = {} THEN e.one = 0 ELSE e.one \in fs
                /\ Refused
      [] e.op = "move" ->
            \* move-assignment: claims and their tags move; a destination that
            \* still holds claims is refused (it would drop their tags, R1)
            IF claims[e.to] # {} /\ e.to # e.alloc
            THEN Threw(e) /\ Refused
            ELSE /\ ~Threw(e)
                 /\ claims' = IF e.to = e.alloc THEN claims
                              ELSE [claims EXCEPT ![e.to] = claims[e.alloc], ![e.alloc] = {}]
                 /\ UNCHANGED <<nodes, tags, nextId, hand>>
      [] e.op = "prune" ->
            /\ ~Threw(e)
            /\ nodes' = IF e.f \in nodes /\ tags[e.f] = 0 THEN nodes \ {e.f} ELSE nodes
            /\ UNCHANGED <<claims, tags, nextId, hand>>
      [] e.op = "replace" -> ~Threw(e) /\ Refused                     \* G4
      [] e.op = "skipped" ->
            IF e.f \in nodes THEN ~Threw(e) /\ Refused ELSE Threw(e) /\ Refused
      [] e.op = "untag" ->
            IF e.f \in nodes /\ tags[e.f] > 0      \* the engine refuses only these
            THEN /\ ~Threw(e)
                 /\ tags' = [tags EXCEPT ![e.f] = @ - 1]
                 /\ hand' = [hand EXCEPT ![e.f] = @ - 1]
                 /\ nodes' = IF tags[e.f] = 1 THEN nodes \ {e.f} ELSE nodes
                 /\ UNCHANGED <<claims, nextId>>
            ELSE Threw(e) /\ Refused
      [] e.op = "tag" ->
            IF e.f \in nodes
            THEN /\ ~Threw(e)
                 /\ tags' = [tags EXCEPT ![e.f] = @ + 1]
                 /\ hand' = [hand EXCEPT ![e.f] = @ + 1]
                 /\ UNCHANGED <<claims, nodes, nextId>>
            ELSE Threw(e) /\ Refused
      [] OTHER -> FALSE

Next ==
    /\ i < Len(TraceLog)
    /\ LET e == TraceLog[i + 1]
       IN  Step(e) /\ Observed(e)
    /\ i' = i + 1

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Checked on every state of the trace.                                    *)
(***************************************************************************)
T5_Shape == \A a \in TraceAllocs : Shape(claims[a])
R1_TagsEqualCarriers ==
    \A f \in nodes : tags[f] = Cardinality({a \in TraceAllocs : Carries(claims[a], f)}) + hand[f]
R2_ClaimedHaveNodes == \A a \in TraceAllocs : ClaimedFailures(claims[a]) \subseteq nodes

\* Accepted iff the behaviour reached the last event.
TraceAccepted ==
    LET d == TLCGet("stats").diameter
    IN  IF d - 1 = Len(TraceLog) THEN TRUE
        ELSE Print(<<"TaintTrace: no behaviour of the spec matches event", d, TraceLog[d]>>,
                   FALSE)

=============================================================================
