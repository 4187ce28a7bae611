// ArenaStorage: pages carved from one fixed block of host memory, for the
// stream harnesses (stream_check.hpp).
//
// Why not HostStorage: the stream rules are about memory being handed over
// while earlier work may still touch it (O3). Whether a page given back
// comes back at the same address should not be up to the system allocator
// (and AddressSanitizer's quarantine makes it never): here the lowest free
// block that fits is always taken, so a page given back is the next one
// handed out, to whichever lane asks. A fixed capacity makes OutOfMemory —
// and with it the Device's last-step retry — reachable in a few operations.
// Every page given back is reported first (on_return), so a harness can
// check nothing queued still touches it.
//
// Cost: a page request is a scan of the free blocks (a handful); no
// allocation beyond the free list's vector.
#pragma once

#include <taintpool/pool/storage.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace taintpool::testing {

class ArenaStorage final : public Storage {
 public:
  /// Free blocks: (offset, length), ascending.
  using FreeList = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

  /// Pages from `arena` (its start aligned to `alignment`, a power of two).
  /// `room`: an earlier storage's take_free_list(), whose capacity (and
  /// only that: it is emptied) spares a harness that makes a storage per
  /// fuzz input the list's allocation (issue 13, forty-fifth round).
  ArenaStorage(std::span<std::byte> arena, std::uint64_t alignment, FreeList room = {})
      : arena_(arena)
      , alignment_(alignment)
      , free_(std::move(room)) {
    free_.clear();
    free_.reserve(kMaxBlocks);
    free_.emplace_back(0, arena.size() / alignment * alignment);
  }

  /// Gives up the free list (for the next storage to reuse): the storage
  /// has no free block left, so destroy it next.
  [[nodiscard]] FreeList take_free_list() noexcept {
    FreeList list = std::move(free_);
    free_.clear();
    return list;
  }

  /// Free blocks the list holds without growing: more pages than a harness
  /// keeps at once.
  static constexpr std::size_t kMaxBlocks = 256;

  /// Called with each page as it is given back, before it can be handed out
  /// again.
  void on_return(std::function<void(const std::byte*, std::uint64_t)> listener) {
    listener_ = std::move(listener);
  }

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return alignment_; }

  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
    const std::uint64_t need = (size + alignment_ - 1) / alignment_ * alignment_;
    for (auto& [offset, length] : free_) {
      if (need != 0 && length >= need) {
        const std::uint64_t at = offset;
        offset += need;
        length -= need;
        std::erase_if(free_, [](const auto& block) { return block.second == 0; });
        return StorageHandle{reinterpret_cast<std::uint64_t>(arena_.data() + at)};
      }
    }
    throw StorageExhausted("arena: no free block of " + std::to_string(need) + " bytes");
  }

  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    auto* base = reinterpret_cast<std::byte*>(handle.value);
    const std::uint64_t need = (size + alignment_ - 1) / alignment_ * alignment_;
    if (listener_) {
      listener_(base, size);
    }
    const auto offset = static_cast<std::uint64_t>(base - arena_.data());
    // Insert in order and merge with the neighbours (the list was reserved:
    // no allocation here while fewer than kMaxBlocks pages are out).
    const auto at = std::lower_bound(free_.begin(), free_.end(), std::make_pair(offset, need));
    const auto placed = free_.insert(at, {offset, need});
    const auto index = static_cast<std::size_t>(placed - free_.begin());
    if (index + 1 < free_.size() &&
        free_[index].first + free_[index].second == free_[index + 1].first) {
      free_[index].second += free_[index + 1].second;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(index) + 1);
    }
    if (index > 0 && free_[index - 1].first + free_[index - 1].second == free_[index].first) {
      free_[index - 1].second += free_[index].second;
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(index));
    }
  }

  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return reinterpret_cast<void*>(handle.value);
  }

  [[nodiscard]] std::string name() const override { return "arena"; }

 private:
  std::span<std::byte> arena_;
  std::uint64_t alignment_;
  FreeList free_;
  std::function<void(const std::byte*, std::uint64_t)> listener_;
};

} // namespace taintpool::testing
