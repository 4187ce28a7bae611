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
// path it took before; only plain pages are recycled — unless the storage is
// built from HostStorageOptions, as pool_fuzzer builds it: then reservations
// are recycled too (below).
//
// Recycled virtual memory (the HostStorageOptions constructor, with
// options.virtual_memory): pool_fuzzer builds a MemoryManager per input,
// whose arenas reserve, map, unmap and unreserve — four system calls per
// chunk and reservation, each a VMA split or merge: with the plain pages',
// 14% of pool_fuzzer's time in the kernel (issue 13, eighteenth round). Here
// a reservation is one read-write MAP_NORESERVE mapping, made once and
// handed out again for the next reservation of its size; map() and unmap()
// only count, make no system call, and return what HostStorage returns
// (the chunk's address). What differs from HostStorage, and why no check
// sees it: an unmapped range stays accessible and a chunk mapped again
// holds what was written there before, where HostStorage would fault and
// give zeros — the pool never reads or writes the bytes it carves (its
// records are heap objects), so for the pool nothing changes; and memory a
// user writes into a chunk stays committed until its reservation is
// dropped for good (past the keep limits below, or at destruction). The
// checks HostStorage makes on reserve and map (granular sizes and offsets)
// are made here too, with the same exception.
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
//
// Bounds: a fuzzer asks for pages and reservations of many sizes over a
// long run, and every kept one is a mapping (the kernel allows some 65,000
// per process). At most kMaxPages pages and kMaxReservations reservations
// of at most kMaxReservedBytes in all are kept; one given back past a bound
// is unmapped (the oldest kept first), so a long run holds a bounded set.
#pragma once

#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <sys/mman.h>
#include <vector>

namespace taintpool::testing {

class RecyclingStorage final : public Storage, public VirtualMemory {
 public:
  /// Pages aligned to `alignment` (a power of two, at most 4096: mmap's
  /// pages are aligned so); virtual memory is a HostStorage's (2 MiB
  /// granules), not recycled.
  explicit RecyclingStorage(std::uint64_t alignment)
      : alignment_(alignment)
      , host_(alignment) {
    kept_.reserve(kMaxPages);
  }

  /// Pages as HostStorage(options) makes them (options.alignment at most
  /// 4096), and, when options.virtual_memory, reservations of its
  /// granularity recycled as well (see above).
  explicit RecyclingStorage(const HostStorageOptions& options)
      : alignment_(options.alignment)
      , host_(options)
      , recycle_reservations_(options.virtual_memory) {
    if (options.alignment > 4096) {
      throw std::invalid_argument("RecyclingStorage: alignment " +
                                  std::to_string(options.alignment) + " is past mmap's 4096");
    }
    kept_.reserve(kMaxPages);
    if (recycle_reservations_) {
      reservations_.reserve(kMaxReservations);
    }
  }

  /// Pages the list holds without growing: more than a fuzzer's Devices
  /// hold at once. Past it the list grows (a heap allocation, which an
  /// armed fault would then see).
  static constexpr std::size_t kMaxPages = 1024;
  /// Reservations kept, and the address space they may span in all (a
  /// MemoryConfig{} arena reserves 256 GiB per lane).
  static constexpr std::size_t kMaxReservations = 64;
  static constexpr std::uint64_t kMaxReservedBytes = std::uint64_t{1} << 40;

  ~RecyclingStorage() override {
    for (const Page& page : kept_) {
      ::munmap(page.base, static_cast<std::size_t>(page.size));
    }
    for (const Page& reservation : reservations_) {
      ::munmap(reservation.base, static_cast<std::size_t>(reservation.size));
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
    if (void* base = take(kept_, size)) {
      ++outstanding_;
      return StorageHandle{reinterpret_cast<std::uint64_t>(base)};
    }
    void* base = map_fresh(size, "a page", 0);
    if (kept_.size() + outstanding_ + 1 > kept_.capacity()) {
      kept_.reserve(2 * kept_.capacity()); // deallocate() never allocates.
    }
    ++outstanding_;
    return StorageHandle{reinterpret_cast<std::uint64_t>(base)};
  }

  /// Keeps the page for the next request of its size (within the bounds).
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    keep(kept_, Page{reinterpret_cast<void*>(handle.value), size}, kMaxPages, UINT64_MAX);
    --outstanding_;
  }

  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return reinterpret_cast<void*>(handle.value);
  }

  [[nodiscard]] std::string name() const override { return "recycling host"; }

