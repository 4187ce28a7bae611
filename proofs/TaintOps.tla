------------------------------ MODULE TaintOps ------------------------------
(***************************************************************************)
(* The claim algebra of one allocation's Taint: DESIGN.md §3.2, T1-T5.     *)
(*                                                                         *)
(* This module has no variables.  It defines the operations of a Taint as  *)
(* pure functions from a claim set to a result, so that Taint.tla (model   *)
(* checking), Scopes.tla (the device layer) and the trace specs            *)
(* (TaintTrace.tla, ScopesTrace.tla) all use one definition of T1-T4.      *)
(*                                                                         *)
(* What it models                                                          *)
(*   A claim set is a set of records [f |-> failure, rs |-> ranges], where *)
(*   ranges is a sequence of half-open byte ranges <<begin, end>> (§3.1).  *)
(*   This is the *structure* the code keeps (core/src/engine/taint.cpp     *)
(*   stores the same thing as one sorted segment array; the seed stores it *)
(*   as a list of per-failure range lists).  T5 is stated over it as       *)
(*   Shape(C); the meaning of a claim set is OwnerAt(C, b), the per-byte   *)
(*   "last failing writer" map that Taint.tla checks it refines.           *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   Storage (T6: inline vs. spilled, capacities, the 24-byte budget),     *)
(*   exceptions (a throwing tag leaves the taint unchanged -- an all-or-   *)
(*   nothing step here), 64-bit overflow (TLC integers are 32-bit; the     *)
(*   checked ByteRange constructor of §3.1 is not modelled).               *)
(*                                                                         *)
(* Tag effects.  Every operation returns the failures it tags (at most     *)
(* one, the claimant of T1) and the failures it untags (each once: the     *)
(* failures that lost their last byte here).  The caller applies them to   *)
(* its graph; R1 is then a statement about the caller's counters.          *)
(*                                                                         *)
(* Mutation.  A CONSTANT naming a deliberately broken variant ("none" for  *)
(* the design).  The broken variants exist only so that proofs/check can   *)
(* show every invariant rejecting the bug it is meant to catch; see        *)
(* proofs/README.md for the list.  The mutations of this module are:       *)
(*   "add_not_set"       T1: re-tainting adds a claim and a tag again      *)
(*   "no_fuse"           T1/T5: touching ranges of one failure stay apart  *)
(*   "no_steal"          T1: taint leaves other failures' bytes alone      *)
(*   "forget_untag"      T1: an emptied claim of another failure is        *)
(*                       dropped without its untag                         *)
(*   "write_too_much"    T2: written(r) also releases the byte after r     *)
(*   "query_touching"    T3: a claim merely touching r is reported         *)
(*   "clear_keeps_one"   T4: clear() forgets to release the newest claim   *)
(*   "clear_keeps_claims" T4: clear() untags every claim but keeps them    *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANT Mutation

NoFailure == 0

Min(a, b) == IF a < b THEN a ELSE b
Max(a, b) == IF a < b THEN b ELSE a

\* The elements of a sequence, as a set.
Elems(s) == {s[i] : i \in DOMAIN s}

\* Half-open ranges as pairs <<begin, end>>; the empty range has end <= begin.
Bytes(r) == r[1]..(r[2] - 1)
Overlaps(r, lo, hi) == Max(r[1], lo) < Min(r[2], hi)   \* share >= 1 byte
Touches(r, lo, hi)  == r[1] <= hi /\ lo <= r[2]         \* share a byte or an end

(***************************************************************************)
(* Range-list arithmetic over a sorted, disjoint, non-touching list.       *)
(***************************************************************************)

\* r minus [lo, hi) (lo < hi): zero, one or two pieces, in order.
Cut(r, lo, hi) ==
    LET left  == <<r[1], Min(r[2], lo)>>
        right == <<Max(r[1], hi), r[2]>>
    IN  (IF left[1] < left[2] THEN <<left>> ELSE <<>>)
        \o (IF right[1] < right[2] THEN <<right>> ELSE <<>>)

RECURSIVE Subtract(_, _, _)
\* Every range of rs minus [lo, hi); a range the cut lands inside splits.
Subtract(rs, lo, hi) ==
    IF rs = <<>> THEN <<>>
    ELSE Cut(Head(rs), lo, hi) \o Subtract(Tail(rs), lo, hi)

\* [lo, hi) joined to rs: every range it overlaps or touches is fused into
\* one (T5: [0,10) + [10,20) is [0,20)), and the result stays sorted.
Add(rs, lo, hi) ==
    LET fuses(r) == IF Mutation = "no_fuse" THEN Overlaps(r, lo, hi)
                                            ELSE Touches(r, lo, hi)
        fused == SelectSeq(rs, fuses)
        kept  == SelectSeq(rs, LAMBDA r : ~fuses(r))
        nlo   == IF fused = <<>> THEN lo ELSE Min(lo, fused[1][1])
        nhi   == IF fused = <<>> THEN hi ELSE Max(hi, fused[Len(fused)][2])
    IN  SelectSeq(kept, LAMBDA r : r[1] < nlo)
        \o << <<nlo, nhi>> >>
        \o SelectSeq(kept, LAMBDA r : r[1] >= nlo)

(***************************************************************************)
(* Queries.                                                                *)
(***************************************************************************)

ClaimOf(C, f) == {c \in C : c.f = f}
Carries(C, f) == ClaimOf(C, f) # {}
ClaimedFailures(C) == {c.f : c \in C}
ClaimBytes(c) == UNION {Bytes(r) : r \in Elems(c.rs)}

\* The failure that last left byte b unwritten, or NoFailure: the meaning of
\* a claim set (the per-byte map the reference model keeps, model/owner_map).
Covers(c, b) == \E i \in DOMAIN c.rs : c.rs[i][1] <= b /\ b < c.rs[i][2]
OwnerAt(C, b) ==
    LET holders == {c \in C : Covers(c, b)}
    IN  IF holders = {} THEN NoFailure ELSE (CHOOSE c \in holders : TRUE).f
\* The whole map over offsets 0..n-1.
OwnerMap(C, n) == [b \in 0..(n - 1) |-> OwnerAt(C, b)]

\* T3: every failure claiming at least one byte of [lo, hi), each once.
\* failure(r) returns one of these, or none when the set is empty.
FailuresIn(C, lo, hi) ==
    LET hit(r) == IF Mutation = "query_touching" THEN Touches(r, lo, hi) /\ lo < hi
                                                 ELSE Overlaps(r, lo, hi)
    IN  {c.f : c \in {x \in C : \E i \in DOMAIN x.rs : hit(x.rs[i])}}

\* The claims as the code's segment array shows them (for_each_claim):
\* a set of <<failure, begin, end>>.  Traces compare against this.
Segments(C) == UNION {{<<c.f, r[1], r[2]>> : r \in Elems(c.rs)} : c \in C}

(***************************************************************************)
(* T5: the shape of a claim set.                                           *)
(***************************************************************************)
Shape(C) ==
    /\ \A c \in C : c.f # NoFailure
    \* no claim is empty
    /\ \A c \in C : c.rs # <<>>
    \* ranges non-empty
    /\ \A c \in C : \A i \in DOMAIN c.rs : c.rs[i][1] < c.rs[i][2]
    \* sorted, disjoint and never touching: strictly increasing with a gap
    /\ \A c \in C : \A i \in 1..(Len(c.rs) - 1) : c.rs[i][2] < c.rs[i + 1][1]
    \* at most one claim per failure
    /\ \A c, d \in C : c.f = d.f => c = d
    \* claims of different failures never share a byte
    /\ \A c, d \in C : c # d => ClaimBytes(c) \cap ClaimBytes(d) = {}

(***************************************************************************)
(* The operations.  Each returns                                           *)
(*   [claims |-> the new claim set,                                        *)
(*    tag    |-> failures to tag (at most one),                            *)
(*    untag  |-> failures to untag, each once]                             *)
(***************************************************************************)
Unchanged(C) == [claims |-> C, tag |-> {}, untag |-> {}]

\* Removes [lo, hi) from every claim in D; returns the survivors and the
\* failures whose claim emptied.
Release(D, lo, hi) ==
    LET cut     == {[f |-> c.f, rs |-> Subtract(c.rs, lo, hi)] : c \in D}
        emptied == {c \in cut : c.rs = <<>>}
    IN  [kept |-> cut \ emptied, emptied |-> {c.f : c \in emptied}]

\* T1 taint(r, F).
TaintOp(C, lo, hi, f) ==
    IF hi <= lo THEN Unchanged(C)
    ELSE
    LET others  == {c \in C : c.f # f}
        rel     == IF Mutation = "no_steal"
                   THEN [kept |-> others, emptied |-> {}]
                   ELSE Release(others, lo, hi)
        mine    == ClaimOf(C, f)
        grown   == IF mine = {} THEN [f |-> f, rs |-> << <<lo, hi>> >>]
                   ELSE [f |-> f, rs |-> Add((CHOOSE c \in mine : TRUE).rs, lo, hi)]
        added   == IF Mutation = "add_not_set"
                   THEN [f |-> f, rs |-> << <<lo, hi>> >>]
                   ELSE grown
        keepMine == IF Mutation = "add_not_set" THEN mine ELSE {}
    IN  [claims |-> rel.kept \cup keepMine \cup {added},
         tag    |-> IF mine = {} \/ Mutation = "add_not_set" THEN {f} ELSE {},
         untag  |-> IF Mutation = "forget_untag" THEN {} ELSE rel.emptied]

\* T2 written(r).
WrittenOp(C, lo, hi) ==
    IF hi <= lo THEN Unchanged(C)
    ELSE
    LET rel == Release(C, lo, IF Mutation = "write_too_much" THEN hi + 1 ELSE hi)
    IN  [claims |-> rel.kept, tag |-> {}, untag |-> rel.emptied]

\* T4 clear().
ClearOp(C) ==
    IF Mutation = "clear_keeps_one" /\ C # {}
    THEN LET newest == CHOOSE c \in C : \A d \in C : d.f <= c.f
         IN  [claims |-> {}, tag |-> {}, untag |-> ClaimedFailures(C) \ {newest.f}]
    ELSE [claims |-> IF Mutation = "clear_keeps_claims" THEN C ELSE {},
          tag |-> {}, untag |-> ClaimedFailures(C)]

=============================================================================
