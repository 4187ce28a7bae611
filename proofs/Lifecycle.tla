------------------------------ MODULE Lifecycle ------------------------------
(***************************************************************************)
(* Slices and allocations of a sliced pool under reserve/bind (with        *)
(* split), handle clone/drop, discovery of dropped allocations, coalesce,  *)
(* page release (sweep), and reset / destruction (tombstone every live     *)
(* allocation, give every page back).  DESIGN.md §3.4: P1 (no tag outlives *)
(* its carrier), P2 (layout), and §3.3 R4 (the graph is empty once every   *)
(* handle is dropped and every pool swept).                                *)
(*                                                                         *)
(* What it models                                                          *)
(*   layout[p]   the slice records tiling page p, in address order, each   *)
(*               [size, state "free"/"bound"/"unmapped", alloc, claims];   *)
(*               <<>> = no page.  A page is memory, or (the last page      *)
(*               slot) a reservation of address space (the arena's,        *)
(*               virtual_memory.hpp) whose "unmapped" records have no      *)
(*               memory behind them: mapping turns the front of one into a *)
(*               fresh free record (ArenaPool::grow_mapped, inside         *)
(*               allocate), and unmapping a free record gives its memory   *)
(*               back (cleanup or out of memory: a P1 clear point).        *)
(*               `alloc` is the bound allocation, or for a free record the *)
(*               allocation it last held (0 for a record that never held   *)
(*               one: a split remainder, a merged slice, a new page, a     *)
(*               freshly mapped range).                                    *)
(*   tombs       tombstoned records: their allocation was ended by reset   *)
(*               or destruction while handles still point at them          *)
(*   handles[a]  handles of allocation a; pending: allocations whose last  *)
(*               handle dropped and which the pool has not discovered yet  *)
(*   tags[f]     the graph's tag count per failure; a failure's node       *)
(*               exists iff tags[f] > 0 (no operation holds one here, so   *)
(*               R3 says exactly that)                                     *)
(* A claim is a pair <<failure, allocation it was made on>>: the second    *)
(* component is a ghost that lets P1_ClaimsBelongToAllocation see a claim  *)
(* that survived into a later allocation or into a fresh record.           *)
(*                                                                         *)
(* The taint of a slice is abstracted to the SET of failures it claims:    *)
(* any T1/T2 step on bytes changes that set by dropping some claims (those *)
(* that lost their last byte) and maybe adding the claimant, which is all  *)
(* R1 and P1 depend on; Taint.tla shows the byte-level claims do exactly   *)
(* that.                                                                   *)
(*                                                                         *)
(* Discovery.  When a dropped allocation is discovered its slice becomes   *)
(* free.  The design lets its taint be cleared then or at the latest at    *)
(* the next P1 point (bind, coalesce, tombstone, page sweep, destruction). *)
(*   Discovery = "any"    each discovery may clear now or leave the taint  *)
(*                        for a later P1 point, and coalescing is a step   *)
(*                        of its own: every P1 point must do its part.     *)
(*   Discovery = "eager"  the C++ MemoryManager: discovery clears and      *)
(*                        coalesces with free neighbours at once, so free  *)
(*                        slices are always clean and never adjacent, and  *)
(*                        sweep() alone empties the graph (R4).  As in the *)
(*                        C++ (discover_released() at the top of every     *)
(*                        MemoryManager call), discovery is part of each   *)
(*                        pool call -- allocate (Allocate, and MapRange,   *)
(*                        the arena growing for it), cleanup (SweepPage,   *)
(*                        UnmapRecord), reset (Reset), sweep (Sweep) --    *)
(*                        and takes every drop so far; so a bind may       *)
(*                        take, and a sweep give back, the very slice or   *)
(*                        page whose taint its own discovery just cleared  *)
(*                        (reach/LifecycleEager_*_clears.cfg show both).   *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   Byte offsets inside a slice, alignment and padding (sizes are in      *)
(*   alignment units), the exclusive pool (a sliced pool that never        *)
(*   splits), the manager's routing ladder, size bins and the C++ pool's   *)
(*   short list of recently released slices (which free slice a reserve    *)
(*   picks is left open), storage failure (P3: OutOfMemory changes         *)
(*   nothing), threads (a drop is one atomic step), a launch writing a     *)
(*   slice whose last handle another thread dropped during the launch      *)
(*   (only live allocations are written here).                             *)
(*                                                                         *)
(* Bounds: 3 allocations and 2 failures over a behaviour, and              *)
(*   Lifecycle.cfg       Discovery "any",   2 pages of 2 units, 2 handles  *)
(*   LifecycleWide.cfg   Discovery "any",   1 page of 3 units              *)
(*   LifecycleEager.cfg  Discovery "eager", 2 pages of 2 units, with       *)
(*                       liveness                                          *)
(*   LifecycleEagerWide.cfg  "eager",       1 page of 3 units              *)
(*   LifecycleLive.cfg   Discovery "any",   1 page of 3 units, liveness    *)
(*   LifecycleDeep.cfg   Discovery "any", 2 pages of 4 units, 6            *)
(*                       allocations, 4 failures, 2 handles: random        *)
(*                       simulation for a fixed time                       *)
(*   LifecycleNeverWritten.cfg      FreshBytes "never_written", "eager",   *)
(*                       2 pages of 2 units, 1 launch failure              *)
(*   LifecycleNeverWrittenLazy.cfg  FreshBytes "never_written", "any",     *)
(*                       1 page of 3 units, 1 launch failure               *)
(* (1 handle per allocation where not said: a second handle only delays    *)
(* the drop that matters.)  The last page slot is always the arena's       *)
(* reservation, so the one-page cfgs (Wide, Live) check a reservation      *)
(* alone, and the two-page ones a page of memory next to one.  Together: a *)
(* page swept while another holds allocations, three-slice pages (a middle *)
(* slice coalescing both ways), a failure carried by two slices, reset     *)
(* with handles outstanding, dropped slices whose taint waits for each     *)
(* later P1 point, a cloned handle whose drop is not the last, a tainted   *)
(* free slice unmapped, mapping next to a free slice.  Not covered         *)
(* exhaustively: more than 3 allocations or 2 failures in a behaviour,     *)
(* larger pages, two unmapped neighbours merging (the C++ carve_unmapped   *)
(* merges them; here they stay two records).                               *)
(*                                                                         *)
(* Liveness (LiveSpec = Spec /\ Fairness: weak fairness of discovery, and  *)
(* when discovery is lazy of every page's sweep): EventuallyFreed (eager:  *)
(* a failure whose carriers are all dropped is eventually gone) and        *)
(* R4_EventuallyEmpty (once no handle is held again, the graph empties).   *)
(*                                                                         *)
(* Mutations (proofs/mutants/Lifecycle_*.cfg):                             *)
(*   "bind_keeps_taint"        bind does not clear the reused slice        *)
(*   "split_remainder_keeps"   the remainder of a split keeps old claims   *)
(*   "split_loses_remainder"   a split forgets to record the remainder     *)
(*   "coalesce_forgets_untag"  the absorbed slice's claims vanish untagged *)
(*   "merge_keeps_taint"       a merged slice keeps its left half's claims *)
(*   "tombstone_keeps_taint"   tombstoning does not clear                  *)
(*   "sweep_forgets_untag"     page release drops claims without untags    *)
(*   "destroy_forgets_free"    reset/destruction drops the free slices'    *)
(*                             claims without untags                       *)
(*   "discovery_keeps_taint"   eager discovery frees the slice uncleared   *)
(*   "nw_discovery_skips" (never-written mode) discovery never takes a     *)
(*                       drop whose slice carries only the NeverWritten    *)
(*                       node's claims (liveness only)                     *)
(*   "discovery_skips_tainted" discovery never takes a drop whose slice is *)
(*                             tainted: every invariant holds, only the    *)
(*                             liveness properties reject it               *)
(*   "unmap_keeps_taint"       unmapping a free record keeps its claims    *)
(*   "nw_fresh_not_claimed"    (never-written mode) a fresh allocation is  *)
(*                             bound clean, not claimed by the node        *)
(*   "nw_pruned_while_carried" (never-written mode) a write that takes an  *)
(*                             allocation's never-written claim prunes the *)
(*                             node, though other allocations carry it     *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS FreshBytes,   \* "written" (D1: fresh memory counts as written) or
                        \* "never_written" (issue 15: see below)
          NumPages,     \* page slots 1..NumPages
          PageSize,     \* units per page
          MaxAllocs,    \* allocation ids 1..MaxAllocs over a behaviour
          MaxFailures,  \* failure ids 1..MaxFailures over a behaviour
          MaxHandles,   \* handles per allocation at once
          Discovery,    \* "any" or "eager"
          Mutation

ASSUME Discovery \in {"any", "eager"}
ASSUME FreshBytes \in {"written", "never_written"}

Pages    == 1..NumPages
\* The last page slot is the arena's reservation (address space mapped on
\* demand); the others are pages of memory.  A one-page configuration
\* models a reservation alone.
ReservationPages == {NumPages}
AllocIds == 1..MaxAllocs
FailIds  == 1..MaxFailures
Eager    == Discovery = "eager"

(***************************************************************************)
(* The never-written mode (issue 15).  FreshBytes = "written" is today's   *)
(* behaviour and every existing cfg's.  Under "never_written" the bytes of *)
(* a fresh allocation are claimed, on bind, by ONE per-device failure of   *)
(* kind NeverWritten: a single graph node (here the id NW, beyond the      *)
(* launch failures), minted lazily by the first bind that needs it         *)
(* (tags[NW] going from 0 to 1), tagged once by every allocation that      *)
(* still carries never-written bytes, and gone exactly when the last such  *)
(* carrier lets go of it: a host write or successful launch releases the   *)
(* bytes (T2: Write), a failed launch steals them (Fail), or the           *)
(* allocation ends and its slice is cleared at a P1 point (bind,           *)
(* coalesce, tombstone, sweep, unmap, destruction).  A skipped launch that *)
(* read such bytes spreads NW to its outputs (S1, Spread) like any stale   *)
(* read.  It is never replaced (Scopes.tla checks that: G4 replaces only a *)
(* provisional) nor pruned while carried (N1_NeverWrittenLivesWhileCarried *)
(* below, with P1_NoTagOutlivesCarrier).                                   *)
(***************************************************************************)
NWMode == FreshBytes = "never_written"
NW     == MaxFailures + 1
TagIds == IF NWMode THEN FailIds \cup {NW} ELSE FailIds
\* What a fresh allocation a is bound with: nothing, or the node's claim.
FreshClaims(a) ==
    IF NWMode /\ Mutation # "nw_fresh_not_claimed" THEN {<<NW, a>>} ELSE {}

VARIABLES layout, tombs, handles, pending, nextAlloc, tags, nextFail
vars == <<layout, tombs, handles, pending, nextAlloc, tags, nextFail>>

Rec(size, state, alloc, claims) ==
    [size |-> size, state |-> state, alloc |-> alloc, claims |-> claims]

LivePages == {p \in Pages : layout[p] # <<>>}
Slots == UNION {{<<p, i>> : i \in DOMAIN layout[p]} : p \in Pages}
At(s) == layout[s[1]][s[2]]
BoundSlots(a) == {s \in Slots : At(s).state = "bound" /\ At(s).alloc = a}
IsBoundOnPage(a) == BoundSlots(a) # {}
SlotOf(a) == CHOOSE s \in BoundSlots(a) : TRUE
Tombstoned(a) == \E t \in tombs : t.alloc = a

\* Sequence surgery.
Replace(seq, i, with) == SubSeq(seq, 1, i - 1) \o with \o SubSeq(seq, i + 1, Len(seq))
Replace2(seq, i, with) == SubSeq(seq, 1, i - 1) \o with \o SubSeq(seq, i + 2, Len(seq))

\* Tag arithmetic.  `lost` is a sequence of claim sets being dropped (one per
\* record), `gained` a set of failures each tagged once.
Fails(claims) == {c[1] : c \in claims}
CountIn(sets, f) == Cardinality({i \in DOMAIN sets : f \in Fails(sets[i])})
Retag(t, gained, lost) ==
    [f \in TagIds |-> t[f] + (IF f \in gained THEN 1 ELSE 0) - CountIn(lost, f)]
ClaimsOf(recs) == [i \in DOMAIN recs |-> recs[i].claims]

\* Every record on every page of layout `lay`, page by page.
RECURSIVE RecordsUpTo(_, _)
RecordsUpTo(lay, k) == IF k = 0 THEN <<>> ELSE RecordsUpTo(lay, k - 1) \o lay[k]
AllRecordsIn(lay) == RecordsUpTo(lay, NumPages)

\* The slot of allocation a in layout `lay` (it must be bound there).
SlotsIn(lay) == UNION {{<<p, i>> : i \in DOMAIN lay[p]} : p \in Pages}
SlotIn(lay, a) ==
    CHOOSE s \in SlotsIn(lay) : lay[s[1]][s[2]].state = "bound" /\ lay[s[1]][s[2]].alloc = a

Init ==
    /\ layout = [p \in Pages |-> <<>>]
    /\ tombs = {}
    /\ handles = [a \in AllocIds |-> 0]
    /\ pending = {}
    /\ nextAlloc = 1
    /\ tags = [f \in TagIds |-> 0]
    /\ nextFail = 1

(***************************************************************************)
(* Discovery, as a function of the pool's state [layout, tombs, tags], so  *)
(* that a pool call can discover before it does its own work.             *)
(***************************************************************************)
PoolState == [layout |-> layout, tombs |-> tombs, tags |-> tags]

\* Coalescing free records j and j+1 of a page (both free): the merged record
\* starts clean and both records' claims are untagged (P1 on coalesce).
MergeAt(recs, j) ==
    LET l == recs[j]
        r == recs[j + 1]
        mergedClaims == IF Mutation = "merge_keeps_taint" THEN l.claims ELSE {}
    IN  Replace2(recs, j, << Rec(l.size + r.size, "free", 0, mergedClaims) >>)
MergeLost(recs, j) ==
    LET l == recs[j]
        r == recs[j + 1]
    IN  CASE Mutation = "coalesce_forgets_untag" -> << l.claims >>
          [] Mutation = "merge_keeps_taint"      -> << r.claims >>
          [] OTHER                               -> << l.claims, r.claims >>

\* Eager discovery frees record i of page p and merges it with free
\* neighbours at once (SlicedPool::release).
FreeAndMerge(recs, i) ==
    LET hasL == i > 1 /\ recs[i - 1].state = "free"
        hasR == i < Len(recs) /\ recs[i + 1].state = "free"
        s1   == IF hasL THEN MergeAt(recs, i - 1) ELSE recs
        k    == IF hasL THEN i - 1 ELSE i
        l1   == IF hasL THEN MergeLost(recs, i - 1) ELSE <<>>
        s2   == IF hasR THEN MergeAt(s1, k) ELSE s1
        l2   == IF hasR THEN MergeLost(s1, k) ELSE <<>>
    IN  [recs |-> s2, lost |-> l1 \o l2]

\* The pool, in state st, discovers that allocation a's last handle is gone;
\* clearNow: its taint is cleared at once (always, when eager).
DiscoverIn(st, a, clearNow) ==
    IF \E t \in st.tombs : t.alloc = a
    THEN \* The record itself is recycled; it was cleared when tombstoned.
         LET t == CHOOSE t \in st.tombs : t.alloc = a
         IN  [layout |-> st.layout, tombs |-> st.tombs \ {t},
              tags |-> Retag(st.tags, {}, << t.claims >>)]
    ELSE LET s       == SlotIn(st.layout, a)
             r       == st.layout[s[1]][s[2]]
             cleared == clearNow /\ Mutation # "discovery_keeps_taint"
             \* a cleared record no longer remembers its allocation
             freed   == IF cleared THEN Rec(r.size, "free", 0, {})
                        ELSE Rec(r.size, "free", a, r.claims)
             recs    == [st.layout[s[1]] EXCEPT ![s[2]] = freed]
             res     == IF Eager THEN FreeAndMerge(recs, s[2])
                        ELSE [recs |-> recs, lost |-> <<>>]
         IN  [layout |-> [st.layout EXCEPT ![s[1]] = res.recs],
              tombs  |-> st.tombs,
              tags   |-> Retag(st.tags, {},
                               (IF cleared THEN << r.claims >> ELSE <<>>) \o res.lost)]

\* Whether discovery takes a's drop.  The broken variant
\* "discovery_skips_tainted" leaves a dropped allocation whose slice still
\* carries claims pending for ever: every invariant still holds (they all
\* wait for pending = {}), only the liveness properties see it.
\* (IF, not \/: TLC explores every disjunct of an action.)
\* "nw_discovery_skips" does so only for a drop whose slice carries nothing
\* but never-written claims: the NeverWritten node outlives its carriers and
\* only EventuallyFreed in never-written mode sees it
\* (LifecycleNeverWritten.cfg).
Discoverable(st, a) ==
    IF Mutation \notin {"discovery_skips_tainted", "nw_discovery_skips"}
       \/ \E t \in st.tombs : t.alloc = a
    THEN TRUE
    ELSE LET s == SlotIn(st.layout, a)
             claims == st.layout[s[1]][s[2]].claims
         IN  IF Mutation = "discovery_skips_tainted" THEN claims = {}
             ELSE ~(claims # {} /\ Fails(claims) = {NW})

\* Every discoverable drop in `as`, in ascending order (the C++ takes the
\* whole inbox at once; the order does not change the result).
RECURSIVE DiscoverAllIn(_, _)
DiscoverAllIn(st, as) ==
    IF as = {} THEN st
    ELSE LET a == CHOOSE x \in as : \A y \in as : x <= y
         IN  DiscoverAllIn(IF Discoverable(st, a) THEN DiscoverIn(st, a, TRUE) ELSE st,
                           as \ {a})

\* What a pool call works on.  Eager (the C++ MemoryManager): every call --
\* allocate, cleanup, reset, sweep -- first discovers every drop so far
\* (discover_released()), so its own work sees their slices freed, cleared
\* and merged.  Lazy ("any"): discovery is a step of its own.
Called == IF Eager THEN DiscoverAllIn(PoolState, pending) ELSE PoolState
CalledPending ==
    IF Eager THEN {a \in pending : ~Discoverable(PoolState, a)} ELSE pending
SetPool(st) == layout' = st.layout /\ tombs' = st.tombs /\ tags' = st.tags

(***************************************************************************)
(* Memory.                                                                 *)
(***************************************************************************)
NewPage(p) ==
    /\ p \notin ReservationPages
    /\ layout[p] = <<>>
    /\ layout' = [layout EXCEPT ![p] = << Rec(PageSize, "free", 0, {}) >>]
    /\ UNCHANGED <<tombs, handles, pending, nextAlloc, tags, nextFail>>

\* A reservation: address space only, one unmapped record.
NewReservation(p) ==
    /\ p \in ReservationPages
    /\ layout[p] = <<>>
    /\ layout' = [layout EXCEPT ![p] = << Rec(PageSize, "unmapped", 0, {}) >>]
    /\ UNCHANGED <<tombs, handles, pending, nextAlloc, tags, nextFail>>

\* allocate(): (eager: discover,) then reserve-then-bind n units on free
\* slice i of page p: split off the rest (a fresh record, clean), bind the
\* front to a fresh allocation id and clear whatever the old slice still
\* carried (P1 on bind); in never-written mode the front is claimed whole
\* by the never-written node (minted now if no allocation carries it).
Allocate(p, i, n) ==
    /\ nextAlloc <= MaxAllocs
    /\ LET st == Called
           lay == st.layout
       IN  /\ i \in DOMAIN lay[p]
           /\ LET r == lay[p][i]
                  a == nextAlloc
                  keep == Mutation = "bind_keeps_taint"
                  restClaims == IF Mutation = "split_remainder_keeps" THEN r.claims ELSE {}
                  front == Rec(n, "bound", a,
                               (IF keep THEN r.claims ELSE {}) \cup FreshClaims(a))
                  rest  == IF r.size > n /\ Mutation # "split_loses_remainder"
                           THEN << Rec(r.size - n, "free", 0, restClaims) >> ELSE <<>>
              IN  /\ r.state = "free"
                  /\ n <= r.size
                  /\ layout' = [lay EXCEPT ![p] = Replace(lay[p], i, <<front>> \o rest)]
                  /\ tags' = Retag(st.tags, Fails(FreshClaims(a)),
                                   IF keep THEN <<>> ELSE << r.claims >>)
                  /\ tombs' = st.tombs
    /\ pending' = CalledPending
    /\ handles' = [handles EXCEPT ![nextAlloc] = 1]
    /\ nextAlloc' = nextAlloc + 1
    /\ UNCHANGED nextFail

Clone(a) ==
    /\ handles[a] \in 1..(MaxHandles - 1)
    /\ handles' = [handles EXCEPT ![a] = @ + 1]
    /\ UNCHANGED <<layout, tombs, pending, nextAlloc, tags, nextFail>>

DropHandle(a) ==
    /\ handles[a] > 0
    /\ handles' = [handles EXCEPT ![a] = @ - 1]
    /\ pending' = IF handles[a] = 1 THEN pending \cup {a} ELSE pending
    /\ UNCHANGED <<layout, tombs, nextAlloc, tags, nextFail>>

\* Lazy: the pool discovers that allocation a's last handle is gone, and
\* may clear its taint now or leave it to a later P1 point.
Discover(a) ==
    /\ ~Eager
    /\ a \in pending
    /\ Discoverable(PoolState, a)
    /\ \E clearNow \in BOOLEAN : SetPool(DiscoverIn(PoolState, a, clearNow))
    /\ pending' = pending \ {a}
    /\ UNCHANGED <<handles, nextAlloc, nextFail>>

\* Eager: sweep() (the device calls it at the start of every launch, write
\* and read) discovers every drop so far.
Sweep ==
    /\ Eager
    /\ \E a \in pending : Discoverable(PoolState, a)
    /\ SetPool(Called)
    /\ pending' = CalledPending
    /\ UNCHANGED <<handles, nextAlloc, nextFail>>

\* Coalesce two free neighbours (a step of its own when discovery is lazy).
Coalesce(p, j) ==
    /\ ~Eager
    /\ j \in 1..(Len(layout[p]) - 1)
    /\ layout[p][j].state = "free" /\ layout[p][j + 1].state = "free"
    /\ layout' = [layout EXCEPT ![p] = MergeAt(layout[p], j)]
    /\ tags' = Retag(tags, {}, MergeLost(layout[p], j))
    /\ UNCHANGED <<tombs, handles, pending, nextAlloc, nextFail>>

\* cleanup(): (eager: discover,) then give back a page (or a reservation)
\* that holds no allocation; every record on it is cleared (P1 on page
\* sweep).
SweepPage(p) ==
    /\ LET st == Called
           lay == st.layout
       IN  /\ lay[p] # <<>>
           /\ \A i \in DOMAIN lay[p] : lay[p][i].state \in {"free", "unmapped"}
           /\ layout' = [lay EXCEPT ![p] = <<>>]
           /\ tags' = IF Mutation = "sweep_forgets_untag" THEN st.tags
                      ELSE Retag(st.tags, {}, ClaimsOf(lay[p]))
           /\ tombs' = st.tombs
    /\ pending' = CalledPending
    /\ UNCHANGED <<handles, nextAlloc, nextFail>>

\* allocate() when no free slice fits: (eager: discover,) then the arena
\* grows -- the front n units of unmapped record i get memory and become a
\* fresh free record (clean); the rest stays unmapped.  Eager: the new
\* record merges with a free neighbour at once (ArenaPool::grow_mapped).
\* The bind that follows is an Allocate of its own.
MapRange(p, i, n) ==
    /\ p \in ReservationPages
    /\ LET st  == Called
           lay == st.layout
       IN  /\ i \in DOMAIN lay[p]
           /\ lay[p][i].state = "unmapped"
           /\ n <= lay[p][i].size
           /\ LET r     == lay[p][i]
                  fresh == Rec(n, "free", 0, {})
                  rest  == IF r.size > n THEN << Rec(r.size - n, "unmapped", 0, {}) >>
                           ELSE <<>>
                  recs  == Replace(lay[p], i, << fresh >> \o rest)
                  res   == IF Eager THEN FreeAndMerge(recs, i)
                           ELSE [recs |-> recs, lost |-> <<>>]
              IN  /\ layout' = [lay EXCEPT ![p] = res.recs]
                  /\ tags' = Retag(st.tags, {}, res.lost)
                  /\ tombs' = st.tombs
    /\ pending' = CalledPending
    /\ UNCHANGED <<handles, nextAlloc, nextFail>>

\* cleanup() (or allocate() out of memory): (eager: discover,) then a free
\* record's memory goes back to storage and it becomes unmapped (P1 on
\* unmap: its claims go, untagged).
UnmapRecord(p, i) ==
    /\ p \in ReservationPages
    /\ LET st  == Called
           lay == st.layout
       IN  /\ i \in DOMAIN lay[p]
           /\ lay[p][i].state = "free"
           /\ LET r    == lay[p][i]
                  keep == Mutation = "unmap_keeps_taint"
              IN  /\ layout' = [lay EXCEPT ![p][i] =
                                   Rec(r.size, "unmapped", 0, IF keep THEN r.claims ELSE {})]
                  /\ tags' = IF keep THEN st.tags ELSE Retag(st.tags, {}, << r.claims >>)
                  /\ tombs' = st.tombs
    /\ pending' = CalledPending
    /\ UNCHANGED <<handles, nextAlloc, nextFail>>

\* reset() / the manager's destructor: discover what was dropped (lazy:
\* nothing may be pending), tombstone every live allocation -- its taint is
\* cleared (P1 on tombstone) and its handles live on, seeing NotFound -- and
\* give every page back, clearing every free record (P1 on destruction).
Reset ==
    /\ ~Eager => pending = {}
    /\ LET st == Called
           lay == st.layout
           live == {s \in SlotsIn(lay) : lay[s[1]][s[2]].state = "bound"}
           keep == Mutation = "tombstone_keeps_taint"
           newTombs == {[alloc |-> lay[s[1]][s[2]].alloc,
                         claims |-> IF keep THEN lay[s[1]][s[2]].claims ELSE {}] : s \in live}
           all == AllRecordsIn(lay)
           lostRecs == CASE keep -> SelectSeq(all, LAMBDA r : r.state = "free")
                         [] Mutation = "destroy_forgets_free" ->
                              SelectSeq(all, LAMBDA r : r.state = "bound")
                         [] OTHER -> all
       IN /\ tombs' = st.tombs \cup newTombs
          /\ tags' = Retag(st.tags, {}, ClaimsOf(lostRecs))
    /\ layout' = [p \in Pages |-> <<>>]
    /\ pending' = CalledPending
    /\ UNCHANGED <<handles, nextAlloc, nextFail>>

(***************************************************************************)
(* Taint on live allocations (the device's T1/T2 calls, abstracted).       *)
(***************************************************************************)
Live(a) == handles[a] > 0 /\ IsBoundOnPage(a)

\* a's claims become `keep` (a subset of its claims: those that still own
\* some byte) plus a claim of f (0: none).  f is tagged if a did not carry
\* it; every failure a no longer carries is untagged once.
SetClaims(a, keep, f) ==
    LET s == SlotOf(a)
        before == At(s).claims
        after == IF f = 0 \/ f \in Fails(keep) THEN keep ELSE keep \cup {<<f, a>>}
        t2 == Retag(tags, Fails(after) \ Fails(before),
                    << {c \in before : c[1] \notin Fails(after)} >>)
        \* nw_pruned_while_carried: taking a's never-written claim prunes
        \* the node outright (all its tags), as if it were a's alone.
        pruneNW == Mutation = "nw_pruned_while_carried" /\ NWMode
                   /\ NW \in Fails(before) /\ NW \notin Fails(after)
    IN  /\ layout' = [layout EXCEPT ![s[1]][s[2]].claims = after]
        /\ tags' = IF pruneNW THEN [t2 EXCEPT ![NW] = 0] ELSE t2

\* A launch writing a fails with a new failure; `keep` are the claims that
\* still own some byte afterwards.
Fail(a, keep) ==
    /\ nextFail <= MaxFailures
    /\ SetClaims(a, keep, nextFail)
    /\ nextFail' = nextFail + 1
    /\ UNCHANGED <<tombs, handles, pending, nextAlloc>>

\* A skipped launch claims bytes of a for the root failure f of the bytes it
\* read (S1): some live allocation carries f.
Spread(a, f, keep) ==
    /\ \E b \in AllocIds : Live(b) /\ f \in Fails(At(SlotOf(b)).claims)
    /\ SetClaims(a, keep, f)
    /\ UNCHANGED <<tombs, handles, pending, nextAlloc, nextFail>>

\* A successful write releases bytes of a; `keep` still own some byte.
Write(a, keep) ==
    /\ SetClaims(a, keep, 0)
    /\ UNCHANGED <<tombs, handles, pending, nextAlloc, nextFail>>

Next ==
    \/ \E p \in Pages : NewPage(p) \/ NewReservation(p) \/ SweepPage(p)
    \/ \E p \in Pages, i \in 1..PageSize : UnmapRecord(p, i)
    \/ \E p \in Pages, i \in 1..PageSize, n \in 1..PageSize : MapRange(p, i, n)
    \/ \E p \in Pages, i \in 1..PageSize, n \in 1..PageSize : Allocate(p, i, n)
    \/ \E p \in Pages, j \in 1..PageSize : Coalesce(p, j)
    \/ \E a \in AllocIds : Clone(a) \/ DropHandle(a) \/ Discover(a)
    \/ Sweep
    \/ Reset
    \/ \E a \in AllocIds : Live(a) /\
          LET mine == At(SlotOf(a)).claims IN
          \E keep \in SUBSET mine :
             \/ Fail(a, keep)
             \/ Write(a, keep)
             \/ \E f \in TagIds : Spread(a, f, keep)

Spec == Init /\ [][Next]_vars

\* Fairness for the liveness properties.  Discovery is never put off for
\* ever (lazy: each drop; eager: the device's sweep()).  Lazy discovery may
\* leave a slice's taint to a later P1 point, so a page holding no
\* allocation is also swept eventually (per page).
Fairness ==
    /\ \A a \in AllocIds : WF_vars(Discover(a))
    /\ WF_vars(Sweep)
    /\ ~Eager => \A p \in Pages : WF_vars(SweepPage(p))
LiveSpec == Spec /\ Fairness

(***************************************************************************)
(* Invariants.                                                             *)
(***************************************************************************)
Records == {At(s) : s \in Slots}
CarrierCount(f) ==
    Cardinality({s \in Slots : f \in Fails(At(s).claims)})
    + Cardinality({t \in tombs : f \in Fails(t.claims)})

TypeOK ==
    /\ \A s \in Slots : At(s).state \in {"free", "bound", "unmapped"}
                        /\ At(s).claims \subseteq TagIds \X (0..MaxAllocs)
    /\ handles \in [AllocIds -> 0..MaxHandles]
    /\ pending \subseteq AllocIds
    /\ tags \in [TagIds -> Nat]

\* P2: the slices of a page tile it exactly (positive sizes summing to the
\* page), and a live allocation is bound to exactly one slice.
RECURSIVE SumSizes(_)
SumSizes(recs) == IF recs = <<>> THEN 0 ELSE Head(recs).size + SumSizes(Tail(recs))
P2_Tiling ==
    /\ \A p \in LivePages : SumSizes(layout[p]) = PageSize
    /\ \A s \in Slots : At(s).size >= 1
    /\ \A a \in AllocIds :
         (handles[a] > 0 \/ a \in pending) =>
             Cardinality(BoundSlots(a)) + Cardinality({t \in tombs : t.alloc = a}) = 1

\* P1 and R1 over slice records: a failure's tag count is the number of
\* slice records (on pages or tombstoned) whose taint claims it, and a
\* failure with no such record has no node.  A record that goes away
\* (coalesced, swept, recycled) takes no tag with it.
P1_NoTagOutlivesCarrier ==
    \A f \in TagIds : tags[f] = CarrierCount(f)

\* P1: a slice only carries claims made on the allocation it holds (or last
\* held): bind starts clean, and a split remainder or a merged slice (alloc
\* 0) carries nothing.
P1_ClaimsBelongToAllocation ==
    \A s \in Slots : \A c \in At(s).claims : c[2] = At(s).alloc /\ c[2] # 0

\* P1: a tombstoned slice is clean.
P1_TombstonesClean == \A t \in tombs : t.claims = {}

\* P1: address space with no memory behind it carries no taint and names no
\* allocation (unmapping is a P1 clear point; mapping starts clean).
P1_UnmappedClean ==
    \A s \in Slots : At(s).state = "unmapped" => At(s).claims = {} /\ At(s).alloc = 0

\* P1 (the C++ pool, eager discovery): a free slice is clean, and no two
\* free slices are neighbours.
P1_FreeSlicesClean ==
    \A p \in LivePages : \A i \in DOMAIN layout[p] :
        /\ layout[p][i].state = "free" => layout[p][i].claims = {}
        /\ i < Len(layout[p]) => ~(layout[p][i].state = "free" /\ layout[p][i + 1].state = "free")

(***************************************************************************)
(* The never-written node (issue 15; trivially true when the mode is off). *)
(***************************************************************************)
\* N1: the node lives exactly as long as some record carries it -- it has a
\* tag iff a bound, free or tombstoned record claims it -- and only
\* records of allocations claim it (never a split remainder, a merged or a
\* freshly mapped slice: P1_ClaimsBelongToAllocation).
N1_NeverWrittenLivesWhileCarried ==
    NWMode => ((tags[NW] > 0) <=> (CarrierCount(NW) > 0))

\* N1 (a step property): every bind of a fresh allocation claims it whole
\* for the never-written node and for nothing else, whatever the slice held.
N1_FreshClaimedByNeverWritten ==
    [][ (NWMode /\ nextAlloc' # nextAlloc) =>
          \E s \in SlotsIn(layout') :
             /\ layout'[s[1]][s[2]].state = "bound"
             /\ layout'[s[1]][s[2]].alloc = nextAlloc
             /\ layout'[s[1]][s[2]].claims = {<<NW, nextAlloc>>} ]_vars

\* Witness (proofs/reach/): the node is never gone once minted.  A never-
\* written cfg must VIOLATE it: the last carrier does let go of it.
NoNeverWrittenRelease ==
    [][ (NWMode /\ tags[NW] > 0) => tags'[NW] > 0 ]_vars

NoHandles == \A a \in AllocIds : handles[a] = 0
GraphEmpty == \A f \in TagIds : tags[f] = 0

\* R4: with every handle dropped, every drop discovered and every page
\* swept, the graph is empty.
R4_EmptyWhenDrained ==
    (NoHandles /\ pending = {} /\ LivePages = {}) => GraphEmpty

\* R4 (the C++ pool): with every handle dropped and sweep() called (every
\* drop discovered), the graph is empty even before pages go back.
R4_EmptyAfterSweep ==
    (NoHandles /\ pending = {}) => GraphEmpty

(***************************************************************************)
(* Liveness (under Fairness): the promise the refcount design exists for.  *)
(***************************************************************************)
\* Some allocation a caller can still reach (a handle, bound on a page)
\* carries f: only such a carrier can spread f further (S1 reads it).
LiveCarrier(f) == \E a \in AllocIds : Live(a) /\ f \in Fails(At(SlotOf(a)).claims)

\* Once every carrier of a failure is gone (its handles dropped), the
\* failure is eventually gone too.  Holds when discovery clears (eager, the
\* C++ pool) under weak fairness of discovery alone; with lazy discovery a
\* dropped slice's taint may wait for a P1 point that a neighbour living
\* for ever postpones, so there only R4_EventuallyEmpty is promised.
\* Never-written mode: the NeverWritten node is one id for the whole device,
\* and a new allocation bound later carries it again -- a new carrier, not
\* an old one left behind -- so "gone" reads "gone, or carried by a live
\* allocation again".  For a launch failure the second disjunct never
\* comes true (a failure only spreads from a live carrier), so there it is
\* the plain promise.
EventuallyFreed ==
    \A f \in TagIds : (tags[f] > 0 /\ ~LiveCarrier(f)) ~> (tags[f] = 0 \/ LiveCarrier(f))

\* R4 as liveness: once no handle is ever held again, the graph empties and
\* stays empty.
R4_EventuallyEmpty == (<>[]NoHandles) => <>[]GraphEmpty

(***************************************************************************)
(* Reachability witnesses (proofs/reach/): each says that something never *)
(* happens; the config named there must VIOLATE it, which shows the       *)
(* config reaches it, so the invariants above are not checked vacuously.  *)
(***************************************************************************)
\* A pool call that binds never drops a tag (eager: the drops its
\* discovery clears; lazy: the slice's own leftover taint).
NoBindClears ==
    [][\A p \in Pages, i \in 1..PageSize, n \in 1..PageSize :
          Allocate(p, i, n) => \A f \in TagIds : tags'[f] >= tags[f]]_vars
\* A pool call that gives a page back never drops a tag.
NoSweepClears ==
    [][\A p \in Pages : SweepPage(p) => \A f \in TagIds : tags'[f] >= tags[f]]_vars
\* A free record's memory going back to storage never drops a tag (the
\* arena's unmap as a P1 clear point).
NoUnmapClears ==
    [][\A p \in Pages, i \in 1..PageSize :
          UnmapRecord(p, i) => \A f \in TagIds : tags'[f] >= tags[f]]_vars
\* Mapping a range never merges the fresh record with a free neighbour (the
\* layout always gains the record).
NoMapMerges ==
    [][\A p \in Pages, i \in 1..PageSize, n \in 1..PageSize :
          MapRange(p, i, n) =>
             LET before == Called.layout[p]   \* after the call's own discovery
             IN  \/ Len(layout'[p]) > Len(before)
                 \/ n = before[i].size /\ Len(layout'[p]) = Len(before)]_vars
\* No allocation ever has two handles (Clone never runs).
NoClone == \A a \in AllocIds : handles[a] <= 1

=============================================================================
