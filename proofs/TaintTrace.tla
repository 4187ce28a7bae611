----------------------------- MODULE TaintTrace -----------------------------
(***************************************************************************)
(* Trace validation for the taint engine: is a sequence of Taint and       *)
(* ErrorGraph calls, with the results the C++ observed, a behaviour of the *)
(* design?  The format is in proofs/TRACES.md; proofs/check runs every     *)
(* proofs/traces/taint_*.tla through this spec.                            *)
(*                                                                         *)
(* Two specs run side by side on every event, and must agree:              *)
(*   claims   each allocation's claim structure under TaintOps' T1-T4 --   *)
(*            the same operators Taint.tla model-checks, the structure the *)
(*            code keeps;                                                  *)
(*   EG       ErrorGraph.tla itself (INSTANCE), over the trace's           *)
(*            allocations, offsets and ids: its per-byte owner map and its *)
(*            graph (nodes, tags, kinds, holds, G1-G5, R1-R3) take the     *)
(*            step the event names -- Open for an insert, Taint, Written,  *)
(*            Clear, Replace, Prune, or Close when the inserter prunes.    *)
(* At every step the claims must refine EG's owner map                     *)
(* (ClaimsRefineOwner), and the tags TaintOps says the operation takes and *)
(* releases must be exactly EG's (TagsAgree).  Every result the event      *)
(* records must equal what the specs compute.  A trace is accepted iff     *)
(* every event matches (POSTCONDITION TraceAccepted).                      *)
(*                                                                         *)
(* An inserted node counts as held by the caller that inserted it until    *)
(* that caller prunes it (R3: "an operation in progress holds it"), which  *)
(* is how the Device uses insert and prune.  What ErrorGraph does not      *)
(* model is done here, on its variables: a move of a taint between         *)
(* allocations (the owner rows move, no tag changes) and tags taken and    *)
(* dropped by hand through tag/untag (counted in `hand`, so R1 becomes     *)
(* tags = carriers + hand tags).                                           *)
(*                                                                         *)
(* What is checked per event (fields marked ? are optional observations):  *)
(*   insert   f = the next id (G1)                                         *)
(*   taint    T1 on alloc's claims; threw? iff f has no node (G2)          *)
(*   written  T2;  clear: T4;  prune f: G5;  replace f: G4                 *)
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
(*                                                                         *)
(* The trace module defines, as literals (TRACES.md): TraceAllocs (the     *)
(* allocations it names), TraceOffsets (offsets are 0..TraceOffsets) and   *)
(* TraceMaxId (the largest failure id it names).                           *)
(***************************************************************************)
EXTENDS TaintOps, TLC

CONSTANTS TraceLog,      \* the trace: a sequence of event records (TRACES.md)
          TAllocs, TOffsets, TMaxId

VARIABLES i, claims,
          hand,          \* tags the trace took by hand (tag/untag events)
          owner, nodes, tags, kind, nextId, held, removed   \* ErrorGraph's
vars == <<i, claims, hand, owner, nodes, tags, kind, nextId, held, removed>>
egvars == <<owner, nodes, tags, kind, nextId, held, removed>>

EG == INSTANCE ErrorGraph WITH Allocs <- TAllocs, Size <- TOffsets, MaxId <- TMaxId

Has(e, field) == field \in DOMAIN e
Ids == 1..TMaxId

Init ==
    /\ i = 0
    /\ claims = [a \in TAllocs |-> {}]
    /\ hand = [f \in Ids |-> 0]
    /\ EG!Init

Refused == UNCHANGED <<claims, hand, egvars>>
Threw(e) == Has(e, "threw") /\ e.threw

\* The tags and nodes a TaintOps result implies (an untag to 0 removes the
\* node, G3) are the ones ErrorGraph's step computed from the owner map.
TagsAgree(res) ==
    LET t2 == [g \in Ids |-> tags[g] + (IF g \in res.tag THEN 1 ELSE 0)
                                     - (IF g \in res.untag THEN 1 ELSE 0)]
    IN  /\ tags' = t2
        /\ nodes' = nodes \ {g \in res.untag : t2[g] = 0}

\* An operation on allocation a: TaintOps on its claims, ErrorGraph's action
\* on its owner row and the graph, in agreement.
OnAlloc(a, res, egStep) ==
    /\ claims' = [claims EXCEPT ![a] = res.claims]
    /\ egStep
    /\ TagsAgree(res)
    /\ UNCHANGED hand

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
            /\ EG!Open
            /\ UNCHANGED <<claims, hand>>
      [] e.op = "taint" ->
            IF e.hi <= e.lo THEN ~Threw(e) /\ Refused                \* T1: nothing
            ELSE IF e.f \notin nodes THEN Threw(e) /\ Refused         \* G2
            ELSE /\ ~Threw(e)
                 /\ OnAlloc(e.alloc, TaintOp(claims[e.alloc], e.lo, e.hi, e.f),
                            EG!Taint(e.alloc, <<e.lo, e.hi>>, e.f))
      [] e.op = "written" ->
            /\ ~Threw(e)
            /\ IF e.hi <= e.lo THEN Refused
               ELSE OnAlloc(e.alloc, WrittenOp(claims[e.alloc], e.lo, e.hi),
                            EG!Written(e.alloc, <<e.lo, e.hi>>))
      [] e.op = "clear" ->
            ~Threw(e) /\ OnAlloc(e.alloc, ClearOp(claims[e.alloc]), EG!Clear(e.alloc))
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
                 /\ IF e.to = e.alloc THEN Refused
                    ELSE /\ claims' = [claims EXCEPT ![e.to] = claims[e.alloc], ![e.alloc] = {}]
                         /\ owner' = [owner EXCEPT ![e.to] = owner[e.alloc],
                                                   ![e.alloc] = [b \in EG!Offsets |-> 0]]
                         /\ UNCHANGED <<hand, nodes, tags, kind, nextId, held, removed>>
      [] e.op = "prune" ->
            \* G5; the inserter's prune also ends its hold (R3)
            /\ ~Threw(e)
            /\ IF e.f \in held THEN EG!Close(e.f) ELSE EG!Prune(e.f)
            /\ UNCHANGED <<claims, hand>>
      [] e.op = "replace" ->
            ~Threw(e) /\ EG!Replace(e.f) /\ UNCHANGED <<claims, hand>>      \* G4
      [] e.op = "skipped" ->                                                \* G7
            IF e.f \in nodes THEN ~Threw(e) /\ Refused ELSE Threw(e) /\ Refused
      [] e.op = "untag" ->
            IF e.f \in nodes /\ tags[e.f] > 0      \* the engine refuses only these
            THEN /\ ~Threw(e)
                 /\ tags' = [tags EXCEPT ![e.f] = @ - 1]
                 /\ hand' = [hand EXCEPT ![e.f] = @ - 1]
                 /\ IF tags[e.f] = 1                                        \* G3
                    THEN nodes' = nodes \ {e.f} /\ removed' = removed \cup {e.f}
                    ELSE UNCHANGED <<nodes, removed>>
                 /\ UNCHANGED <<claims, owner, kind, nextId, held>>
            ELSE Threw(e) /\ Refused
      [] e.op = "tag" ->
            IF e.f \in nodes
            THEN /\ ~Threw(e)
                 /\ tags' = [tags EXCEPT ![e.f] = @ + 1]
                 /\ hand' = [hand EXCEPT ![e.f] = @ + 1]
                 /\ UNCHANGED <<claims, owner, nodes, kind, nextId, held, removed>>
            ELSE Threw(e) /\ Refused
      [] OTHER -> FALSE

Next ==
    /\ i < Len(TraceLog)
    /\ LET e == TraceLog[i + 1]
       IN  Step(e) /\ Observed(e)
    /\ i' = i + 1

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Checked on every state of the trace (with ErrorGraph's R2, R3, G1).     *)
(***************************************************************************)
T5_Shape == \A a \in TAllocs : Shape(claims[a])
\* T1, T2, T4 on the real trace: the claim structure means EG's owner map.
ClaimsRefineOwner == \A a \in TAllocs : OwnerMap(claims[a], TOffsets) = owner[a]
R1_TagsEqualCarriers ==
    \A f \in nodes : tags[f] = Cardinality({a \in TAllocs : Carries(claims[a], f)}) + hand[f]
R2_ClaimedHaveNodes == EG!R2_ClaimedHaveNodes
R3_NodeIffTaggedOrHeld == EG!R3_NodeIffTaggedOrHeld
G1_IdsNeverReused == EG!G1_IdsNeverReused

\* Accepted iff the behaviour reached the last event; otherwise says where
\* it stopped (proofs/check compares that with the trace's expect line).
TraceAccepted ==
    LET d == TLCGet("stats").diameter
    IN  IF d - 1 = Len(TraceLog) THEN TRUE
        ELSE /\ Print("trace rejected at event " \o ToString(d), TRUE)
             /\ Print(TraceLog[d], FALSE)

=============================================================================
