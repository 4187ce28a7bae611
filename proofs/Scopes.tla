------------------------------- MODULE Scopes -------------------------------
(***************************************************************************)
(* The device layer: launches with read and write sets, decided before     *)
(* anything is claimed (skip or enter), the provisional failure of a write *)
(* scope, and the body's outcome (success, failure, partial failure,       *)
(* throw); host writes; reads.  DESIGN.md §3.5: S1-S5, D1, D2; with G4,    *)
(* G5, G7, G8 and R1-R3 as the device uses them.                           *)
(*                                                                         *)
(* What it models                                                          *)
(*   taint[a]      each allocation's claims (TaintOps.tla: the same T1/T2  *)
(*                 the engine runs)                                        *)
(*   nodes, tags, kind, records, nextId                                    *)
(*                 the graph: live ids, tag counts, the kind of each       *)
(*                 failure's error ("TornDown" for a provisional or a body *)
(*                 that threw, S3; the body's own error kind once G4       *)
(*                 replaced it, S1/S2), and the skip records kept on each  *)
(*                 root (G7)                                               *)
(*   scope         the open write scope: launch number k, provisional p,   *)
(*                 write set; k = 0 when none is open                      *)
(*   launches      launches started (host writes are launches too: a scope *)
(*                 with no reads whose body copies in)                     *)
(* and an oracle the device never sees (ghost variables):                  *)
(*   why[a][b]     0 if byte b of a was last written by work that          *)
(*                 succeeded (fresh memory counts as written), else the    *)
(*                 failure that is the root cause -- the failed or torn    *)
(*                 launch itself, or for a launch that did not run because *)
(*                 it would have read garbage, the root of that garbage.   *)
(*                 It is computed from the *semantic* decision (do the     *)
(*                 read bytes have a successful last writer?), never from  *)
(*                 the taint.                                              *)
(*   direct[f]     the allocations f's own launch claimed on entry         *)
(*   reach[f]      the allocations f can reach by dataflow: direct[f],     *)
(*                 then the outputs of any launch reading an allocation    *)
(*                 already in reach[f]                                     *)
(*   ended[f]      how f's launch ended, as its body told it: "TornDown"   *)
(*                 while it runs or when it threw (S3), else the kind of   *)
(*                 the error the body returned (S1/S2).  Set from the      *)
(*                 outcome alone, never from the graph, so G4 (the graph's *)
(*                 kind) is checked against it.                            *)
(*                                                                         *)
(* A launch is two steps: Launch (S1: decide; skip, or enter and claim     *)
(* the write set with the provisional failure) and Close (the body's       *)
(* outcome).  The device is single-threaded and launches are not           *)
(* reentrant, so nothing else happens while a scope is open.  Reads do not *)
(* change state: D1 is an invariant over every binding.                    *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   Allocation lifetime (Lifecycle.tla), the skip-record cap of 16 (at    *)
(*   most MaxLaunches records exist here), error messages, bad bindings    *)
(*   (P3: rejected before anything is claimed), asynchronous backends and  *)
(*   late failures (Device::synchronize), out-of-memory while claiming.    *)
(*   In Next (model checking), a launch reads nothing, one binding, or two *)
(*   whole allocations (either order), writes nothing, one                 *)
(*   binding, or two whole allocations; a failing body returns a "Launch"  *)
(*   error; a partial failure reports one range.  The actions themselves   *)
(*   take any sequences of bindings and ranges and any error kind, which   *)
(*   is what ScopesTrace.tla feeds them.                                   *)
(*                                                                         *)
(* Bounds: Scopes.cfg: allocations of 3, 1 and 1 bytes (a claim can split  *)
(* in two around a write), 3 launches (host writes included).              *)
(* ScopesDeep.cfg: allocations of 4, 2 and 1 bytes and 6 launches, by     *)
(* random simulation for a fixed time (4 launches alone are 11x the       *)
(* states, too many to enumerate on the development machine).             *)
(* The mutants run on allocations of 2, 1 and 1 bytes (SmallSizes).        *)
(* ScopesNeverWritten.cfg: never-written mode, allocations of 2 and 1     *)
(* bytes (NeverWrittenSizes), 3 launches.                                  *)
(* Covers skip chains of length 2 (A -> B -> C), a skip decided by the     *)
(* second of two read bindings, read-write bindings, byte-precise reads    *)
(* next to stale bytes, a claim split by a partial write, repairs by       *)
(* relaunch and host write.  Not covered exhaustively: longer chains,      *)
(* more failures than 3.                                                   *)
(*                                                                         *)
(* Mutations (proofs/mutants/Scopes_*.cfg), besides TaintOps' own:         *)
(*   "skip_mints"          a skip mints a new failure for its outputs (S4) *)
(*   "claim_before_decide" the write set is claimed before the reads are   *)
(*                         checked (S1)                                    *)
(*   "outputs_checked"     write bindings are checked like reads (S5)      *)
(*   "partial_releases_all" a partial failure releases the whole write set *)
(*   "throw_releases"      a throwing body releases its write set (S3)     *)
(*   "fail_prunes"         a failed scope removes its provisional even     *)
(*                         though the write set still carries it (G5, R2)  *)
(*   "empty_writes_mint"   entering with no write set mints a provisional  *)
(*                         nothing claims or prunes (S1, R3)               *)
(*   "sticky_error"        any live failure skips every later launch (D2)  *)
(*   "record_wrong_needed" a skip record names an output as `needed` (G8)  *)
(*   "needed_other_read"   a skip record names a read binding other than   *)
(*                         the one whose stale bytes decided (G8)          *)
(*   "skip_spends_id"      a skip mints nothing but spends an id (S4)      *)
(*   "fail_keeps_torndown" a failing body's error does not replace the     *)
(*                         provisional TornDown (G4)                       *)
(*   "throw_replaces"      a throwing body's provisional is replaced by a  *)
(*                         real error (G4, S3)                             *)
(*   "read_reports_one"    a read over several failures reports one (G9)   *)
(* and, with S6 on (PartialSuccess, below):                                *)
(*   "wrote_only_releases_all"      a wrote_only success releases the      *)
(*                                  whole write set (S6, D1)               *)
(*   "wrote_only_keeps_provisional" it leaves the unnamed bytes TornDown   *)
(*   "wrote_only_unheld"            the failures the scope takes bytes     *)
(*                                  from are not held, so one the body     *)
(*                                  gives its bytes back to has ended (R2) *)
(* and, in never-written mode (below):                                     *)
(*   "nw_fresh_not_claimed"    fresh allocations are not claimed: a read   *)
(*                             of bytes nobody wrote succeeds (D1)         *)
(*   "nw_pruned_while_carried" a launch whose write set takes never-       *)
(*                             written bytes prunes the node, though other *)
(*                             bytes still carry it (N1, R2)               *)
(*   "nw_replaced"             a failing body's error replaces the never-  *)
(*                             written node's kind too (N1, G4)            *)
(*                                                                         *)
(* S6 (issue 11; PartialSuccess = TRUE in ScopesWroteOnly*.cfg and the    *)
(* trace configs, FALSE elsewhere to keep their state spaces): a body may  *)
(* succeed naming the only ranges it wrote (SucceedOnly; none is a launch  *)
(* of zero blocks).  Named bytes are released; every other byte of the     *)
(* write set goes back to its state before the launch, as Device::         *)
(* restore_prior_claims does.  So the scope remembers the claims and the   *)
(* oracle as they were, and holds (one tag each) every failure it took     *)
(* bytes from, so none ends under the provisional's claim; the close gives *)
(* the holds back (G3).                                                    *)
(*                                                                         *)
(* Never-written mode (issue 15; FreshBytes = "never_written"; every       *)
(* other cfg has FreshBytes = "written", today's D1 where fresh memory     *)
(* counts as written).  The allocations exist before the first launch, and *)
(* their bytes are claimed by ONE failure of kind NeverWritten, the node   *)
(* NW, minted first (G1: id 1; the launches' provisionals take 2, 3, ...), *)
(* payload-free, tagged by every allocation that still carries never-      *)
(* written bytes.  The oracle agrees: such bytes have root NW, and NW's    *)
(* launch "claimed" every allocation (direct[NW] = Allocs).  A launch      *)
(* reading them is skipped (S1) and its outputs inherit NW, like any stale *)
(* read; a host write or successful launch releases them (T2), a launch    *)
(* entering steals them for its provisional (T1).  The node is gone        *)
(* exactly when its last carrier lets go (G3), never replaced (G4 replaces *)
(* only the open scope's provisional), never pruned while carried, never   *)
(* minted again (no allocation is created later here; Lifecycle.tla binds  *)
(* fresh allocations under the mode).                                      *)
(***************************************************************************)
EXTENDS TaintOps

CONSTANTS Sizes,          \* Sizes[a]: bytes of allocation a; allocations 1..Len(Sizes)
          MaxLaunches,    \* launches (and so failures) over a behaviour
          FreshBytes,     \* "written" (D1 today) or "never_written" (issue 15)
          PartialSuccess  \* TRUE: bodies may also succeed naming what they wrote (S6)

ASSUME FreshBytes \in {"written", "never_written"}
ASSUME PartialSuccess \in BOOLEAN
NWMode == FreshBytes = "never_written"
\* The never-written node's id: minted before any launch, so the first.
NW == 1
FirstLaunchId == IF NWMode THEN 2 ELSE 1

\* The sizes the cfgs check (a cfg file cannot write a tuple): one allocation
\* of three bytes, so a write in its middle splits a claim in two, and two of
\* one byte; the mutants use two bytes, enough for each of them.
ScopesSizes == <<3, 1, 1>>
SmallSizes == <<2, 1, 1>>
NeverWrittenSizes == <<2, 1>>  \* ScopesNeverWritten.cfg (issue 14: time)
DeepSizes == <<4, 2, 1>>      \* ScopesDeep.cfg (simulation)

\* The error kinds a body may fail with ("Launch" in model checking; a trace
\* names the kind the C++ body returned) and the provisional's.
ErrorKinds == {"Launch", "OutOfMemory", "Generic", "TornDown", "Unwritten", "NotFound",
               "InvalidBinding", "BufferTooBig", "NeverWritten"}

Allocs  == DOMAIN Sizes
Offsets(a) == 0..(Sizes[a] - 1)
Ids     == 1..(MaxLaunches + FirstLaunchId - 1)
Bad     == MaxLaunches + FirstLaunchId  \* the oracle's "no such root" marker
Binds   == UNION {{<<a, lo, hi>> : lo \in 0..Sizes[a], hi \in 0..Sizes[a]} : a \in Allocs}
Proper  == {w \in Binds : w[2] < w[3]}
Whole(a) == <<a, 0, Sizes[a]>>
MaxSize == CHOOSE n \in {Sizes[a] : a \in Allocs} : \A a \in Allocs : Sizes[a] <= n

\* Two read bindings are two whole allocations (either order: the first one
\* with stale bytes decides, S1); any one binding may be read alone.
ReadSets  == {<<>>} \cup {<<r>> : r \in Proper}
             \cup {<<Whole(x[1]), Whole(x[2])>> : x \in {y \in Allocs \X Allocs : y[1] # y[2]}}
WriteSets == {<<>>} \cup {<<w>> : w \in Proper}
             \cup {<<Whole(x[1]), Whole(x[2])>> : x \in {y \in Allocs \X Allocs : y[1] # y[2]}}

\* S6 (PartialSuccess only): an open scope also remembers the claims and
\* the oracle as they were before it entered, and the failures it holds
\* (one hand tag each, as Device::hold_prior_claims takes) so that the
\* provisional's claim cannot end one the body may give its bytes back to.
\* Without S6 these stay at the values below, so the other configs keep
\* their state space.
NoPrior    == [a \in Allocs |-> {}]
NoPriorWhy == [a \in Allocs |-> [b \in Offsets(a) |-> 0]]
NoScope == [k |-> 0, p |-> 0, writes |-> <<>>, ghostRoot |-> 0,
            prior |-> NoPrior, priorWhy |-> NoPriorWhy, held |-> {}]

VARIABLES taint, nodes, tags, kind, records, nextId, launches, scope,
          why, direct, reach, ended
vars == <<taint, nodes, tags, kind, records, nextId, launches, scope,
          why, direct, reach, ended>>

AllocsOf(ws) == {ws[i][1] : i \in DOMAIN ws}
BindBytes(w) == w[2]..(w[3] - 1)

(***************************************************************************)
(* The engine state as one value, so a sequence of taint operations can be *)
(* folded over it: [taint, tags, nodes].                                   *)
(***************************************************************************)
ApplyRes(S, a, res) ==
    LET t2 == [g \in Ids |-> S.tags[g] + (IF g \in res.tag THEN 1 ELSE 0)
                                       - (IF g \in res.untag THEN 1 ELSE 0)]
    IN  [taint |-> [S.taint EXCEPT ![a] = res.claims],
         tags  |-> t2,
         nodes |-> S.nodes \ {g \in res.untag : t2[g] = 0}]      \* G3

RECURSIVE TaintSeq(_, _, _)
TaintSeq(S, ws, f) ==
    IF ws = <<>> THEN S
    ELSE LET w == Head(ws)
         IN  TaintSeq(ApplyRes(S, w[1], TaintOp(S.taint[w[1]], w[2], w[3], f)), Tail(ws), f)

RECURSIVE WrittenSeq(_, _)
WrittenSeq(S, ws) ==
    IF ws = <<>> THEN S
    ELSE LET w == Head(ws)
         IN  WrittenSeq(ApplyRes(S, w[1], WrittenOp(S.taint[w[1]], w[2], w[3])), Tail(ws))

Engine == [taint |-> taint, tags |-> tags, nodes |-> nodes]
SetEngine(S) == taint' = S.taint /\ tags' = S.tags /\ nodes' = S.nodes

\* G5: remove p if it exists with no tags.
Prune(S, p) ==
    IF p \in S.nodes /\ S.tags[p] = 0
    THEN [S EXCEPT !.nodes = @ \ {p}] ELSE S

\* The oracle: bytes of the write set take value v.
WhyWrite(w0, ws, v) ==
    [a \in Allocs |-> [b \in Offsets(a) |->
        IF \E i \in DOMAIN ws : ws[i][1] = a /\ b \in BindBytes(ws[i]) THEN v ELSE w0[a][b]]]

\* D2's dataflow: a launch reading `reads` and writing `ws` carries every
\* failure that can reach a read allocation to its outputs.
Flow(rch, reads, ws) ==
    [f \in Ids |-> IF AllocsOf(reads) \cap rch[f] # {} THEN rch[f] \cup AllocsOf(ws)
                   ELSE rch[f]]

\* Never-written mode: every allocation starts claimed whole by NW (unless
\* the broken variant forgets to), and NW has one tag per carrier.
FreshClaimed == NWMode /\ Mutation # "nw_fresh_not_claimed"
IsNW(f) == NWMode /\ f = NW

Init ==
    /\ taint = [a \in Allocs |->
                  IF FreshClaimed THEN {[f |-> NW, rs |-> << <<0, Sizes[a]>> >>]} ELSE {}]
    /\ nodes = IF NWMode THEN {NW} ELSE {}
    /\ tags = [f \in Ids |-> IF IsNW(f) /\ FreshClaimed THEN Cardinality(Allocs) ELSE 0]
    /\ kind = [f \in Ids |-> IF IsNW(f) THEN "NeverWritten" ELSE "none"]
    /\ records = [f \in Ids |-> <<>>]
    /\ nextId = FirstLaunchId
    /\ launches = 0
    /\ scope = NoScope
    \* the oracle: fresh bytes were written by nobody (root NW) in the mode
    /\ why = [a \in Allocs |-> [b \in Offsets(a) |-> IF NWMode THEN NW ELSE 0]]
    /\ direct = [f \in Ids |-> IF IsNW(f) THEN Allocs ELSE {}]
    /\ reach = [f \in Ids |-> IF IsNW(f) THEN Allocs ELSE {}]
    /\ ended = [f \in Ids |-> IF IsNW(f) THEN "NeverWritten" ELSE "none"]

(***************************************************************************)
(* S1: Launch(reads, writes).                                              *)
(***************************************************************************)
Launch(reads, ws) ==
    /\ scope.k = 0
    /\ launches < MaxLaunches
    /\ LET k == launches + 1
           p == nextId
           \* claim_before_decide: the provisional is minted and claims the
           \* write set before the reads are checked.
           early   == Mutation = "claim_before_decide"
           S0      == IF early
                      THEN TaintSeq([Engine EXCEPT !.nodes = @ \cup {p},
                                                   !.tags = [@ EXCEPT ![p] = 0]], ws, p)
                      ELSE Engine
           checked == IF Mutation = "outputs_checked" THEN reads \o ws ELSE reads
           hitAt(j) == FailuresIn(S0.taint[checked[j][1]], checked[j][2], checked[j][3])
           anyHit  == \E j \in DOMAIN checked : hitAt(j) # {}
           \* the binding whose stale bytes decide the skip: the first one
           firstHit == CHOOSE j \in DOMAIN checked :
                          hitAt(j) # {} /\ \A m \in 1..(j - 1) : hitAt(m) = {}
           hits    == IF anyHit THEN hitAt(firstHit) ELSE {}
           sticky  == Mutation = "sticky_error" /\ nodes # {}
           skips   == hits # {} \/ sticky
           roots   == IF hits # {} THEN hits ELSE nodes
           \* needed_other_read: the record names another read binding
           other   == IF firstHit = 1 THEN 2 ELSE 1
           needed  == IF hits # {}
                      THEN IF Mutation = "needed_other_read" /\ Len(checked) > 1
                           THEN checked[other][1] ELSE checked[firstHit][1]
                      ELSE IF reads # <<>> THEN reads[1][1] ELSE CHOOSE a \in Allocs : TRUE
           \* The oracle's decision: would the launch read garbage?
           whyRead == UNION {{why[r[1]][b] : b \in BindBytes(r)} : r \in Elems(reads)} \ {0}
       IN
       \/ /\ skips
          /\ \E root \in roots :
             LET minted  == Mutation = "skip_mints" \/ early
                 newRoot == IF Mutation = "skip_mints" THEN p ELSE root
                 S1 == IF Mutation = "skip_mints"
                       THEN [S0 EXCEPT !.nodes = @ \cup {p}, !.tags = [@ EXCEPT ![p] = 0]]
                       ELSE S0
                 S2 == Prune(TaintSeq(S1, ws, newRoot), p)
                 rec == [k |-> k,
                         needed |-> IF Mutation = "record_wrong_needed" /\ ws # <<>>
                                    THEN ws[1][1] ELSE needed,
                         produced |-> AllocsOf(ws)]
                 \* the oracle: outputs take the semantic root, if there is one
                 gRoot == IF whyRead = {} THEN 0
                          ELSE IF root \in whyRead THEN root ELSE Bad
             IN /\ SetEngine(S2)
                /\ records' = [records EXCEPT ![root] = Append(@, rec)]     \* G7
                /\ nextId' = IF minted \/ Mutation = "skip_spends_id" THEN nextId + 1
                             ELSE nextId
                /\ kind' = IF Mutation = "skip_mints" THEN [kind EXCEPT ![p] = "Skipped"]
                           ELSE IF early THEN [kind EXCEPT ![p] = "TornDown"] ELSE kind
                /\ ended' = IF minted THEN [ended EXCEPT ![p] = "TornDown"] ELSE ended
                /\ direct' = IF minted THEN [direct EXCEPT ![p] = AllocsOf(ws)] ELSE direct
                /\ reach' = LET r1 == Flow(reach, reads, ws)
                            IN  IF minted THEN [r1 EXCEPT ![p] = AllocsOf(ws)] ELSE r1
                /\ why' = WhyWrite(why, ws, gRoot)
                /\ UNCHANGED scope
       \/ /\ ~skips
          /\ ws = <<>>
          \* enter with an empty write set: nothing is claimed, nothing minted;
          \* a failure of the body is only reported to the caller
          /\ IF Mutation = "empty_writes_mint"
             THEN /\ nodes' = nodes \cup {p}
                  /\ tags' = [tags EXCEPT ![p] = 0]
                  /\ nextId' = nextId + 1
                  /\ kind' = [kind EXCEPT ![p] = "TornDown"]
                  /\ ended' = [ended EXCEPT ![p] = "TornDown"]
                  /\ UNCHANGED <<taint, direct>>
             ELSE UNCHANGED <<taint, nodes, tags, nextId, kind, ended, direct>>
          /\ reach' = Flow(reach, reads, ws)
          /\ UNCHANGED <<records, why, scope>>
       \/ /\ ~skips
          /\ ws # <<>>
          \* enter: the provisional TornDown failure claims the write set;
          \* under S6 first every failure claiming write-set bytes is held
          \* (wrote_only_unheld: none is)
          /\ LET held == IF PartialSuccess /\ Mutation # "wrote_only_unheld"
                         THEN UNION {FailuresIn(taint[w[1]], w[2], w[3]) : w \in Elems(ws)}
                         ELSE {}
                 Sh  == [Engine EXCEPT !.tags = [g \in Ids |-> tags[g] + (IF g \in held THEN 1 ELSE 0)]]
                 S1a == IF early THEN S0
                        ELSE TaintSeq([Sh EXCEPT !.nodes = @ \cup {p},
                                                 !.tags = [@ EXCEPT ![p] = 0]], ws, p)
                 \* nw_pruned_while_carried: the first launch to take never-
                 \* written bytes retires the node, as if it were one
                 \* allocation's, while other bytes still carry it.
                 S1 == IF Mutation = "nw_pruned_while_carried" /\ NWMode
                          /\ S1a.tags[NW] < tags[NW]
                       THEN [S1a EXCEPT !.nodes = @ \ {NW}] ELSE S1a
                 \* the oracle: a launch that would read garbage does not run
                 gRoot == IF whyRead = {} THEN 0 ELSE CHOOSE g \in whyRead : TRUE
             IN /\ SetEngine(S1)
                /\ nextId' = nextId + 1
                /\ kind' = [kind EXCEPT ![p] = "TornDown"]
                /\ ended' = [ended EXCEPT ![p] = "TornDown"]
                /\ direct' = [direct EXCEPT ![p] = AllocsOf(ws)]
                /\ reach' = [Flow(reach, reads, ws) EXCEPT ![p] = AllocsOf(ws)]
                /\ why' = WhyWrite(why, ws, IF gRoot = 0 THEN p ELSE gRoot)
                /\ scope' = [k |-> k, p |-> p, writes |-> ws, ghostRoot |-> gRoot,
                              prior |-> IF PartialSuccess THEN taint ELSE NoPrior,
                              priorWhy |-> IF PartialSuccess THEN why ELSE NoPriorWhy,
                              held |-> held]
                /\ UNCHANGED records
    /\ launches' = launches + 1

(***************************************************************************)
(* Close: the body's outcome.                                              *)
(***************************************************************************)
\* S6: the close gives back the scope's holds; a held failure that nothing
\* carries any more goes (G3).  The identity without S6 (nothing held).
Unhold(S, held) ==
    LET t2 == [g \in Ids |-> S.tags[g] - (IF g \in held THEN 1 ELSE 0)]
    IN  [S EXCEPT !.tags = t2, !.nodes = @ \ {g \in held : t2[g] = 0}]

CloseWith(S, released, newKind, how) ==
    /\ SetEngine(Prune(Unhold(S, scope.held), scope.p))
    /\ kind' = newKind
    \* the oracle: what the body wrote has a successful writer -- unless the
    \* oracle knows the launch should never have run
    /\ why' = IF scope.ghostRoot # 0 THEN why ELSE WhyWrite(why, released, 0)
    /\ ended' = [ended EXCEPT ![scope.p] = how]
    /\ scope' = NoScope
    /\ UNCHANGED <<records, nextId, launches, direct, reach>>

\* G4: the body's error replaces the provisional one; a gone id is ignored.
Replaced(err) ==
    LET k1 == IF scope.p \in nodes /\ Mutation # "fail_keeps_torndown"
              THEN [kind EXCEPT ![scope.p] = err] ELSE kind
    \* nw_replaced: replace reaches the never-written node too.
    IN  IF Mutation = "nw_replaced" /\ NWMode /\ NW \in nodes
        THEN [k1 EXCEPT ![NW] = err] ELSE k1

Succeed ==
    /\ scope.k # 0
    /\ CloseWith(WrittenSeq(Engine, scope.writes), scope.writes, kind, "TornDown")

\* S1: the body failed with an error of kind err.
Fail(err) ==
    /\ scope.k # 0
    /\ IF Mutation = "fail_prunes"
       THEN /\ SetEngine([Engine EXCEPT !.nodes = @ \ {scope.p}])
            /\ kind' = Replaced(err)
            /\ why' = why
            /\ ended' = [ended EXCEPT ![scope.p] = err]
            /\ scope' = NoScope
            /\ UNCHANGED <<records, nextId, launches, direct, reach>>
       ELSE CloseWith(Engine, <<>>, Replaced(err), err)

\* S2: the body reported `parts` written before failing: a sequence of
\* <<i, lo, hi>>, bytes [lo, hi) of write binding i.  Reported ranges are
\* untrusted: one that is not inside its binding is ignored.
ValidPart(pt) ==
    /\ pt[1] \in DOMAIN scope.writes
    /\ pt[2] <= pt[3]
    /\ scope.writes[pt[1]][2] + pt[3] <= scope.writes[pt[1]][3]
Absolute(pt) == LET w == scope.writes[pt[1]] IN <<w[1], w[2] + pt[2], w[2] + pt[3]>>
PartialFail(parts, err) ==
    /\ scope.k # 0
    /\ LET part == [j \in DOMAIN SelectSeq(parts, ValidPart) |->
                      Absolute(SelectSeq(parts, ValidPart)[j])]
           released == IF Mutation = "partial_releases_all" THEN scope.writes ELSE part
       IN  CloseWith(WrittenSeq(Engine, released), part, Replaced(err), err)

\* S6: the body succeeded and named the only bytes it wrote (`parts`, as
\* S2's ranges: untrusted, one outside its binding ignored; <<>> is a launch
\* of zero blocks).  A named byte is released; every other byte of the write
\* set goes back to what it was before the launch: claimed again by the
\* failure that claimed it then (held, so still alive), or released if it
\* was clean.  Byte by byte, in any order: the bytes are distinct.
\*   wrote_only_releases_all       releases the whole write set
\*   wrote_only_keeps_provisional  leaves the unnamed bytes TornDown
RestoreOp(C, a, b, named) ==
    LET f       == OwnerAt(scope.prior[a], b)
        isNamed == \E n \in named : n[1] = a /\ n[2] <= b /\ b < n[3]
    IN  CASE Mutation = "wrote_only_releases_all" -> WrittenOp(C, b, b + 1)
          [] Mutation = "wrote_only_keeps_provisional" ->
                 IF isNamed THEN WrittenOp(C, b, b + 1) ELSE Unchanged(C)
          [] isNamed \/ f = 0 -> WrittenOp(C, b, b + 1)
          [] OTHER -> TaintOp(C, b, b + 1, f)

RECURSIVE RestoreBytes(_, _, _)
RestoreBytes(S, xs, named) ==
    IF xs = {} THEN S
    ELSE LET x == CHOOSE y \in xs : TRUE
         IN  RestoreBytes(ApplyRes(S, x[1], RestoreOp(S.taint[x[1]], x[1], x[2], named)),
                          xs \ {x}, named)

SucceedOnly(parts) ==
    /\ PartialSuccess
    /\ scope.k # 0
    /\ LET valid == SelectSeq(parts, ValidPart)
           named == {Absolute(valid[j]) : j \in DOMAIN valid}
           xs    == UNION {{<<w[1], b>> : b \in BindBytes(w)} : w \in Elems(scope.writes)}
           isNamed(a, b) == \E n \in named : n[1] = a /\ n[2] <= b /\ b < n[3]
       IN  /\ SetEngine(Prune(Unhold(RestoreBytes(Engine, xs, named), scope.held), scope.p))
           \* the oracle: a named byte has a successful writer (unless the
           \* launch should never have run); any other keeps its last writer
           /\ why' = [a \in Allocs |-> [b \in Offsets(a) |->
                        IF <<a, b>> \notin xs THEN why[a][b]
                        ELSE IF isNamed(a, b)
                             THEN IF scope.ghostRoot # 0 THEN why[a][b] ELSE 0
                             ELSE scope.priorWhy[a][b]]]
           /\ scope' = NoScope
           /\ UNCHANGED <<records, nextId, launches, direct, reach, kind, ended>>

\* S3: the body throws; the write set stays claimed by TornDown.
Throw ==
    /\ scope.k # 0
    /\ IF Mutation = "throw_releases"
       THEN /\ SetEngine(Prune(WrittenSeq(Engine, scope.writes), scope.p))
            /\ kind' = kind
            /\ why' = why
            /\ ended' = ended
            /\ scope' = NoScope
            /\ UNCHANGED <<records, nextId, launches, direct, reach>>
       ELSE CloseWith(Engine, <<>>,
                      IF Mutation = "throw_replaces" THEN Replaced("Launch") ELSE kind,
                      "TornDown")

Next ==
    \/ \E r \in ReadSets, ws \in WriteSets : Launch(r, ws)
    \/ Succeed \/ Fail("Launch") \/ Throw
    \/ \E i \in 1..2, lo \in 0..MaxSize, hi \in 0..MaxSize :
          lo < hi /\ ValidPart(<<i, lo, hi>>) /\ PartialFail(<< <<i, lo, hi>> >>, "Launch")
    \* S6 (PartialSuccess only): a success naming nothing (zero blocks) or
    \* one range
    \/ SucceedOnly(<<>>)
    \/ \E i \in 1..2, lo \in 0..MaxSize, hi \in 0..MaxSize :
          lo < hi /\ ValidPart(<<i, lo, hi>>) /\ SucceedOnly(<< <<i, lo, hi>> >>)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Reports (G8): walk the root's skip records back from the allocation     *)
(* read, each step the newest strictly older record that produced the      *)
(* current allocation; the walk ends at the origin.                        *)
(***************************************************************************)
RECURSIVE WalkFrom(_, _, _)
WalkFrom(recs, cur, older) ==
    LET hits == {i \in 1..(older - 1) : cur \in recs[i].produced}
    IN  IF hits = {} THEN [origin |-> cur, path |-> <<>>]
        ELSE LET i == CHOOSE j \in hits : \A m \in hits : m <= j
                 rest == WalkFrom(recs, recs[i].needed, i)
             IN  [origin |-> rest.origin, path |-> <<recs[i].k>> \o rest.path]
Report(f, a) ==
    LET w == WalkFrom(records[f], a, Len(records[f]) + 1)
    IN  [failure |-> f, kind |-> kind[f], read |-> a, origin |-> w.origin, path |-> w.path]

\* D1: what a read of binding r returns -- the bytes, or one report per
\* distinct failure (G9).
ReadOutcome(r) ==
    LET all == FailuresIn(taint[r[1]], r[2], r[3])
        fs  == IF Mutation = "read_reports_one" /\ all # {}
               THEN {CHOOSE f \in all : \A g \in all : f <= g} ELSE all
    IN  IF fs = {} THEN [ok |-> TRUE, reports |-> {}]
        ELSE [ok |-> FALSE, reports |-> {Report(f, r[1]) : f \in fs}]

(***************************************************************************)
(* Invariants.                                                             *)
(***************************************************************************)
TypeOK ==
    /\ \A a \in Allocs : Shape(taint[a])
    /\ nodes \subseteq Ids
    /\ tags \in [Ids -> Nat]
    /\ kind \in [Ids -> ErrorKinds \cup {"none", "Skipped"}]
    /\ \A a \in Allocs : why[a] \in [Offsets(a) -> 0..Bad]

Carriers(f) == {a \in Allocs : Carries(taint[a], f)}

\* R1-R3 while scopes come and go: tags equal carriers (plus the open
\* scope's hold, S6), every claimed id has a node, and a node with no tag is
\* the open scope's provisional.
Held(f) == IF f \in scope.held THEN 1 ELSE 0
R1_TagsEqualCarriers == \A f \in nodes : tags[f] = Cardinality(Carriers(f)) + Held(f)
R2_ClaimedHaveNodes  == \A a \in Allocs : ClaimedFailures(taint[a]) \subseteq nodes
R3_NodeIffTaggedOrHeld ==
    \A f \in nodes : tags[f] > 0 \/ f = scope.p

\* D1: a read succeeds iff every byte it returns was last written by work
\* that succeeded (the oracle); otherwise it reports.  Stated per byte: a
\* read of r fails iff one of its bytes is claimed (T3), so this is D1 for
\* every binding, at a cost linear in the bytes (traces have large buffers).
D1_ReadOracle ==
    \A a \in Allocs : \A b \in Offsets(a) : (OwnerAt(taint[a], b) = 0) <=> (why[a][b] = 0)

\* G9 (with D1, G8, G4): what every read returns, as the device computes it
\* (ReadOutcome), against the oracle: the bytes iff no byte of the range has
\* a failed root; otherwise exactly one report per distinct root of its
\* bytes, each walking back to an allocation the root's own launch claimed
\* and naming the error its body ended with.
G9_ReadOutcome ==
    \A r \in Proper :
        LET out   == ReadOutcome(r)
            roots == {why[r[1]][b] : b \in BindBytes(r)} \ {0}
        IN  /\ out.ok <=> roots = {}
            /\ {rep.failure : rep \in out.reports} = roots
            /\ Cardinality(out.reports) = Cardinality(roots)
            /\ \A rep \in out.reports : /\ rep.origin \in direct[rep.failure]
                                        /\ rep.kind = ended[rep.failure]

\* D1/G8/G9: the failure a read names for each stale byte is the oracle's
\* root, and its report walks back to an allocation the root's own launch
\* left unwritten.
G8_ReportNamesRoot ==
    /\ \A a \in Allocs : \A b \in Offsets(a) : OwnerAt(taint[a], b) = why[a][b]
    \* a report depends on the failure and the allocation read, not the range
    /\ \A a \in Allocs : \A f \in ClaimedFailures(taint[a]) :
          LET rep == Report(f, a)
          IN  rep.origin \in direct[f]

\* G4 (S1, S2, S3): a failure's error is the one its body ended with -- the
\* body's own error once it failed (replace), TornDown while it runs or when
\* it threw.
G4_ErrorIsTheBodys == \A f \in nodes : kind[f] = ended[f]

\* D2: a failure only ever claims bytes of allocations its dataflow reaches:
\* work that shares no allocation with a failure is never affected by it.
D2_Isolation ==
    \A a \in Allocs : \A f \in ClaimedFailures(taint[a]) : a \in reach[f]

(***************************************************************************)
(* The never-written node (issue 15; true when the mode is off).           *)
(***************************************************************************)
CarriersIn(t, f) == {a \in Allocs : Carries(t[a], f)}

\* N1: the node lives exactly as long as a carrier does: it exists iff
\* some allocation's claims name it (and then its tags count them).
\* Under S6 an open scope's hold counts as a carrier: the body may give the
\* node its bytes back.
N1_NeverWrittenLivesWhileCarried ==
    NWMode => /\ (NW \in nodes) <=> (Carriers(NW) # {} \/ NW \in scope.held)
              /\ NW \in nodes => tags[NW] = Cardinality(Carriers(NW)) + Held(NW)

\* N1: never replaced -- while it lives its kind is NeverWritten.
N1_NeverWrittenNeverReplaced ==
    NWMode => (NW \in nodes => kind[NW] = "NeverWritten")

\* N1 (step): it goes exactly in the step in which its last carrier lets go
\* of it, never while carried, and once gone it is never minted again.
N1_NeverWrittenGoesWithLastCarrier ==
    [][ NWMode =>
          /\ (NW \in nodes /\ NW \notin nodes') =>
                CarriersIn(taint', NW) = {} /\ NW \notin scope'.held
          /\ (NW \in nodes /\ CarriersIn(taint', NW) = {} /\ NW \notin scope'.held) =>
                NW \notin nodes'
          /\ NW \notin nodes => NW \notin nodes' ]_vars

\* Witness (proofs/reach/): the node is never gone.  A never-written cfg
\* must VIOLATE it: the last carrier does let go within the bounds.
NoNeverWrittenRelease == NWMode => NW \in nodes

\* Witness (proofs/reach/): no failure is ever kept alive by a hold alone.
\* ScopesWroteOnly.cfg must VIOLATE it: a scope takes a failure's last bytes
\* and the hold is all that keeps it for the body's S6 outcome.
NoFailureHeldWithoutCarrier == \A f \in scope.held : Carriers(f) # {}

\* S4 (with S1): an id is spent, and a node minted, only by a launch that
\* enters with a non-empty write set, and it is that scope's provisional.
\* A skip, an empty write set, a close or a read mints and spends nothing.
\* A step property over the graph's own state (no ghost).
S4_SkipMintsNothing ==
    [][ (nextId' # nextId \/ nodes' \ nodes # {}) =>
           /\ scope.k = 0 /\ scope'.k # 0
           /\ nextId' = nextId + 1
           /\ nodes' \ nodes = {nextId}
           /\ scope'.p = nextId ]_vars

=============================================================================
