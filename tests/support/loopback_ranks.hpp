// N ranks in one process: each its Device on a CollectiveBackend around a
// HostBackend (every launch confirmed at once; a collective's verdict late
// on every rank but the one completing it), with its Collectives on one
// LoopbackWorld. The fixture of the collective tests that need no other
// backend or mode. Shared by collectives and ranks_model tests.
#pragma once

#include <taintpool/collective/collective_backend.hpp>
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/loopback.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>

#include <cstddef>
#include <memory>
#include <vector>

namespace taintpool::test {

/// One rank.
struct LoopbackRank {
  LoopbackRank(LoopbackWorld& world, int rank)
      : collectives(device, world.rank(rank)) {}
  HostBackend host;
  CollectiveBackend backend{host};
  Device device{backend};
  Collectives collectives;
};

/// `ranks` of them, rank r at [r].
struct LoopbackRanks {
  explicit LoopbackRanks(int ranks)
      : loopback(ranks) {
    for (int rank = 0; rank < ranks; ++rank) {
      all.push_back(std::make_unique<LoopbackRank>(loopback, rank));
    }
  }
  LoopbackRank& operator[](int rank) { return *all[static_cast<std::size_t>(rank)]; }
  [[nodiscard]] int size() const { return static_cast<int>(all.size()); }
  LoopbackWorld loopback;
  std::vector<std::unique_ptr<LoopbackRank>> all;
};

} // namespace taintpool::test
