------------------------------- MODULE Taint -------------------------------
(***************************************************************************)
(* The claims of ONE allocation under taint / written / clear.             *)
(* DESIGN.md §3.2: T1 taint, T2 written, T3 failure(s), T4 clear, T5       *)
(* shape; and the carrier side of R1 (one tag per claiming failure).       *)
(*                                                                         *)
(* What it models                                                          *)
(*   claims  the claim structure of the code (a set of per-failure sorted  *)
(*           range lists; TaintOps.tla defines every operation on it)      *)
(*   tags    the tags this allocation holds on each failure, moved by the  *)
(*           tag/untag effects the operations return (never recomputed)    *)
(*   owner   a ghost: the per-byte "last failing writer" map, updated by   *)
(*           the plain meaning of each operation, byte by byte (taint:     *)
(*           every byte of r is now F's; written: every byte of r is no    *)
(*           one's; clear: no byte is anyone's).  The claims must refine   *)
(*           it: T1T2T4_RefinesOwnerMap.                                   *)
(*   Every operation on every range (empty ones included) and every        *)
(*   failure is enabled in every state, so TLC explores every sequence.    *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   Node existence and the other allocations (ErrorGraph.tla: the graph   *)
(*   is assumed to hold a node for every failure used here, which is the   *)
(*   G2 precondition); T6 storage; exceptions (all-or-nothing steps).      *)
(*                                                                         *)
(* Invariants that quantify over "every op from here" (T1_TaintExact,      *)
(* T1_SetNotAdd, T2_WrittenExact, T3_FailureQuery, T4_ClearReleasesAll)    *)
(* apply the operation to the current state without taking the step, so   *)
(* each reachable state checks every operation's exact effect.            *)
(*                                                                         *)
(* Bounds (Taint.cfg): Size = 6 bytes, Failures = {1,2,3}: every owner map *)
(* over 6 bytes and 3 failures (4^6 = 4096) is reachable, so every shape   *)
(* of claim set with <= 3 claims and <= 3 ranges per claim is covered.     *)
(* Not covered: more failures or ranges than that, offsets near 2^64.      *)
(***************************************************************************)
EXTENDS TaintOps

CONSTANTS Size,      \* bytes of the allocation: offsets 0..Size-1
          Failures   \* failure ids that exist (positive naturals)

ASSUME Size \in Nat /\ Failures \subseteq Nat \ {0}

Offsets == 0..(Size - 1)
Ranges  == {<<lo, hi>> \in (0..Size) \X (0..Size) : lo <= hi}   \* empty ones too
Proper  == {r \in Ranges : r[1] < r[2]}

VARIABLES claims, tags, owner
vars == <<claims, tags, owner>>

ApplyTags(t, res) ==
    [g \in Failures |-> t[g] + (IF g \in res.tag THEN 1 ELSE 0)
                             - (IF g \in res.untag THEN 1 ELSE 0)]

Apply(res) ==
    /\ claims' = res.claims
    /\ tags' = ApplyTags(tags, res)

Init ==
    /\ claims = {}
    /\ tags = [g \in Failures |-> 0]
    /\ owner = [b \in Offsets |-> NoFailure]

DoTaint(r, f) ==
    /\ Apply(TaintOp(claims, r[1], r[2], f))
    /\ owner' = [b \in Offsets |-> IF b \in Bytes(r) THEN f ELSE owner[b]]

DoWritten(r) ==
    /\ Apply(WrittenOp(claims, r[1], r[2]))
    /\ owner' = [b \in Offsets |-> IF b \in Bytes(r) THEN NoFailure ELSE owner[b]]

DoClear ==
    /\ Apply(ClearOp(claims))
    /\ owner' = [b \in Offsets |-> NoFailure]

Next ==
    \/ \E r \in Ranges, f \in Failures : DoTaint(r, f)
    \/ \E r \in Ranges : DoWritten(r)
    \/ DoClear

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Invariants.                                                             *)
(***************************************************************************)
TypeOK ==
    /\ \A c \in claims : c.f \in Failures /\ \A i \in DOMAIN c.rs : c.rs[i] \in Proper
    /\ tags \in [Failures -> Nat]
    /\ owner \in [Offsets -> Failures \cup {NoFailure}]

\* T5: sorted, disjoint, fused, non-empty, one claim per failure, no byte
\* shared.
T5_Shape == Shape(claims)

\* T1, T2, T4 (meaning): the claim structure refines the per-byte map of
\* last failing writers that the operations' plain meaning produces.
T1T2T4_RefinesOwnerMap == OwnerMap(claims, Size) = owner

\* R1 (carrier side), T1, T2, T4: this allocation holds exactly one tag on
\* each failure with a claim here, and none on any other.
R1_OneTagPerClaim ==
    \A g \in Failures : tags[g] = IF Carries(claims, g) THEN 1 ELSE 0

\* T1: taint(r, F) makes F the owner of exactly the bytes of r; every other
\* byte keeps its owner (other failures lose only r, split if need be).
T1_TaintExact ==
    \A r \in Proper, f \in Failures :
        OwnerMap(TaintOp(claims, r[1], r[2], f).claims, Size)
            = [b \in Offsets |-> IF b \in Bytes(r) THEN f ELSE owner[b]]

\* T1 set, never add: re-tainting bytes F already claims changes nothing --
\* no new claim, no range, no tag, no untag.
T1_SetNotAdd ==
    \A r \in Ranges, f \in Failures :
        (\A b \in Bytes(r) : owner[b] = f)
            => TaintOp(claims, r[1], r[2], f) = Unchanged(claims)

\* T2: written(r) releases exactly the bytes of r; bytes outside r keep
\* their owner, and every failure whose last byte went is untagged at once.
T2_WrittenExact ==
    \A r \in Ranges :
        LET res == WrittenOp(claims, r[1], r[2])
        IN  /\ OwnerMap(res.claims, Size)
                   = [b \in Offsets |-> IF b \in Bytes(r) THEN NoFailure ELSE owner[b]]
            /\ res.untag = ClaimedFailures(claims) \ ClaimedFailures(res.claims)
            /\ res.tag = {}

\* T3: failures(r) is exactly the set of owners of r's bytes; so failure(r)
\* is some claimant of a byte of r, or none iff no byte of r is claimed.
\* An empty range never reports a failure.
T3_FailureQuery ==
    \A r \in Ranges :
        FailuresIn(claims, r[1], r[2]) = {owner[b] : b \in Bytes(r)} \ {NoFailure}

\* T4: clear() leaves no byte owned by anyone, takes no tag, and untags
\* exactly the failures that owned a byte here -- the owner map, not the
\* claim structure, says which -- so that afterwards this allocation holds
\* no tag at all.
T4_ClearReleasesAll ==
    LET res == ClearOp(claims)
    IN  /\ OwnerMap(res.claims, Size) = [b \in Offsets |-> NoFailure]
        /\ res.tag = {}
        /\ res.untag = {owner[b] : b \in Offsets} \ {NoFailure}
        /\ ApplyTags(tags, res) = [g \in Failures |-> 0]

=============================================================================
