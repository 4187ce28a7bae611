// RecyclingStorage: host pages that outlive the Device using them, for the
// fuzzers that build a fresh Device for every input (device_fuzzer,
// collective_fuzzer).
//
// Why: HostStorage maps every page with mmap and unmaps it when the pool
// gives it back. A fuzzer builds and tears down its Devices once per input,
// so every input paid for fresh pages twice: page faults on first touch and
// a TLB shootdown per munmap — under perf a quarter of device_fuzzer's time
// and more of collective_fuzzer's (issue 13). Here a page given back is
// kept and handed out again for the next request of the same size, so after
// the first few inputs no page is mapped, faulted in or unmapped.
//
// The virtual-memory capability (reserve, map, unmap: the arena's growth)
// is a HostStorage's, as with HostStorage itself, so every pool takes the
// path it took before; only plain pages are recycled.
//
// What it does not change: every Device, pool and model is still built
// fresh for each input; only page memory is reused. A reused page holds
// whatever its last user wrote, which is what a fresh page's bytes mean to
// the Device and to model::DeviceModel: nothing (D1: fresh bytes are known
// to nobody; the model's values for them are unknown), so no check depends
// on them. Pages are mapped with mmap as HostStorage maps them, not taken
// from the heap: they count in no allocation counter, and the fault injector
// (alloc_faults.hpp) fails the same allocation it failed before.
//
// Self-check: outstanding() counts the pages handed out and not given back;
// a harness checks it is 0 once an input's Devices are gone (every page a
// MemoryManager took, its destructor returned).
//
// Cost: a request scans the kept pages (a handful) from the most recently
// given back; a page is mapped only when none of its size is kept. Not
// thread-safe (a fuzzer runs one input at a time, on one thread).
#pragma once

#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/storage.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <vector>

namespace taintpool::testing {

class RecyclingStorage final : public Storage {
 public:
  /// Pages aligned to `alignment` (a power of two, at most 4096: mmap's
  /// pages are aligned so).
  explicit RecyclingStorage(std::uint64_t alignment)
      : alignment_(alignment)
      , host_(alignment) {
    kept_.reserve(kMaxPages);
  }

  /// Pages the list holds without growing: more than a fuzzer's Devices
  /// hold at once. Past it the list grows (a heap allocation, which an
  /// armed fault would then see).
  static constexpr std::size_t kMaxPages = 1024;
  ~RecyclingStorage() override {
    for (const Page& page : kept_) {
      ::munmap(page.base, static_cast<std::size_t>(page.size));
    }
  }
  RecyclingStorage(const RecyclingStorage&) = delete;
  RecyclingStorage& operator=(const RecyclingStorage&) = delete;
  RecyclingStorage(RecyclingStorage&&) = delete;
  RecyclingStorage& operator=(RecyclingStorage&&) = delete;

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return alignment_; }

  /// A kept page of exactly `size` bytes, else a fresh mapping.
  /// StorageExhausted for size 0 or a refused mapping, as HostStorage.
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
    if (size == 0) {
      throw StorageExhausted("recycling storage: a page of 0 bytes");
    }
    for (std::size_t index = kept_.size(); index > 0; --index) {
      if (kept_[index - 1].size == size) {
        void* base = kept_[index - 1].base;
        kept_[index - 1] = kept_.back();
        kept_.pop_back();
        ++outstanding_;
        return StorageHandle{reinterpret_cast<std::uint64_t>(base)};
      }
    }
    void* base = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      throw StorageExhausted("recycling storage: mmap of " + std::to_string(size) +
                             " bytes refused");
    }
    if (kept_.size() + outstanding_ + 1 > kept_.capacity()) {
      kept_.reserve(2 * kept_.capacity()); // deallocate() never allocates.
    }
    ++outstanding_;
    return StorageHandle{reinterpret_cast<std::uint64_t>(base)};
  }

  /// Keeps the page for the next request of its size.
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    kept_.push_back(Page{reinterpret_cast<void*>(handle.value), size});
    --outstanding_;
  }

  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return reinterpret_cast<void*>(handle.value);
  }

  [[nodiscard]] std::string name() const override { return "recycling host"; }

  /// HostStorage's (see above): reservations and mappings are not recycled.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override { return host_.virtual_memory(); }

  /// Pages handed out and not given back.
  [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_; }

 private:
  struct Page {
    void* base;
    std::uint64_t size;
  };
  std::uint64_t alignment_;
  HostStorage host_;       ///< Its virtual memory only.
  std::vector<Page> kept_; ///< Given back, most recent last; room for every page out too.
  std::size_t outstanding_ = 0;
};

} // namespace taintpool::testing
