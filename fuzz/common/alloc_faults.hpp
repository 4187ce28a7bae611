// The allocation fault injector, by the name and in the namespace the fuzz
// targets have always used: it lives in testing/ now (shared test support
// for fuzzers, tests and benchmarks: <taintpool/testing/alloc_faults.hpp>).
#pragma once

#include <taintpool/testing/alloc_faults.hpp>

namespace taintpool::fuzz {

using testing::arm_allocation_fault;
using testing::disarm_allocation_fault;

} // namespace taintpool::fuzz
