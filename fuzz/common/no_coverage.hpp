// TAINTPOOL_FUZZ_CHECKER: marks a harness function that only checks — it
// compares core with the model, or core with its own invariants — so that
// libFuzzer does not instrument it for coverage.
//
// Why: libFuzzer's coverage is its guide to new behaviour of the code under
// test (core, the model, and the decoder that picks the ops). A checker's
// branches say nothing about that behaviour — they take the same path on
// every passing run — yet every edge and every comparison they execute costs
// a counter, a feature-table update and a comparison-trace call on every
// execution. Leaving them out makes each run cheaper without changing what
// is checked; what they call in core (check_invariants, queries) is still
// instrumented, and so is everything the decoder and the ops run.
//
// clang only (`no_sanitize("coverage")`, clang 13+); elsewhere — g++ builds
// of the replay drivers, which have no coverage to skip — it is empty.
#pragma once

#if defined(__clang__)
#define TAINTPOOL_FUZZ_CHECKER __attribute__((no_sanitize("coverage")))
#else
#define TAINTPOOL_FUZZ_CHECKER
#endif
