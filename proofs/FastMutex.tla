------------------------------ MODULE FastMutex ------------------------------
(***************************************************************************)
(* The Device's one lock (O5): core/include/taintpool/detail/fast_mutex.hpp *)
(* as an algorithm over its one word.  O5 makes every Device call atomic by *)
(* running it under this lock, so every other spec takes one Device call   *)
(* as one step; this spec is what that step rests on.                      *)
(*                                                                         *)
(* What it models                                                          *)
(*   state        the lock word: 0 free; 1 held, nobody sleeping; 2 held,  *)
(*                someone may be sleeping                                  *)
(*   single       glibc's __libc_single_threaded: TRUE until the process   *)
(*                first creates a second thread, then FALSE for good       *)
(*   alive        the threads that exist (the first from the start)        *)
(*   pc[t]        where thread t is in lock() / unlock(), one label per    *)
(*                access to the word:                                      *)
(*     "idle"     outside the lock (may call lock(), or create a thread)   *)
(*     "fast"     read single and the word: single and free -> "store";    *)
(*                else the compare-and-swap                                *)
(*     "store"    the one-thread path's relaxed store of 1                 *)
(*     "cas"      compare-and-swap 0 -> 1; fails -> "spin"                 *)
(*     "spin"     the bounded spin: take it by CAS when free, or give up   *)
(*                (64 tries, a weak CAS that may fail: any number of tries *)
(*                then "xchg")                                             *)
(*     "xchg"     exchange(2): it was 0 -> held (in state 2); else "wait"  *)
(*     "wait"     std::atomic::wait(2): returns at once unless the word is *)
(*                2, else sleeps ("asleep")                                *)
(*     "asleep"   in the futex; a notify (or a spurious wake-up) takes it  *)
(*                back to "wait", which looks at the word again (libstdc++ *)
(*                loops while the value equals the old one), then "xchg"   *)
(*     "cs"       holding the lock: the Device call runs (it may create a  *)
(*                thread: a lock held across pthread_create)               *)
(*     "unlock"   read single: set -> "ustore"; else exchange(0), and if   *)
(*                it was 2 -> "notify"                                     *)
(*     "ustore"   the one-thread path's relaxed store of 0                 *)
(*     "notify"   notify_one: wakes one sleeper, if any                    *)
(*                                                                         *)
(* What it abstracts away                                                  *)
(*   The memory model: steps are sequentially consistent.  The orderings   *)
(*   (acquire on taking, release on giving back, thread creation ordering  *)
(*   everything before it) are what make the C++ behave so; ThreadSanitizer *)
(*   checks them in CI.  try_lock (one CAS, like "cas" without the spin).  *)
(*   The futex's own waiter bookkeeping (a notify wakes one sleeper if     *)
(*   there is one).  Thread exit.                                          *)
(*                                                                         *)
(* Properties                                                              *)
(*   O5_MutualExclusion  at most one thread holds the lock                 *)
(*   O5_WordWhileHeld    while a thread holds it the word is not 0         *)
(*   O5_SleeperMarked    a sleeper is never stranded: the word is 2, or a  *)
(*                       thread on its way (notify, wait, xchg) will wake  *)
(*                       it or mark the word again                         *)
(*   O5_Progress         (liveness, weak fairness of every step but an     *)
(*                       idle thread's next call and a spurious wake-up)   *)
(*                       a thread that calls lock() leads to some thread   *)
(*                       taking it: no lost wake-up, no deadlock.  Not     *)
(*                       starvation freedom: the lock is not fair (a       *)
(*                       spinning newcomer may overtake a sleeper).        *)
(*                                                                         *)
(* Bounds: FastMutex.cfg: 4 threads, the first alive from the start, the   *)
(* others created by any live thread, holding the lock or not: a holder,   *)
(* two sleepers and a newcomer that overtakes the woken one.  The mutants  *)
(* use 3 threads.                                                          *)
(*                                                                         *)
(* Mutations (proofs/mutants/FastMutex_*.cfg):                             *)
(*   "sleep_marks_one"     a sleeper marks the word 1, not 2, so unlock    *)
(*                         sees no sleeper and wakes nobody               *)
(*   "flag_after_create"   single turns FALSE only after the new thread    *)
(*                         runs, so two threads take the one-thread path   *)
(*   "unlock_always_plain" unlock always takes the one-thread store, which *)
(*                         never wakes a sleeper                          *)
(*   "woken_takes_it"      a woken sleeper enters without taking the word  *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS Threads,   \* the threads the process may ever have
          First,     \* the thread alive from the start
          Mutation

ASSUME First \in Threads

VARIABLES state, single, alive, pc
vars == <<state, single, alive, pc>>

Holding  == {"cs", "unlock", "ustore"}   \* the lock is this thread's
Trying   == {"fast", "store", "cas", "spin", "xchg", "wait", "asleep"}
Holders  == {t \in alive : pc[t] \in Holding}
Sleepers == {t \in alive : pc[t] = "asleep"}

Init ==
    /\ state = 0
    /\ single = TRUE
    /\ alive = {First}
    /\ pc = [t \in Threads |-> "idle"]

Goto(t, l) == pc' = [pc EXCEPT ![t] = l]

\* lock(): an idle thread calls it.
Call(t) == pc[t] = "idle" /\ Goto(t, "fast") /\ UNCHANGED <<state, single, alive>>

\* One thread: no other thread exists, so a plain load and store suffice.
Fast(t) ==
    /\ pc[t] = "fast"
    /\ Goto(t, IF single /\ state = 0 THEN "store" ELSE "cas")
    /\ UNCHANGED <<state, single, alive>>
Store(t) == pc[t] = "store" /\ state' = 1 /\ Goto(t, "cs") /\ UNCHANGED <<single, alive>>

Cas(t) ==
    /\ pc[t] = "cas"
    /\ IF state = 0 THEN state' = 1 /\ Goto(t, "cs")
                    ELSE UNCHANGED state /\ Goto(t, "spin")
    /\ UNCHANGED <<single, alive>>

Spin(t) ==
    /\ pc[t] = "spin"
    /\ \/ state = 0 /\ state' = 1 /\ Goto(t, "cs")
       \/ UNCHANGED state /\ Goto(t, "xchg")
    /\ UNCHANGED <<single, alive>>

Xchg(t) ==
    /\ pc[t] = "xchg"
    /\ state' = IF Mutation = "sleep_marks_one" THEN 1 ELSE 2
    /\ Goto(t, IF state = 0 THEN "cs" ELSE "wait")
    /\ UNCHANGED <<single, alive>>

Wait(t) ==
    /\ pc[t] = "wait"
    /\ Goto(t, IF state = 2 \/ (Mutation = "sleep_marks_one" /\ state = 1)
               THEN "asleep" ELSE "xchg")
    /\ UNCHANGED <<state, single, alive>>

\* A spurious wake-up: not fair (a futex need not ever return so).
Spurious(t) == pc[t] = "asleep" /\ Goto(t, "wait") /\ UNCHANGED <<state, single, alive>>

Unlock(t) ==
    /\ pc[t] = "cs"
    /\ Goto(t, "unlock")
    /\ UNCHANGED <<state, single, alive>>

Release(t) ==
    /\ pc[t] = "unlock"
    /\ IF single \/ Mutation = "unlock_always_plain"
       THEN UNCHANGED state /\ Goto(t, "ustore")
       ELSE state' = 0 /\ Goto(t, IF state = 2 THEN "notify" ELSE "idle")
    /\ UNCHANGED <<single, alive>>
UStore(t) == pc[t] = "ustore" /\ state' = 0 /\ Goto(t, "idle") /\ UNCHANGED <<single, alive>>

Notify(t) ==
    /\ pc[t] = "notify"
    /\ IF Sleepers = {}
       THEN Goto(t, "idle")
       ELSE \E s \in Sleepers :
              pc' = [pc EXCEPT ![t] = "idle",
                               ![s] = IF Mutation = "woken_takes_it" THEN "cs" ELSE "wait"]
    /\ UNCHANGED <<state, single, alive>>

\* pthread_create by a thread outside lock() and unlock(): holding the lock
\* or not.  The flag turns FALSE before the new thread runs (creation orders
\* everything before it); flag_after_create leaves it for Settle.
Create(t, n) ==
    /\ pc[t] \in {"idle", "cs"}
    /\ n \notin alive
    /\ alive' = alive \cup {n}
    /\ single' = IF Mutation = "flag_after_create" THEN single ELSE FALSE
    /\ UNCHANGED <<state, pc>>
Settle == single /\ Cardinality(alive) > 1 /\ single' = FALSE /\ UNCHANGED <<state, alive, pc>>

Step(t) == Fast(t) \/ Store(t) \/ Cas(t) \/ Spin(t) \/ Xchg(t) \/ Wait(t)
           \/ Unlock(t) \/ Release(t) \/ UStore(t) \/ Notify(t)

Next ==
    \/ \E t \in alive : Call(t) \/ Step(t) \/ Spurious(t)
    \/ \E t \in alive, n \in Threads : Create(t, n)
    \/ Settle

Spec == Init /\ [][Next]_vars
\* Every step but an idle thread's next call and a spurious wake-up is
\* weakly fair: a holder gives the lock back, a notifier notifies, a thread
\* in lock() keeps going.  Per thread, so one thread cannot starve another's
\* steps.
LiveSpec == Spec /\ \A t \in Threads : WF_vars(Step(t)) /\ WF_vars(Settle)

TypeOK ==
    /\ state \in {0, 1, 2}
    /\ single \in BOOLEAN
    /\ alive \subseteq Threads /\ First \in alive
    /\ pc \in [Threads -> {"idle", "cs", "unlock", "ustore", "notify"} \cup Trying]

O5_MutualExclusion == Cardinality(Holders) <= 1

O5_WordWhileHeld == Holders # {} => state # 0

O5_SleeperMarked ==
    Sleepers # {} =>
        \/ state = 2
        \/ \E u \in alive : pc[u] \in {"notify", "wait", "xchg"}

O5_Progress == (\E t \in alive : pc[t] \in Trying) ~> (\E t \in alive : pc[t] = "cs")

\* Witness (proofs/reach/): nobody ever sleeps.  FastMutex.cfg's bounds must
\* VIOLATE it.
NoSleeper == Sleepers = {}

=============================================================================
