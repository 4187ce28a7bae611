// HoleBlame: which large requests the arena sets apart, learned from the
// growths their freed blocks forced. Internal (ArenaPool's).
//
// Why (issue 12, the peak target): a training step's loss computation asks
// for X (S bytes), Y (S), Z (2S), frees X, then asks for W (2S). Carved in
// order at the arena's growing end, X's hole lies between live blocks and W
// must grow the arena by 2S although S lies free: on bert_train and
// llama_train_bf16 that one hole is most of the 6.5-7.9% the peak reserve
// exceeded the peak in use. Nothing at X's request says it will die first
// (Y has its size, and the manager learns of frees only at its next
// allocate, so their lifetimes look alike), but the growth says it
// afterwards: a block freed since the last growth left a hole of at least
// half the request that could not take it. The request that made that
// block is *blamed*; the next time the same request comes, the arena puts
// its block in a range of its own (ArenaPool's far reservation), where its
// hole borders unmapped address space and the next growth joins it, and a
// warm step reuses it without mapping anything.
//
// The free range a growth maps next to (at the arena's edge, where the
// growth's unmapped space begins) is no hole for that growth: the growth
// joins it and maps only what it lacks, so it stranded nothing. A free
// range at an edge the growth does not use (a near one while a set-apart
// block grows the far reservation) still counts. Why this matters
// (issue 12, convnext_serve_varsize, an image server whose requests come in
// every batch and resolution): a forward pass repeats one block shape, so
// a context recurs within the pass. The growth for the second block's 300
// MiB activation found the first block's, freed, at the edge and blamed it;
// the third block's, 18 events later, took 300 MiB of new far memory (an
// arena is always tight for a request over an eighth of it) while 376 MiB
// lay free at the near edge: peak reserved 1.422x the peak in use, 1.136x
// without that blame. On the other 29 traces the blames this drops are one
// on resnet50_train and, on seven training traces, one each of a context
// already set apart (its block borders unmapped space by design); none of
// their peaks or storage calls moved (bench/RESULTS.md, pool15). Only the
// range the growth joins, not every free range next to unmapped space:
// that wider rule gives the same figures on the 30 traces, but in
// arena_holes_test's training loop it drops the blame of W, whose range
// lies free at the near edge while X grows the far reservation, and step 2
// makes two more storage calls (one more unmap, one more map). What it
// costs: blame looks for the growth's site once more (a walk over the
// unmapped lists, at a growth blame looks at: cold).
//
// A request is known by its context: its extent and the extents of the two
// arena requests before it. Why: the same size recurs with different
// fates (X and Y above are both S), and the requests just before it tell
// them apart and repeat step after step; a hash, so a context costs 4
// bytes.
//
// Costs: key_for is a few multiplies per arena request; vacated() one
// 32-byte store per arena release; blame() runs only on a growth for a
// request of at least 1/12 of what the arena holds (cold: it walks the
// arena's slices once). Memory: 1.5 KiB per arena. Nothing allocates.
// Guarantees: none about placement — it only steers where a request looks
// first; every placement is still a free range or new memory (P2).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace taintpool::detail {

struct Page;

class HoleBlame {
 public:
  /// A growth for a request this large relative to what the arena holds
  /// looks for a culprit; smaller growths are ordinary. It was 8, chosen on
  /// the first nine traces. whisper_train, recorded afterwards as a
  /// held-out trace, grows for its loss at 1/10.6 of its arena, so its hole
  /// was never blamed and the step kept it: peak 1.155x, 1.065x at 12, no
  /// other trace of fourteen changed by more than 0.003. At 16, growths
  /// that are not a loss's get blamed (t5_train then maps after its first
  /// step). A constant still: held-out traces judge it (bench/RESULTS.md).
  static constexpr std::uint64_t blame_divisor = 12;
  /// A set-apart request takes new memory of its own only while the
  /// manager's free bytes are at most this many times its extent: then
  /// the arena is tight and its hole will be wanted (measured: 2.4 and
  /// 4.5 on bert_train and llama_train_bf16). With more free it goes where
  /// the best fit puts it (resnet50_train: 53), as every other request.
  static constexpr std::uint64_t tight_factor = 8;
  /// In a tight arena, a set-apart request with no far room takes the top
  /// of a near free block that borders unmapped space instead of new far
  /// memory, if that block holds at least this many times its extent: the
  /// block, and below it room for the requests of its step that come next
  /// (issue 12, pool7). gpt_neox_train_bf16's logits X (786 MiB) came with
  /// 4395 MiB free at the edge (5.6X) and 4553 MiB free in all: mapping X
  /// far held 786 MiB idle at the peak (1.101x); on the edge, 1.017x.
  /// bert_train's edge held 2.4X, too little for Y and Z below X: at 2 it
  /// peaks at 1.085x (1.010x now). At 4 no other trace of seventeen
  /// changes its peak or storage calls except llama_train_bf16 (two fewer
  /// calls, same peak); bart_train would gain (1.056x to 1.011x) only at 2.
  static constexpr std::uint64_t edge_factor = 4;