  /// This storage when reservations are recycled; else HostStorage's (see
  /// above: reservations and mappings are then not recycled), or null.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override {
    return recycle_reservations_ ? this : host_.virtual_memory();
  }

  /// VirtualMemory, when reservations are recycled (see above).
  [[nodiscard]] std::uint64_t granularity() const noexcept override { return host_.granularity(); }
  /// A kept reservation of exactly `size` bytes, else a fresh read-write
  /// MAP_NORESERVE mapping. std::invalid_argument for a size that is not
  /// a multiple of the granularity, StorageExhausted for a refusal.
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override {
    check_granular("reserve", size);
    if (size == 0) {
      throw StorageExhausted("recycling storage: a reservation of 0 bytes");
    }
    if (void* base = take(reservations_, size)) {
      ++reserved_;
      return StorageHandle{reinterpret_cast<std::uint64_t>(base)};
    }
    void* base = map_fresh(size, "a reservation", MAP_NORESERVE);
    if (reservations_.size() + reserved_ + 1 > reservations_.capacity()) {
      reservations_.reserve(2 * reservations_.capacity()); // unreserve() never allocates.
    }
    ++reserved_;
    return StorageHandle{reinterpret_cast<std::uint64_t>(base)};
  }
  /// Keeps the reservation for the next of its size (within the bounds).
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override {
    keep(reservations_, Page{reinterpret_cast<void*>(reservation.value), size}, kMaxReservations,
         kMaxReservedBytes);
    --reserved_;
  }
  /// The chunk's address, as HostStorage returns it; no system call.
  /// std::invalid_argument for an offset or size off the granularity.
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override {
    check_granular("map", offset);
    check_granular("map", size);
    ++mapped_;
    return StorageHandle{reservation.value + offset};
  }
  /// Counts only: the range stays accessible (see above).
  void unmap(StorageHandle /*reservation*/, std::uint64_t /*offset*/, std::uint64_t /*size*/,
             StorageHandle /*chunk*/) noexcept override {
    --mapped_;
  }

  /// Pages handed out and not given back.
  [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_; }
  /// Reservations handed out and not given back (0 when not recycled).
  [[nodiscard]] std::size_t outstanding_reservations() const noexcept { return reserved_; }
  /// Chunks mapped and not unmapped (0 when reservations are not recycled).
  [[nodiscard]] std::size_t outstanding_chunks() const noexcept { return mapped_; }
  /// Pages and reservations kept for reuse now.
  [[nodiscard]] std::size_t kept_pages() const noexcept { return kept_.size(); }
  [[nodiscard]] std::size_t kept_reservations() const noexcept { return reservations_.size(); }

 private:
  struct Page {
    void* base;
    std::uint64_t size;
  };

  /// Takes a kept mapping of exactly `size` bytes out of `list` (the most
  /// recently given back first); null when none.
  static void* take(std::vector<Page>& list, std::uint64_t size) noexcept {
    for (std::size_t index = list.size(); index > 0; --index) {
      if (list[index - 1].size == size) {
        void* base = list[index - 1].base;
        list.erase(list.begin() + static_cast<std::ptrdiff_t>(index - 1));
        return base;
      }
    }
    return nullptr;
  }

  /// Puts `page` at the back of `list`, first unmapping the oldest kept
  /// ones while the list would pass `max_count` mappings or `max_bytes`
  /// (and `page` itself when it alone passes `max_bytes`). Never allocates:
  /// the list's capacity covers every mapping out.
  static void keep(std::vector<Page>& list, Page page, std::size_t max_count,
                   std::uint64_t max_bytes) noexcept {
    if (page.size > max_bytes) {
      ::munmap(page.base, static_cast<std::size_t>(page.size));
      return;
    }
    std::uint64_t bytes = page.size;
    for (const Page& kept : list) {
      bytes += kept.size;
    }
    std::size_t drop = 0;
    while (drop < list.size() && (list.size() - drop + 1 > max_count || bytes > max_bytes)) {
      ::munmap(list[drop].base, static_cast<std::size_t>(list[drop].size));
      bytes -= list[drop].size;
      ++drop;
    }
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(drop));
    list.push_back(page);
  }

  /// A fresh read-write mapping, with `flags` added (MAP_NORESERVE for a
  /// reservation: no memory is set aside for its address space; it is
  /// committed as it is touched). StorageExhausted if refused.
  static void* map_fresh(std::uint64_t size, const char* what, int flags) {
    void* base = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (base == MAP_FAILED) {
      throw StorageExhausted(std::string("recycling storage: mmap of ") + what + " of " +
                             std::to_string(size) + " bytes refused");
    }
    return base;
  }

  void check_granular(const char* call, std::uint64_t value) const {
    if (value % host_.granularity() != 0) {
      throw std::invalid_argument(std::string("RecyclingStorage::") + call + ": " +
                                  std::to_string(value) + " is not a multiple of the granularity " +
                                  std::to_string(host_.granularity()));
    }
  }

  std::uint64_t alignment_;
  HostStorage host_;       ///< Its options and, unless recycled, its virtual memory.
  std::vector<Page> kept_; ///< Given back, most recent last; room for every page out too.
  std::size_t outstanding_ = 0;
  bool recycle_reservations_ = false;
  std::vector<Page> reservations_; ///< Given back, most recent last; room for every one out.
  std::size_t reserved_ = 0;
  std::size_t mapped_ = 0;
};

} // namespace taintpool::testing
