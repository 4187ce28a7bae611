// Storage: where pages of memory come from (§3.4).
//
// The smallest interface a pool needs, in the spirit of RMM's memory
// resources: allocate a page, free it, turn its handle into a pointer, and
// say what alignment every page has. Everything else — statistics, fault
// injection, capacity limits — is an adaptor that wraps a Storage
// (CountingStorage, FaultInjectingStorage), never a flag inside one, so the
// real backends stay small: HostStorage (aligned host memory, the default)
// and CudaStorage (device memory; taintpool::cuda).
//
// One optional capability: virtual_memory() — reserve address space, back it
// with memory on demand (virtual_memory.hpp). A storage without it returns
// null, and the pool serves large buffers from pages instead.
//
// A storage is asked for pages only — large, rare requests — so a virtual
// call per request costs nothing measurable; the pool carves pages into
// slices without calling the storage at all on its fast path.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace taintpool {

class VirtualMemory;

/// An opaque page handle. The storage decides what it holds (a host address,
/// a device address); 0 never names a page.
struct StorageHandle {
  std::uint64_t value = 0; ///< Storage-defined; 0 = no page.

  /// Names a page.
  [[nodiscard]] explicit operator bool() const noexcept { return value != 0; }
  /// Same value, same page.
  friend bool operator==(StorageHandle, StorageHandle) = default;
};

/// Thrown by Storage::allocate when it cannot provide the page: out of
/// memory, or a driver error. The message says which. The pool turns it
/// into an OutOfMemory error with its own breakdown (P3).
///
/// The text is kept in the exception itself, and std::runtime_error is given
/// none (its empty message is the library's shared empty string): handing
/// it the text copied it into a second, reference-counted buffer, a heap
/// allocation per refusal the fault injector makes on purpose (issue 13,
/// thirtieth round). Exception (exception.hpp) is shaped so for the same
/// reason.
class StorageExhausted : public std::runtime_error {
 public:
  explicit StorageExhausted(std::string text)
      : std::runtime_error("")
      , text_(std::move(text)) {}
  explicit StorageExhausted(const char* text)
      : StorageExhausted(std::string(text)) {}

  /// The message given.
  [[nodiscard]] const char* what() const noexcept override { return text_.c_str(); }

 private:
  std::string text_;
};

/// The page source interface (see above). A manager calls it from its one
/// thread, and only for pages: never per allocation once warmed up.
class Storage {
 public:
  virtual ~Storage() = default;

  /// Every page's base address is a multiple of this power of two.
  [[nodiscard]] virtual std::uint64_t alignment() const noexcept = 0;

  /// A page of exactly `size` bytes (size > 0). Throws StorageExhausted when
  /// the page cannot be had; nothing is allocated then. May be slow (a
  /// driver call): the pool asks only when no free page fits.
  [[nodiscard]] virtual StorageHandle allocate(std::uint64_t size) = 0;

  /// Returns a page. `size` is what allocate was asked for.
  virtual void deallocate(StorageHandle handle, std::uint64_t size) noexcept = 0;

  /// The page's base address, in the storage's address space (host or device).
  [[nodiscard]] virtual void* resolve(StorageHandle handle) const noexcept = 0;

  /// For messages: "host", "cuda device 0 (stream-ordered)".
  [[nodiscard]] virtual std::string name() const = 0;

  /// Appends name() to `text`: what a refusal's message calls. An adaptor
  /// that extends its inner storage's name overrides it to append in place,
  /// so a caller that has reserved room for the name allocates nothing for
  /// it; name() returns a string, and "recycling host (fault-injecting)" is
  /// past the short-string buffer: a heap copy per out-of-memory refusal,
  /// which the pool fuzzer provokes on purpose (issue 13, thirtieth round).
  /// The words are name()'s, always.
  virtual void append_name(std::string& text) const { text += name(); }

  /// The virtual-memory capability (virtual_memory.hpp), or null when this
  /// storage has none (the default). Must give the same answer for as long
  /// as a pool uses the storage. Adaptors return a wrapped capability.
  [[nodiscard]] virtual VirtualMemory* virtual_memory() noexcept { return nullptr; }

 protected:
  Storage() = default;
  Storage(const Storage&) = default;
  Storage& operator=(const Storage&) = default;
  Storage(Storage&&) = default;
  Storage& operator=(Storage&&) = default;
};

} // namespace taintpool