  /// One released block, while the next growth may blame it.
  struct Vacated {
    std::uint32_t key = 0;
    const Page* page = nullptr;
    std::uint64_t offset = 0;
    std::uint64_t extent = 0;
  };

  /// The context key of a request of `extent` bytes (never 0). Three
  /// independent multiplies (they overlap: a few cycles on the hot path),
  /// folded to 32 bits; a collision only merges two contexts' fates.
  [[nodiscard]] std::uint32_t key_for(std::uint64_t extent) const noexcept {
    std::uint64_t hash = extent * 0x9E3779B97F4A7C15ULL + previous_[0] * 0xC2B2AE3D27D4EB4FULL +
                         previous_[1] * 0x165667B19E3779F9ULL;
    hash ^= hash >> 32;
    return static_cast<std::uint32_t>(hash) | 1U; // Never 0: 0 means "no context".
  }

  /// A request of `extent` bytes was served: the context of the next ones.
  /// (Not a refused one: a retry must find the context it first had.)
  void served(std::uint64_t extent) noexcept {
    previous_[1] = previous_[0];
    previous_[0] = extent;
  }

  /// Whether requests of this context are set apart.
  [[nodiscard]] bool isolated(std::uint32_t key) const noexcept {
    return key != 0 && isolated_[key % isolated_.size()] == key;
  }

  /// A block of context `key` was released at [offset, offset + extent) of
  /// `page`. The newest `window` are kept.
  void vacated(std::uint32_t key, const Page* page, std::uint64_t offset,
               std::uint64_t extent) noexcept {
    vacated_[next_] = Vacated{key, page, offset, extent};
    next_ = (next_ + 1) % window;
    count_ = count_ < window ? count_ + 1 : window;
  }

  /// The arena grows for `request` bytes. `hole_overlaps(page, offset,
  /// extent)` says whether a hole (a free range the growth does not join)
  /// of at least request / 2 bytes overlaps that range now. Every block
  /// vacated since the last growth, of at least request / 4 bytes, whose
  /// range a hole overlaps gets its context set apart. Forgets the vacated
  /// blocks. Returns whether a context not set apart before was set apart
  /// now (something was learned).
  template <class HoleOverlaps>
  bool blame(std::uint64_t request, HoleOverlaps hole_overlaps) noexcept {
    bool learned = false;
    for (std::uint32_t at = 0; at < count_; ++at) {
      const Vacated& block = vacated_[at];
      if (block.key != 0 && block.extent * 4 >= request &&
          hole_overlaps(block.page, block.offset, block.extent)) {
        std::uint32_t& slot = isolated_[block.key % isolated_.size()];
        learned = learned || slot != block.key;
        slot = block.key;
      }
    }
    forget_vacated();
    return learned;
  }

  /// Whether any context is set apart: a growth has been blamed on a hole
  /// since the last reset. A scan of the 256 keys, not a flag kept beside
  /// them: only a large growth asks.
  [[nodiscard]] bool sets_apart_any() const noexcept {
    return std::any_of(isolated_.begin(), isolated_.end(),
                       [](std::uint32_t key) { return key != 0; });
  }

  /// Forgets the blocks vacated so far (a growth, or a page given back).
  void forget_vacated() noexcept {
    count_ = 0;
    next_ = 0;
  }

  /// Forgets everything learned (the arena was emptied).
  void reset() noexcept;

 private:
  static constexpr std::uint32_t window = 16;

  std::array<std::uint64_t, 2> previous_{}; ///< The last two request extents, newest first.
  std::array<Vacated, window> vacated_{};
  std::uint32_t count_ = 0;                   ///< Valid entries of vacated_.
  std::uint32_t next_ = 0;                    ///< Where the next one is written (a ring).
  std::array<std::uint32_t, 256> isolated_{}; ///< Set-apart keys, direct-mapped.
};

} // namespace taintpool::detail
