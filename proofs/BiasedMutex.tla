----------------------------- MODULE BiasedMutex -----------------------------
(***************************************************************************)
(* The Device's lock (O5) as it is now: core/include/taintpool/detail/      *)
(* biased_mutex.hpp, a FastMutex with a bias.  The one thread that uses a  *)
(* Device takes the lock with plain stores and loads; any other thread     *)
(* takes the FastMutex and revokes the bias for good (membarrier, then a   *)
(* wait for the owner).  The owner's side has no hardware fence, so this   *)
(* spec, unlike FastMutex.tla, models the memory: every store goes to its  *)
(* thread's store buffer (FIFO, drained to memory one entry at a time in   *)
(* any interleaving), and a load reads the thread's own newest buffered    *)
(* store to that word, else memory — x86's TSO, where a load may pass the  *)
(* thread's own earlier store to another word, the one reordering a Dekker *)
(* pair must defeat.                                                       *)
(*                                                                         *)
(* What it models                                                          *)
(*   mem          the three words in memory: owner (a thread, or None),    *)
(*                inside (0/1), revoked (0/1)                              *)
(*   buf[t]       t's store buffer: a sequence of <<word, value>>, at most *)
(*                BufMax entries (a full buffer stalls the next store, as  *)
(*                hardware does)                                           *)
(*   inner        the FastMutex: its holder or None.  Taking and giving it *)
(*                back are locked instructions, so each needs t's buffer   *)
(*                drained first (a full fence); FastMutex.tla checks the   *)
(*                FastMutex itself                                         *)
(*   byOwner[t]   held_by_owner_: t holds the lock by the bias             *)
(*   pc[t]        one label per access:                                    *)
(*     "idle"     outside; may call lock()                                 *)
(*     "check"    load owner: t's own token -> "announce", else          *)
(*                "checkrev"                                               *)
(*     "checkrev" load revoked: 1 -> "direct", else "slow"                 *)
(*     "announce" store inside := 1 (buffered)                             *)
(*     "look"     load revoked: 0 -> holds the lock by the bias; 1 ->      *)
(*                "backoff"                                                *)
(*     "backoff"  store inside := 0 (buffered), then "direct"              *)
(*     "direct"   take the FastMutex and hold: the bias is gone for good   *)
(*     "slow"     take the FastMutex, then "claim"                         *)
(*     "claim"    under it, load owner (and revoked): None -> claim the    *)
(*                bias unless revoked (store owner := t) and hold; another *)
(*                thread -> "mark"                                         *)
(*     "mark"     store revoked := 1 with a full fence (a seq_cst store),  *)
(*                then membarrier: every thread's buffer drains            *)
(*     "wait"     load inside until 0 (acquire)                            *)
(*     "clear"    store owner := None (buffered), then hold                *)
(*     "cs"       holding the lock                                         *)
(*     "unlock"   by the bias: store inside := 0 (buffered, a release      *)
(*                store); else give the FastMutex back                     *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   The FastMutex's own states (FastMutex.tla).  Weaker memory than TSO   *)
(*   (AArch64: the argument is the same — membarrier's barrier on the      *)
(*   owner's CPU orders its store before its load — but not modelled).     *)
(*   membarrier's barrier is taken as happening at the revoker's "mark"    *)
(*   step for every thread at once: each thread's accesses before it are   *)
(*   drained, its later loads see memory as it is then; a thread that is   *)
(*   not running passes a barrier when it is switched out, which is the    *)
(*   same.  Thread creation and exit (a token is a live thread's).         *)
(*                                                                         *)
(* Properties                                                              *)
(*   O5_MutualExclusion   at most one thread holds the lock                *)
(*   O5_OwnerWordMeaning  a thread holding by the bias is the owner in its *)
(*                        own view, and whoever holds the FastMutex then   *)
(*                        is on its way to revoke (claim, mark, wait)      *)
(*   O5_Progress          (liveness) a thread in lock() leads to some      *)
(*                        thread holding it                                *)
(*                                                                         *)
(* Mutations (proofs/mutants/BiasedMutex_*.cfg):                           *)
(*   "no_membarrier"         the revoker fences only itself, so the        *)
(*                           owner's announcement may still sit in its     *)
(*                           buffer when the revoker looks                 *)
(*   "no_wait"               the revoker does not wait for the owner to    *)
(*                           leave                                         *)
(*   "look_then_announce"    the owner loads revoked before it stores      *)
(*                           inside: membarrier cannot help then           *)
(*   "direct_unrevoked"      a thread that finds another's bias takes the  *)
(*                           FastMutex alone without revoking it           *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Threads, None, BufMax, Mutation

ASSUME None \notin Threads /\ BufMax \in Nat \ {0}

VARIABLES mem, buf, inner, byOwner, pc
vars == <<mem, buf, inner, byOwner, pc>>

Words == {"owner", "inside", "revoked"}
Holding == {"cs", "unlock"}
Trying == {"check", "checkrev", "announce", "look", "backoff", "direct", "slow", "claim", "mark",
           "wait", "clear"}
Holders == {t \in Threads : pc[t] \in Holding}

Init ==
    /\ mem = [w \in Words |-> IF w = "owner" THEN None ELSE 0]
    /\ buf = [t \in Threads |-> <<>>]
    /\ inner = None
    /\ byOwner = [t \in Threads |-> FALSE]
    /\ pc = [t \in Threads |-> "idle"]

Goto(t, l) == pc' = [pc EXCEPT ![t] = l]

\* t's view of word w: its own newest buffered store to w, else memory.
Load(t, w) ==
    LET hits == {i \in 1..Len(buf[t]) : buf[t][i][1] = w}
    IN IF hits = {} THEN mem[w]
       ELSE buf[t][CHOOSE i \in hits : \A j \in hits : j <= i][2]

\* A buffered store; stalls while the buffer is full.
Store(t, w, v) ==
    /\ Len(buf[t]) < BufMax
    /\ buf' = [buf EXCEPT ![t] = Append(@, <<w, v>>)]

\* Memory after the whole of buffer b drains, in order.
RECURSIVE Apply(_, _)
Apply(m, b) == IF b = <<>> THEN m ELSE Apply([m EXCEPT ![Head(b)[1]] = Head(b)[2]], Tail(b))

\* The oldest buffered store of t reaches memory.
Drain(t) ==
    /\ buf[t] # <<>>
    /\ mem' = [mem EXCEPT ![Head(buf[t])[1]] = Head(buf[t])[2]]
    /\ buf' = [buf EXCEPT ![t] = Tail(@)]
    /\ UNCHANGED <<inner, byOwner, pc>>

Call(t) == pc[t] = "idle" /\ Goto(t, "check") /\ UNCHANGED <<mem, buf, inner, byOwner>>

Check(t) ==
    /\ pc[t] = "check"
    /\ Goto(t, IF Load(t, "owner") = t
               THEN (IF Mutation = "look_then_announce" THEN "look" ELSE "announce")
               ELSE "checkrev")
    /\ UNCHANGED <<mem, buf, inner, byOwner>>

\* Not the owner: a revoked bias means the FastMutex alone.
CheckRevoked(t) ==
    /\ pc[t] = "checkrev"
    /\ Goto(t, IF \/ Load(t, "revoked") = 1
                  \/ Mutation = "direct_unrevoked" /\ Load(t, "owner") # None
               THEN "direct" ELSE "slow")
    /\ UNCHANGED <<mem, buf, inner, byOwner>>

\* The FastMutex and nothing else (the bias is gone for good).
Direct(t) ==
    /\ pc[t] = "direct"
    /\ buf[t] = <<>>
    /\ inner = None
    /\ inner' = t
    /\ Goto(t, "cs")
    /\ UNCHANGED <<mem, buf, byOwner>>

Announce(t) ==
    /\ pc[t] = "announce"
    /\ Store(t, "inside", 1)
    /\ Goto(t, IF Mutation = "look_then_announce" THEN "cs" ELSE "look")
    /\ byOwner' = IF Mutation = "look_then_announce" THEN [byOwner EXCEPT ![t] = TRUE] ELSE byOwner
    /\ UNCHANGED <<mem, inner>>

Look(t) ==
    /\ pc[t] = "look"
    /\ IF Load(t, "revoked") = 0
       THEN IF Mutation = "look_then_announce"
            THEN Goto(t, "announce") /\ UNCHANGED byOwner
            ELSE Goto(t, "cs") /\ byOwner' = [byOwner EXCEPT ![t] = TRUE]
       ELSE Goto(t, IF Mutation = "look_then_announce" THEN "direct" ELSE "backoff")
            /\ UNCHANGED byOwner
    /\ UNCHANGED <<mem, buf, inner>>

Backoff(t) ==
    /\ pc[t] = "backoff"
    /\ Store(t, "inside", 0)
    /\ Goto(t, "direct")
    /\ UNCHANGED <<mem, inner, byOwner>>

\* The FastMutex's compare-and-swap: a locked instruction, so t's buffer is
\* drained first.
Slow(t) ==
    /\ pc[t] = "slow"
    /\ buf[t] = <<>>
    /\ inner = None
    /\ inner' = t
    /\ Goto(t, "claim")
    /\ UNCHANGED <<mem, buf, byOwner>>

Claim(t) ==
    /\ pc[t] = "claim"
    /\ LET owner == Load(t, "owner") IN
       IF owner = None
       THEN /\ IF Load(t, "revoked") = 0 THEN Store(t, "owner", t) ELSE UNCHANGED buf
            /\ Goto(t, "cs")
       ELSE /\ Goto(t, IF owner = t THEN "cs" ELSE "mark")
            /\ UNCHANGED buf
    /\ UNCHANGED <<mem, inner, byOwner>>

\* Whether buffer b holds a store to w, and the newest such value.
Has(b, w) == \E i \in 1..Len(b) : b[i][1] = w
Newest(b, w) ==
    b[CHOOSE i \in 1..Len(b) : b[i][1] = w /\ \A j \in i + 1..Len(b) : b[j][1] # w][2]

\* revoked := 1 with a full fence (the revoker's buffer drains with it),
\* then membarrier: every other thread's buffer drains too.  No two
\* threads ever have a store to the same word buffered at once
\* (BuffersDisjoint), so the order in which the buffers drain here does not
\* matter.  no_membarrier: only the revoker's own buffer drains.
Mark(t) ==
    /\ pc[t] = "mark"
    /\ LET drained == IF Mutation = "no_membarrier" THEN {t} ELSE Threads
           writer(w) == {u \in drained : Has(buf[u], w)}
       IN /\ mem' = [w \in Words |->
                        IF w = "revoked" THEN 1
                        ELSE IF writer(w) = {} THEN mem[w]
                        ELSE Newest(buf[CHOOSE u \in writer(w) : TRUE], w)]
          /\ buf' = [u \in Threads |-> IF u \in drained THEN <<>> ELSE buf[u]]
    /\ Goto(t, IF Mutation = "no_wait" THEN "clear" ELSE "wait")
    /\ UNCHANGED <<inner, byOwner>>

Wait(t) ==
    /\ pc[t] = "wait"
    /\ Load(t, "inside") = 0
    /\ Goto(t, "clear")
    /\ UNCHANGED <<mem, buf, inner, byOwner>>

Clear(t) ==
    /\ pc[t] = "clear"
    /\ Store(t, "owner", None)
    /\ Goto(t, "cs")
    /\ UNCHANGED <<mem, inner, byOwner>>

Leave(t) == pc[t] = "cs" /\ Goto(t, "unlock") /\ UNCHANGED <<mem, buf, inner, byOwner>>

\* By the bias: a plain (release) store.  Else the FastMutex's exchange: a
\* locked instruction, the buffer drained first.
Unlock(t) ==
    /\ pc[t] = "unlock"
    /\ IF byOwner[t]
       THEN /\ Store(t, "inside", 0)
            /\ byOwner' = [byOwner EXCEPT ![t] = FALSE]
            /\ UNCHANGED inner
       ELSE /\ buf[t] = <<>>
            /\ inner' = None
            /\ UNCHANGED <<buf, byOwner>>
    /\ Goto(t, "idle")
    /\ UNCHANGED mem

Step(t) == Check(t) \/ CheckRevoked(t) \/ Announce(t) \/ Look(t) \/ Backoff(t) \/ Direct(t)
           \/ Slow(t) \/ Claim(t)
           \/ Mark(t) \/ Wait(t) \/ Clear(t) \/ Leave(t) \/ Unlock(t)

Next == \E t \in Threads : Call(t) \/ Step(t) \/ Drain(t)

Spec == Init /\ [][Next]_vars
\* Every step but an idle thread's next call is weakly fair, and so is
\* every drain (a store buffer empties eventually).
LiveSpec == Spec /\ \A t \in Threads : WF_vars(Step(t)) /\ WF_vars(Drain(t))

TypeOK ==
    /\ mem["owner"] \in Threads \cup {None}
    /\ mem["inside"] \in {0, 1} /\ mem["revoked"] \in {0, 1}
    /\ \A t \in Threads : Len(buf[t]) <= BufMax
    /\ inner \in Threads \cup {None}
    /\ byOwner \in [Threads -> BOOLEAN]
    /\ pc \in [Threads -> {"idle"} \cup Trying \cup Holding]

O5_MutualExclusion == Cardinality(Holders) <= 1

\* What Mark's simultaneous drain relies on.
BuffersDisjoint ==
    \A u, v \in Threads : u # v => \A w \in Words : ~(Has(buf[u], w) /\ Has(buf[v], w))

O5_OwnerWordMeaning ==
    \A t \in Holders :
        byOwner[t] => /\ Load(t, "owner") = t
                      /\ inner # None => pc[inner] \in {"claim", "mark", "wait"}

O5_Progress == (\E t \in Threads : pc[t] \in Trying) ~> (\E t \in Threads : pc[t] = "cs")

\* Witness (proofs/reach/): a revoker waits for an owner that holds the
\* lock by the bias.  BiasedMutex.cfg's bounds must VIOLATE it.
NoRevokerWaitsForAHolder ==
    ~(\E r, o \in Threads : pc[r] = "wait" /\ pc[o] \in Holding /\ byOwner[o])

=============================================================================
