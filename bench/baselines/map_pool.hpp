// MapPool: the simple pool a runtime might write first — a baseline for
// bench/pool_bench.cpp, not part of taintpool.
//
// Best fit over every free block of every page, found with a
// std::multimap<size, block>; free blocks are also kept by address in a
// std::map, so a freed block merges with free neighbours on the same page.
// Pages come from the same Storage as taintpool's pools, with the same page
// size, so the comparison is of the bookkeeping alone. Every insert into
// either map is a heap node: that, and the tree walks, are what it costs.
#pragma once

#include <taintpool/pool/storage.hpp>

#include <cstdint>
#include <iterator>
#include <map>
#include <vector>

namespace taintpool::bench {

class MapPool {
 public:
  MapPool(Storage& storage, std::uint64_t page_size, std::uint64_t alignment)
      : storage_(storage)
      , page_size_(page_size)
      , alignment_(alignment) {}
  ~MapPool() {
    for (const Page& page : pages_) {
      storage_.deallocate(page.handle, page.size);
    }
  }
  MapPool(const MapPool&) = delete;
  MapPool& operator=(const MapPool&) = delete;

  /// An address-ordered block id (page base + offset); 0 never.
  struct Block {
    std::uintptr_t address;
    std::uint64_t size;
  };

  Block allocate(std::uint64_t size) {
    const std::uint64_t extent =
        size == 0 ? alignment_ : (size + alignment_ - 1) & ~(alignment_ - 1);
    auto fit = by_size_.lower_bound(extent);
    if (fit == by_size_.end()) {
      add_page(extent > page_size_ ? extent : page_size_);
      fit = by_size_.lower_bound(extent);
    }
    const std::uintptr_t address = fit->second;
    const std::uint64_t available = fit->first;
    by_size_.erase(fit);
    by_address_.erase(address);
    if (available > extent) {
      insert_free(address + extent, available - extent);
    }
    in_use_ += size;
    peak_in_use_ = in_use_ > peak_in_use_ ? in_use_ : peak_in_use_;
    return {address, extent};
  }

  void release(Block block, std::uint64_t size) {
    in_use_ -= size;
    std::uintptr_t address = block.address;
    std::uint64_t extent = block.size;
    const std::size_t page = page_of(address);
    // Merge with the free block after it, then the one before, on the same page.
    if (auto next = by_address_.find(address + extent);
        next != by_address_.end() && page_of(next->first) == page) {
      extent += next->second;
      erase_free(next->first, next->second);
    }
    if (auto after = by_address_.lower_bound(address); after != by_address_.begin()) {
      auto before = std::prev(after);
      if (before->first + before->second == address && page_of(before->first) == page) {
        address = before->first;
        extent += before->second;
        erase_free(before->first, before->second);
      }
    }
    insert_free(address, extent);
  }

  [[nodiscard]] std::uint64_t reserved() const { return reserved_; }
  [[nodiscard]] std::uint64_t peak_reserved() const { return reserved_; } // never released
  [[nodiscard]] std::uint64_t peak_in_use() const { return peak_in_use_; }

 private:
  struct Page {
    StorageHandle handle;
    std::uint64_t size;
  };

  void add_page(std::uint64_t size) {
    const StorageHandle handle = storage_.allocate(size);
    pages_.push_back({handle, size});
    reserved_ += size;
    const auto base = reinterpret_cast<std::uintptr_t>(storage_.resolve(handle));
    page_bases_.emplace(base, pages_.size() - 1);
    insert_free(base, size);
  }
  [[nodiscard]] std::size_t page_of(std::uintptr_t address) const {
    return std::prev(page_bases_.upper_bound(address))->second;
  }
  void insert_free(std::uintptr_t address, std::uint64_t size) {
    by_size_.emplace(size, address);
    by_address_.emplace(address, size);
  }
  void erase_free(std::uintptr_t address, std::uint64_t size) {
    auto [first, last] = by_size_.equal_range(size);
    for (auto it = first; it != last; ++it) {
      if (it->second == address) {
        by_size_.erase(it);
        break;
      }
    }
    by_address_.erase(address);
  }

  Storage& storage_;
  std::uint64_t page_size_;
  std::uint64_t alignment_;
  std::vector<Page> pages_;
  std::multimap<std::uint64_t, std::uintptr_t> by_size_;
  std::map<std::uintptr_t, std::uint64_t> by_address_;
  std::map<std::uintptr_t, std::size_t> page_bases_; ///< Page base address -> index.
  std::uint64_t reserved_ = 0;
  std::uint64_t in_use_ = 0;
  std::uint64_t peak_in_use_ = 0;
};

} // namespace taintpool::bench
