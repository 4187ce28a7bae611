// A memory manager over fault-injecting host storage, with a small ladder so
// every pool (two sliced, the exclusive one) is reached with small sizes,
// and the helpers the pool tests share.
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
/// pages, exclusive above (up to 1 MiB). Alignment 256.
inline MemoryConfig small_ladder() {
  MemoryConfig config;
  config.alignment = 256;
  config.sliced = {{8 << 10, 1 << 10}, {64 << 10, 16 << 10}};
  config.max_allocation = 1 << 20;
  config.exclusive_release_after = 4;
  return config;
}

struct PoolTest : ::testing::Test {
  HostStorage host{256};
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
