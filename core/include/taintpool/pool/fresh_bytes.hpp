// FreshBytes: what a fresh allocation's bytes count as (N1).
//
// Trusted (the default, and DESIGN.md's D1 as it always was): fresh memory
// counts as written. Whatever bytes it holds — zeros from the driver, or what
// the allocation that last used the slice left there — a read returns them.
//
// NeverWritten: fresh memory counts as unwritten. Every byte of a new
// allocation is claimed by one failure of kind NeverWritten, so a launch that
// reads a byte before anything wrote it is skipped (S1) and a read of it
// fails (D1) — which finds the reads compute-sanitizer's initcheck misses in
// a pool (memory a pool recycles looks initialised to it) without the
// sanitizer's slowdown, and says which allocation and which bytes.
//
// One node per manager, not one per allocation: the node is payload-free
// (Error::never_written()), minted lazily by the first allocation that needs
// it, tagged once by every allocation that still carries never-written bytes
// (R1), and removed by the graph exactly when the last one lets go (G3) —
// the next allocation then mints a new one. It is never replaced and never
// pruned while carried: nothing but T1/T2/T4 on its carriers touches it.
//
// Cost: the claim is the inline one (T6): one compare of the graph's
// NeverWritten slot (the node has a slot of its own), then one step that
// tags the node or mints it already tagged (an id and a count), and the
// inline claim stored with no second look-up; no heap allocation
// (bench/fresh_bytes_bench.cpp measures it).
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/taint.hpp>

#include <cstdint>
#include <optional>

namespace taintpool {

/// What a fresh allocation's bytes count as (N1). Part of MemoryConfig.
enum class FreshBytes : std::uint8_t {
  Trusted,      ///< Fresh memory counts as written (D1); nothing is claimed. The default.
  NeverWritten, ///< N1: fresh bytes are claimed by the manager's NeverWritten failure.
};

/// The manager's NeverWritten failure (N1): which node it is while one
/// lives. Two words; no allocation of its own.
///
/// The node is minted into the graph's NeverWritten slot
/// (ErrorGraph::insert_never_written), so "does it still live" is one
/// compare against that slot's id: a node in the slot leaves it only by
/// ending, and ids are never reused (G1). Only when the slot was taken at the
/// mint (a second manager sharing the graph) does the node live in a general
/// slot, and then the check is the graph's find.
class NeverWrittenClaim {
 public:
  /// The live node, or nullopt when no allocation carries never-written
  /// bytes (none was ever minted, or the last carrier let go). One compare;
  /// a find only for a node outside the slot.
  [[nodiscard, gnu::always_inline]] std::optional<FailureId>
  failure(const ErrorGraph& graph) const noexcept {
    if (lives(graph)) {
      return FailureId::from_raw(id_);
    }
    return std::nullopt;
  }

  /// The raw id of the node last minted (0: never); it may be gone since.
  /// For hot paths that compare a claim's id against it.
  [[nodiscard]] std::uint64_t last_raw() const noexcept { return id_; }

  /// N1 on a freshly bound, clean taint: [0, size) is claimed by the node,
  /// minted first if none lives. Size 0 claims nothing (T1). A clean taint
  /// takes the claim inline (T6) and a mint into the slot allocates nothing;
  /// only a mint outside it (a second manager on the graph) may move an
  /// older node into the graph's table, and that may grow (std::bad_alloc
  /// then, with nothing changed).
  [[gnu::always_inline]] void claim(Taint& fresh, std::uint64_t size, ErrorGraph& graph) {
    if (size == 0) {
      return;
    }
    // The common case: the graph's NeverWritten slot is vacant or holds
    // this manager's node. Minting and tagging are then one step, and the
    // claim is stored with no second look-up (Taint::claim_tagged).
    if constexpr (Taint::inline_claims) {
      const std::uint64_t slot = graph.never_written_slot();
      if ((slot == 0 || slot == id_) && fresh.is_clean()) [[likely]] {
        id_ = graph.tag_never_written().raw();
        in_slot_ = true;
        fresh.claim_tagged(ByteRange::sized(0, size), FailureId::from_raw(id_));
        return;
      }
    }
    if (!lives(graph)) {
      const FailureId minted = graph.insert_never_written();
      id_ = minted.raw();
      in_slot_ = graph.never_written_slot() == id_;
    }
    fresh.taint(ByteRange::sized(0, size), FailureId::from_raw(id_), graph);
  }

 private:
  [[nodiscard, gnu::always_inline]] bool lives(const ErrorGraph& graph) const noexcept {
    if (id_ == graph.never_written_slot()) [[likely]] {
      return id_ != 0;
    }
    return id_ != 0 && !in_slot_ && graph.contains(FailureId::from_raw(id_));
  }

  std::uint64_t id_ = 0;
  bool in_slot_ = false; ///< Whether id_ was minted into the graph's NeverWritten slot.
};

} // namespace taintpool
