// A memory manager over fault-injecting host storage, with a small ladder so
// every pool (two sliced, the arena) is reached with small sizes, and the
// helpers the pool tests share.
#pragma once

#include <taintpool/error_graph.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace taintpool::testing {

/// Pools: sliced up to 1 KiB on 8 KiB pages, sliced up to 16 KiB on 64 KiB
/// pages, the arena above (up to 1 MiB), reserving 4 MiB of address space
/// at a time and growing by at least 64 KiB, without the young arena's ramp
/// (so each growth is what the test says; the default ramp has tests of its
/// own). Alignment 256.
inline MemoryConfig small_ladder() {
  MemoryConfig config;
  config.alignment = 256;
  config.sliced = {{8 << 10, 1 << 10}, {64 << 10, 16 << 10}};
  config.max_allocation = 1 << 20;
  config.arena_address_space = 4 << 20;
  config.arena_min_growth = 64 << 10;
  config.arena_ramp_growth = 0;
  return config;
}

/// Host storage with virtual memory at a 64 KiB granularity, so the arena
/// maps and unmaps at sizes the tests reach.
inline HostStorageOptions small_granules(bool virtual_memory = true) {
  return HostStorageOptions{256, virtual_memory, 64 << 10};
}

struct PoolTest : ::testing::Test {
  HostStorage host{small_granules()};
  FaultInjectingStorage storage{host};
  ErrorGraph graph;
  std::unique_ptr<MemoryManager> memory =
      std::make_unique<MemoryManager>(storage, graph, small_ladder());

  FailureId fail(const char* what = "failed") { return graph.insert(Error::generic(what)); }

  /// Taints the whole allocation with a new failure and drops the scope's
  /// hold, so the allocation is the failure's only carrier.
  FailureId taint_whole(const Allocation& allocation) {
    const FailureId failure = fail();
    memory->taint(allocation.whole(), failure);
    graph.prune(failure);
    return failure;
  }

  void TearDown() override {
    if (memory) {
      memory->check_invariants();
    }
  }
};

} // namespace taintpool::testing
