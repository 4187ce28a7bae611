----------------------------- MODULE ErrorGraph -----------------------------
(***************************************************************************)
(* Failures, tags and carriers over several allocations.                   *)
(* DESIGN.md §3.3: G1 insert, G2 tag, G3 untag, G4 replace, G5 prune, and  *)
(* the refcount rules R1, R2, R3; plus "a failure is removed exactly when  *)
(* its last carrier goes" (G3) and "provisional failures never leak"       *)
(* (R3 with S1/S3).                                                        *)
(*                                                                         *)
(* What it models                                                          *)
(*   owner[a][b]  which failure left byte b of allocation a unwritten (the *)
(*                per-byte meaning of a's Taint, which Taint.tla shows the *)
(*                claim structure refines)                                 *)
(*   nodes, tags, kind, nextId   the graph: live ids, tag counts, error    *)
(*                kind ("TornDown" provisional or a real "Launch" error)   *)
(*   held         failures an operation in progress holds (the            *)
(*                provisional failure of an open write scope, R3)          *)
(*   removed      ghost: every id whose node was ever removed              *)
(* Tags move only by the carrier rule of T1/T2/T4: an allocation tags F    *)
(* when F gets its first byte there and untags F when F loses its last     *)
(* byte there; an untag to 0 removes the node (G3).  Nothing recounts.     *)
(*                                                                         *)
(* Operations (any interleaving; each is one engine call sequence):        *)
(*   Open        a write scope opens: insert a TornDown node and hold it   *)
(*   Taint(a,r,f) any live failure claims r of a (a scope's provisional,   *)
(*               or a skip's root, S1)                                     *)
(*   Written(a,r), Clear(a)   T2 and T4 on one allocation                  *)
(*   Replace(f)  G4: a real error replaces f's; a gone f is ignored        *)
(*   Close(f)    the scope ends: release the hold, then prune (G5)         *)
(*   Fail(a,r)   insert a real failure and claim r with it at once (e.g.   *)
(*               an allocation for the launch failed)                      *)
(*   Prune(f)    G5 by anyone, holder or not: the graph knows no holds, so *)
(*               a prune removes a held provisional that has no tag yet    *)
(*               (or no more), and its holder's later replace and prune    *)
(*               find nothing and ignore it (G4, G5)                       *)
(*                                                                         *)
(* R3 is stated as the code keeps it: a node exists only while it has a    *)
(* tag or an operation holds it, and a tagged node always exists.  The     *)
(* converse "held => node" does NOT hold: a hold does not keep a node      *)
(* alive (a held provisional whose last carrier goes is removed then, G3,  *)
(* or pruned by anyone, G5).  See proofs/README.md for the DESIGN wording  *)
(* proposed for R3.                                                        *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   Byte-range structure (Taint.tla), skip records and reports            *)
(*   (Scopes.tla), slices and pools (Lifecycle.tla), the hot slot and the  *)
(*   table of the C++ graph (one set of ids here), 64-bit id overflow.     *)
(*                                                                         *)
(* Bounds: ErrorGraph.cfg: 2 allocations x 2 bytes, ids 1..3, the two      *)
(* allocations a symmetry set.  ErrorGraphLive.cfg: 2 allocations x 1      *)
(* byte, ids 1..3, no symmetry (TLC checks liveness without it), the       *)
(* liveness properties under weak fairness of every scope's close.         *)
(* ErrorGraphDeep.cfg: 3 allocations x 3 bytes, ids 1..6, by random        *)
(* simulation for a fixed time.  Exhaustively                              *)
(* covered: a failure carried by two allocations, two failures in one      *)
(* allocation, an open scope whose provisional loses its last carrier (or  *)
(* is pruned) while still held, interleaved scopes.  Not covered           *)
(* exhaustively: more than 3 failures in a behaviour.                      *)
(*                                                                         *)
(* Mutations (proofs/mutants/ErrorGraph_*.cfg):                            *)
(*   "taint_forgets_untag"  a claim emptied by taint is not untagged       *)
(*   "reuse_ids"            insert takes the smallest id not live          *)
(*   "deferred_removal"     an untag to 0 leaves the node for a later prune *)
(*   "close_skips_prune"    a closing scope forgets G5                     *)
(*   "fail_empty_inserts"   Fail over an empty range still inserts a node  *)
(*   "prune_ignores_tags"   prune removes a node that still has carriers   *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS Allocs,    \* allocation ids (a symmetry set: any of them may do anything)
          Size,      \* bytes per allocation
          MaxId,     \* ids 1..MaxId may be minted
          Mutation   \* "none", or one of the mutations above

ASSUME Size \in Nat /\ MaxId \in Nat

Ids     == 1..MaxId
Offsets == 0..(Size - 1)
NoFailure == 0
\* Every non-empty range, and one empty range (all empty ones act alike).
Ranges  == {<<lo, hi>> \in (0..Size) \X (0..Size) : lo < hi} \cup {<<0, 0>>}
InRange(b, r) == r[1] <= b /\ b < r[2]

VARIABLES owner, nodes, tags, kind, nextId, held, removed
vars == <<owner, nodes, tags, kind, nextId, held, removed>>

Carriers(o, f) == {a \in Allocs : \E b \in Offsets : o[a][b] = f}
OwnersOf(row) == {row[b] : b \in Offsets} \ {NoFailure}

\* The id the next insert returns (G1).
NewId ==
    IF Mutation = "reuse_ids"
    THEN CHOOSE f \in Ids : f \notin nodes /\ \A g \in Ids : g \notin nodes => f <= g
    ELSE nextId
CanInsert ==
    IF Mutation = "reuse_ids" THEN \E f \in Ids : f \notin nodes ELSE nextId <= MaxId

\* Allocation a's bytes become `row`; a tags every failure that gained its
\* first byte there and untags every failure that lost its last (T1, T2,
\* T4); an untag to 0 removes the node (G3).  `nodesIn`/`tagsIn` are the
\* graph before this step (after any insert the same step made).
Retaint(a, row, nodesIn, tagsIn) ==
    LET before == OwnersOf(owner[a])
        after  == OwnersOf(row)
        gained == after \ before
        lost   == IF Mutation = "taint_forgets_untag" THEN {} ELSE before \ after
        t2     == [f \in Ids |-> tagsIn[f] + (IF f \in gained THEN 1 ELSE 0)
                                           - (IF f \in lost THEN 1 ELSE 0)]
        gone   == IF Mutation = "deferred_removal" THEN {}
                  ELSE {f \in lost : t2[f] = 0}
    IN  /\ owner' = [owner EXCEPT ![a] = row]
        /\ tags' = t2
        /\ nodes' = nodesIn \ gone
        /\ removed' = removed \cup gone

Open ==
    /\ CanInsert
    /\ LET f == NewId IN
       /\ nodes' = nodes \cup {f}
       /\ tags' = [tags EXCEPT ![f] = 0]
       /\ kind' = [kind EXCEPT ![f] = "TornDown"]
       /\ held' = held \cup {f}
       /\ nextId' = IF Mutation = "reuse_ids" THEN nextId ELSE nextId + 1
       /\ UNCHANGED <<owner, removed>>

Taint(a, r, f) ==
    /\ f \in nodes                                   \* G2 precondition
    /\ Retaint(a, [b \in Offsets |-> IF InRange(b, r) THEN f ELSE owner[a][b]],
               nodes, tags)
    /\ UNCHANGED <<kind, nextId, held>>

Written(a, r) ==
    /\ Retaint(a, [b \in Offsets |-> IF InRange(b, r) THEN NoFailure ELSE owner[a][b]],
               nodes, tags)
    /\ UNCHANGED <<kind, nextId, held>>

Clear(a) ==
    /\ Retaint(a, [b \in Offsets |-> NoFailure], nodes, tags)
    /\ UNCHANGED <<kind, nextId, held>>

Replace(f) ==                                        \* G4; a gone f is ignored
    /\ kind' = IF f \in nodes THEN [kind EXCEPT ![f] = "Launch"] ELSE kind
    /\ UNCHANGED <<owner, nodes, tags, nextId, held, removed>>

\* G5: remove f if it exists and has no tags.
PruneNow(f) ==
    IF f \in nodes /\ (tags[f] = 0 \/ Mutation = "prune_ignores_tags")
    THEN /\ nodes' = nodes \ {f}
         /\ removed' = removed \cup {f}
    ELSE UNCHANGED <<nodes, removed>>

Close(f) ==
    /\ f \in held
    /\ held' = held \ {f}
    /\ IF Mutation = "close_skips_prune" THEN UNCHANGED <<nodes, removed>>
                                         ELSE PruneNow(f)
    /\ UNCHANGED <<owner, tags, kind, nextId>>

Fail(a, r) ==
    /\ CanInsert
    /\ IF r[1] < r[2] \/ Mutation = "fail_empty_inserts"
       THEN LET f == NewId IN
            /\ kind' = [kind EXCEPT ![f] = "Launch"]
            /\ nextId' = IF Mutation = "reuse_ids" THEN nextId ELSE nextId + 1
            /\ Retaint(a, [b \in Offsets |-> IF InRange(b, r) THEN f ELSE owner[a][b]],
                       nodes \cup {f}, [tags EXCEPT ![f] = 0])
       ELSE UNCHANGED <<owner, nodes, tags, kind, nextId, removed>>
    /\ UNCHANGED held

Prune(f) ==
    /\ PruneNow(f)
    /\ UNCHANGED <<owner, tags, kind, nextId, held>>

Init ==
    /\ owner = [a \in Allocs |-> [b \in Offsets |-> NoFailure]]
    /\ nodes = {}
    /\ tags = [f \in Ids |-> 0]
    /\ kind = [f \in Ids |-> "TornDown"]
    /\ nextId = 1
    /\ held = {}
    /\ removed = {}

Next ==
    \/ Open
    \/ \E a \in Allocs, r \in Ranges :
          \/ \E f \in Ids : Taint(a, r, f)
          \/ Written(a, r)
          \/ Fail(a, r)
    \/ \E a \in Allocs : Clear(a)
    \/ \E f \in held : Replace(f)
    \/ \E f \in Ids : Close(f) \/ Prune(f)

Spec == Init /\ [][Next]_vars

\* Every open scope eventually closes (the device's scope is a bracket).
Fairness == \A f \in Ids : WF_vars(Close(f))
LiveSpec == Spec /\ Fairness

Symmetry == Permutations(Allocs)

(***************************************************************************)
(* Invariants and properties.                                              *)
(***************************************************************************)
TypeOK ==
    /\ owner \in [Allocs -> [Offsets -> Ids \cup {NoFailure}]]
    /\ nodes \subseteq Ids /\ held \subseteq Ids /\ removed \subseteq Ids
    /\ tags \in [Ids -> Nat]
    /\ kind \in [Ids -> {"TornDown", "Launch"}]
    /\ nextId \in 1..(MaxId + 1)

\* R1: a node's tag count equals the number of allocations claiming it.
R1_TagsEqualCarriers ==
    \A f \in nodes : tags[f] = Cardinality(Carriers(owner, f))

\* R2: every claimed id has a node.
R2_ClaimedHaveNodes ==
    \A a \in Allocs, b \in Offsets : owner[a][b] # NoFailure => owner[a][b] \in nodes

\* R3: a node exists iff it has a tag or an operation in progress holds it.
R3_NodeIffTaggedOrHeld ==
    /\ \A f \in nodes : tags[f] > 0 \/ f \in held
    /\ \A f \in Ids : tags[f] > 0 => f \in nodes

\* R3 with S1/S3: a provisional (TornDown) failure outlives its scope only
\* while some allocation carries it (S3: the body threw).
R3_ProvisionalNeverLeaked ==
    \A f \in nodes : kind[f] = "TornDown" /\ f \notin held => Carriers(owner, f) # {}

\* G1: ids count up from 1 and are never reused: every live id was minted,
\* and no id comes back once its node is gone.
G1_IdsNeverReused ==
    /\ nodes \subseteq 1..(nextId - 1)
    /\ nodes \cap removed = {}
    /\ removed \subseteq 1..(nextId - 1)

\* G1 (as a step property): a new node takes an id never seen before.
G1_FreshIds ==
    [][ /\ nextId' >= nextId
        /\ \A f \in nodes' \ nodes : f >= nextId /\ f \notin removed ]_vars

\* G3 and G5 (as a step property): a node whose last carrier goes is removed
\* in that very step (never deferred), and a node is only ever removed once
\* nothing carries it -- by that untag, by its holder's close, or by a
\* prune (G5: only a node with no tag).
G3_RemovedWithLastCarrier ==
    [][ \A f \in nodes :
          /\ (Carriers(owner, f) # {} /\ Carriers(owner', f) = {}) => f \notin nodes'
          /\ f \notin nodes' => Carriers(owner', f) = {} ]_vars

(***************************************************************************)
(* Liveness (ErrorGraphLive.cfg, under Fairness).                          *)
(***************************************************************************)
NoCarriers == \A a \in Allocs : OwnersOf(owner[a]) = {}

\* R4 for the graph: once no allocation carries anything ever again, the
\* graph empties and stays empty -- no node outlives its carriers and its
\* scope.
R4_GraphDrains == (<>[]NoCarriers) => <>[](nodes = {})

\* Every failure, once it has no carrier and no hold, is gone: a scope's
\* provisional lives no longer than its scope unless something carries it.
EventuallyFreed ==
    \A f \in Ids : (f \in nodes /\ Carriers(owner, f) = {}) ~> (f \notin nodes \/ Carriers(owner, f) # {})

(***************************************************************************)
(* Reachability witness (proofs/reach/): the config named there must       *)
(* VIOLATE it, which shows Prune is not dead: someone other than the       *)
(* holder prunes a held provisional that has no tag.                       *)
(***************************************************************************)
NoPruneRemoves == [][\A f \in Ids : Prune(f) => nodes' = nodes]_vars

=============================================================================
