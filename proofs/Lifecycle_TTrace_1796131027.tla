---- MODULE Lifecycle_TTrace_1796131027 ----
EXTENDS Sequences, TLCExt, Toolbox, Lifecycle, Naturals, TLC

_expression ==
    LET Lifecycle_TEExpression == INSTANCE Lifecycle_TEExpression
    IN Lifecycle_TEExpression!expression
----

_trace ==
    LET Lifecycle_TETrace == INSTANCE Lifecycle_TETrace
    IN Lifecycle_TETrace!trace
----

_inv ==
    ~(
        TLCGet("level") = Len(_TETrace)
        /\
        handles = (<<0, 0>>)
        /\
        layout = (<<<<[size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {<<1, 1>>}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>)
        /\
        nextAlloc = (2)
        /\
        nextFail = (2)
        /\
        tombs = ({})
        /\
        pending = ({})
        /\
        tags = (<<1>>)
    )
----

_init ==
    /\ handles = _TETrace[1].handles
    /\ tombs = _TETrace[1].tombs
    /\ pending = _TETrace[1].pending
    /\ layout = _TETrace[1].layout
    /\ nextAlloc = _TETrace[1].nextAlloc
    /\ tags = _TETrace[1].tags
    /\ nextFail = _TETrace[1].nextFail
----

_next ==
    /\ \E i,j \in DOMAIN _TETrace:
        /\ \/ /\ j = i + 1
              /\ i = TLCGet("level")
        /\ handles  = _TETrace[i].handles
        /\ handles' = _TETrace[j].handles
        /\ tombs  = _TETrace[i].tombs
        /\ tombs' = _TETrace[j].tombs
        /\ pending  = _TETrace[i].pending
        /\ pending' = _TETrace[j].pending
        /\ layout  = _TETrace[i].layout
        /\ layout' = _TETrace[j].layout
        /\ nextAlloc  = _TETrace[i].nextAlloc
        /\ nextAlloc' = _TETrace[j].nextAlloc
        /\ tags  = _TETrace[i].tags
        /\ tags' = _TETrace[j].tags
        /\ nextFail  = _TETrace[i].nextFail
        /\ nextFail' = _TETrace[j].nextFail

\* Uncomment the ASSUME below to write the states of the error trace
\* to the given file in Json format. Note that you can pass any tuple
\* to `JsonSerialize`. For example, a sub-sequence of _TETrace.
    \* ASSUME
    \*     LET J == INSTANCE Json
    \*         IN J!JsonSerialize("Lifecycle_TTrace_1796131027.json", _TETrace)

=============================================================================

 Note that you can extract this module `Lifecycle_TEExpression`
  to a dedicated file to reuse `expression` (the module in the 
  dedicated `Lifecycle_TEExpression.tla` file takes precedence 
  over the module `Lifecycle_TEExpression` below).

---- MODULE Lifecycle_TEExpression ----
EXTENDS Sequences, TLCExt, Toolbox, Lifecycle, Naturals, TLC

expression == 
    [
        \* To hide variables of the `Lifecycle` spec from the error trace,
        \* remove the variables below.  The trace will be written in the order
        \* of the fields of this record.
        handles |-> handles
        ,tombs |-> tombs
        ,pending |-> pending
        ,layout |-> layout
        ,nextAlloc |-> nextAlloc
        ,tags |-> tags
        ,nextFail |-> nextFail
        
        \* Put additional constant-, state-, and action-level expressions here:
        \* ,_stateNumber |-> _TEPosition
        \* ,_handlesUnchanged |-> handles = handles'
        
        \* Format the `handles` variable as Json value.
        \* ,_handlesJson |->
        \*     LET J == INSTANCE Json
        \*     IN J!ToJson(handles)
        
        \* Lastly, you may build expressions over arbitrary sets of states by
        \* leveraging the _TETrace operator.  For example, this is how to
        \* count the number of times a spec variable changed up to the current
        \* state in the trace.
        \* ,_handlesModCount |->
        \*     LET F[s \in DOMAIN _TETrace] ==
        \*         IF s = 1 THEN 0
        \*         ELSE IF _TETrace[s].handles # _TETrace[s-1].handles
        \*             THEN 1 + F[s-1] ELSE F[s-1]
        \*     IN F[_TEPosition - 1]
    ]

=============================================================================



Parsing and semantic processing can take forever if the trace below is long.
 In this case, it is advised to uncomment the module below to deserialize the
 trace from a generated binary file.

\*
\*---- MODULE Lifecycle_TETrace ----
\*EXTENDS IOUtils, Lifecycle, TLC
\*
\*trace == IODeserialize("Lifecycle_TTrace_1796131027.bin", TRUE)
\*
\*=============================================================================
\*

---- MODULE Lifecycle_TETrace ----
EXTENDS Lifecycle, TLC

trace == 
    <<
    ([handles |-> <<0, 0>>,layout |-> <<<<>>>>,nextAlloc |-> 1,nextFail |-> 1,tombs |-> {},pending |-> {},tags |-> <<0>>]),
    ([handles |-> <<0, 0>>,layout |-> <<<<[size |-> 2, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 1,nextFail |-> 1,tombs |-> {},pending |-> {},tags |-> <<0>>]),
    ([handles |-> <<0, 0>>,layout |-> <<<<[size |-> 1, state |-> "free", alloc |-> 0, claims |-> {}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 1,nextFail |-> 1,tombs |-> {},pending |-> {},tags |-> <<0>>]),
    ([handles |-> <<1, 0>>,layout |-> <<<<[size |-> 1, state |-> "bound", alloc |-> 1, claims |-> {}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 2,nextFail |-> 1,tombs |-> {},pending |-> {},tags |-> <<0>>]),
    ([handles |-> <<1, 0>>,layout |-> <<<<[size |-> 1, state |-> "bound", alloc |-> 1, claims |-> {<<1, 1>>}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 2,nextFail |-> 2,tombs |-> {},pending |-> {},tags |-> <<1>>]),
    ([handles |-> <<0, 0>>,layout |-> <<<<[size |-> 1, state |-> "bound", alloc |-> 1, claims |-> {<<1, 1>>}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 2,nextFail |-> 2,tombs |-> {},pending |-> {1},tags |-> <<1>>]),
    ([handles |-> <<0, 0>>,layout |-> <<<<[size |-> 1, state |-> "free", alloc |-> 1, claims |-> {<<1, 1>>}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 2,nextFail |-> 2,tombs |-> {},pending |-> {},tags |-> <<1>>]),
    ([handles |-> <<0, 0>>,layout |-> <<<<[size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {<<1, 1>>}], [size |-> 1, state |-> "unmapped", alloc |-> 0, claims |-> {}]>>>>,nextAlloc |-> 2,nextFail |-> 2,tombs |-> {},pending |-> {},tags |-> <<1>>])
    >>
----


=============================================================================

---- CONFIG Lifecycle_TTrace_1796131027 ----
CONSTANTS
    NumPages = 1
    PageSize = 2
    MaxAllocs = 2
    MaxFailures = 1
    MaxHandles = 1
    Discovery = "any"
    Mutation = "unmap_keeps_taint"

INVARIANT
    _inv

CHECK_DEADLOCK
    \* CHECK_DEADLOCK off because of PROPERTY or INVARIANT above.
    FALSE

INIT
    _init

NEXT
    _next

CONSTANT
    _TETrace <- _trace

ALIAS
    _expression
=============================================================================
\* Generated on Tue Dec 01 13:17:09 UTC 2026