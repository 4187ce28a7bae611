// HostStorage: pages of aligned host memory — the embedded default backend,
// and the storage every CPU test, fuzzer and benchmark runs on.
//
// A page is one anonymous mmap (one aligned operator new where the system has
// no mmap); its handle is its address. The system commits a page as it is
// touched and takes it back at once when it is freed, so a pool that holds
// address space it never touches costs no memory, and a stray access to a
// page given back faults. Nothing is cached here: pooling is the pool's job,
// and a storage that also cached would hide the pool's own reuse from the
// benchmarks.
//
// Virtual memory (virtual_memory.hpp), on by default where the system has
// mmap: reserve() is an inaccessible, unbacked mmap; map() replaces a range
// of it with fresh zeroed memory that the system commits page by page as it
// is touched; unmap() makes the range inaccessible again and frees its
// memory. So the CPU tests and fuzzers run the very pool code that a GPU's
// virtual memory drives (CudaStorage), with the same granularity by default.
//
// Every live reservation is recorded (its base and size), so that map() and
// unmap(), which replace memory with MAP_FIXED, touch only address space this
// storage reserved and still holds: a range outside it — a handle that is no
// reservation, one already given back, or an offset past its end — would
// otherwise replace whatever the process keeps there (P3). cuMemMap refuses
// such a range as well. The record costs a lock and an ordered-map step per
// reserve, unreserve, map and unmap: cold calls, each a system call already
// (an arena makes one reservation per lane; a warm pool makes none).
#pragma once

#include <taintpool/pool/storage.hpp>
#include <taintpool/pool/virtual_memory.hpp>

#include <cstdint>
#include <map>
#include <mutex>

namespace taintpool {

/// How a HostStorage behaves; checked by its constructor.
struct HostStorageOptions {
  /// Every page and reservation is aligned to this power of two (at least
  /// 8). 256 matches what CUDA guarantees for device allocations.
  std::uint64_t alignment = 256;
  /// Offer the virtual-memory capability (where the system has mmap).
  bool virtual_memory = true;
  /// Its granularity: a power of two, a multiple of the system page size and
  /// at least the alignment. 2 MiB, like CUDA's on current GPUs.
  std::uint64_t granularity = std::uint64_t{2} << 20;
};

/// Aligned host pages (see above); one mmap per page, reserve, map, unmap
/// and unreserve; no cache.
class HostStorage final : public Storage, public VirtualMemory {
 public:
  /// Pages aligned to `alignment` (a power of two, at least 8), virtual
  /// memory with the default granularity. Throws std::invalid_argument
  /// otherwise.
  explicit HostStorage(std::uint64_t alignment = 256);
  /// As configured; throws std::invalid_argument naming what is wrong.
  explicit HostStorage(HostStorageOptions options);

  /// The constructor's alignment.
  [[nodiscard]] std::uint64_t alignment() const noexcept override { return options_.alignment; }
  /// One mmap (aligned). Throws StorageExhausted for size 0, a size beyond
  /// PTRDIFF_MAX, or a refusal by the system.
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override;
  /// The matching munmap.
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override;
  /// The handle is the address: no lookup.
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override;
  /// "host".
  [[nodiscard]] std::string name() const override { return "host"; }
  /// This storage when options.virtual_memory was asked for and the system
  /// has mmap; else null.
  [[nodiscard]] VirtualMemory* virtual_memory() noexcept override;

  /// VirtualMemory (see above). reserve and map check their ranges against
  /// the granularity, and map refuses (std::invalid_argument: a caller's
  /// bug, nothing mapped) a handle that is not a live reservation of this
  /// storage and a range that does not lie inside it. unmap cannot throw: a
  /// range outside a live reservation is left alone (a caller's bug that
  /// must not take memory the process uses), and otherwise it gives back
  /// what map gave. unreserve forgets the reservation, and leaves alone a
  /// handle or size that names none.
  [[nodiscard]] std::uint64_t granularity() const noexcept override { return options_.granularity; }
  [[nodiscard]] StorageHandle reserve(std::uint64_t size) override;
  void unreserve(StorageHandle reservation, std::uint64_t size) noexcept override;
  [[nodiscard]] StorageHandle map(StorageHandle reservation, std::uint64_t offset,
                                  std::uint64_t size) override;
  void unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
             StorageHandle chunk) noexcept override;

 private:
  void check_granular(const char* call, std::uint64_t value) const;
  /// Refuses (std::invalid_argument) a null reservation, one this storage
  /// does not hold, and a range that does not lie inside it: what MAP_FIXED
  /// cannot be trusted with.
  void check_mappable(StorageHandle reservation, std::uint64_t offset, std::uint64_t size) const;
  /// Whether [offset, offset + size) lies inside a reservation of `reserved`
  /// bytes (0: none), the one test map refuses by and unmap leaves alone by.
  [[nodiscard]] static bool lies_inside(std::uint64_t reserved, std::uint64_t offset,
                                        std::uint64_t size) noexcept;
  /// The size of the live reservation at `reservation`, or 0 if there is none.
  [[nodiscard]] std::uint64_t reserved_size(StorageHandle reservation) const;

  HostStorageOptions options_;
  /// Live reservations: base address -> size (see the file comment).
  /// Guarded by reservations_mutex_, so storages shared by managers on
  /// several threads keep it whole.
  mutable std::mutex reservations_mutex_;
  std::map<std::uintptr_t, std::uint64_t> reservations_;
};

} // namespace taintpool
