// The pool configurations every pool check runs over: the default one users
// get, and a few that sit at the edge of every knob (issue 13: the default
// MemoryConfig was never exercised, so size-class arithmetic that matters
// only at the default sizes went untested).
//
// Each comes with the HostStorage options it runs on, and a cap on the
// sizes a checker should draw for the arena (its memory is mapped but never
// touched, so large sizes cost address space, not memory; the cap keeps a
// single map within what any test machine allows).
#pragma once

#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_config.hpp>

#include <cstdint>
#include <vector>

namespace taintpool::model {

struct PoolSetup {
  const char* name;
  MemoryConfig config;
  HostStorageOptions host;
  std::uint64_t largest_drawn; ///< Sizes drawn for the arena stay at or below this.
};

inline std::vector<PoolSetup> pool_setups() {
  std::vector<PoolSetup> setups;

  // What users get: MemoryConfig{} on HostStorage's defaults (virtual
  // memory, 2 MiB granules): 64 KiB buffers on 2 MiB pages, the arena above.
  setups.push_back({"default", MemoryConfig{}, HostStorageOptions{}, std::uint64_t{96} << 20});

  // Two small sliced pools and the arena, reached with small sizes; 64 KiB
  // granules, 4 MiB reservations.
  MemoryConfig small;
  small.sliced = {{8 << 10, 1 << 10}, {64 << 10, 16 << 10}};
  small.max_allocation = 1 << 20;
  small.arena_address_space = 4 << 20;
  small.arena_min_growth = 64 << 10;
  setups.push_back({"small ladder", small, HostStorageOptions{256, true, 64 << 10}, 1 << 20});

  // Edges: no sliced pool at all; the arena grows by exactly what it needs
  // (divisor 0) at the smallest step (the alignment); granules of one system
  // page; reservations of 16 granules, so requests overflow into
  // reservations of their own.
  MemoryConfig arena_only;
  arena_only.sliced = {};
  arena_only.max_allocation = 1 << 20;
  arena_only.arena_address_space = 64 << 10;
  arena_only.arena_growth_divisor = 0;
  arena_only.arena_min_growth = 256;
  setups.push_back(
      {"arena only, exact growth", arena_only, HostStorageOptions{256, true, 4096}, 1 << 20});

  // Edges: alignment equal to the storage's; a pool whose max slice is 0
  // (only empty buffers) and one whose max slice is its page; the arena
  // grows by all it holds (divisor 1); max allocation equal to the
  // reservation size.
  MemoryConfig edges;
  edges.alignment = 4096;
  edges.sliced = {{4096, 0}, {16384, 16384}};
  edges.max_allocation = 1 << 20;
  edges.arena_address_space = 1 << 20;
  edges.arena_growth_divisor = 1;
  edges.arena_min_growth = 4096;
  setups.push_back({"edges", edges, HostStorageOptions{4096, true, 4096}, 1 << 20});

  // No virtual memory: the arena grows by pages.
  MemoryConfig pages = small;
  pages.arena_growth_divisor = 4;
  setups.push_back(
      {"pages, no virtual memory", pages, HostStorageOptions{256, false, 64 << 10}, 1 << 20});

  return setups;
}

} // namespace taintpool::model
