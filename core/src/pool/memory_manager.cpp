#include <taintpool/exception.hpp>
#include <taintpool/pool/detail/slice.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../engine/words.hpp"
#include "pools.hpp"

namespace taintpool {

using detail::Slice;
using detail::SliceState;

namespace {

std::uint64_t round_up(std::uint64_t size, std::uint64_t unit) noexcept {
  // Callers keep size <= 2^63, so this cannot wrap.
  return (size + unit - 1) & ~(unit - 1);
}

/// The raw id of the first allocation a manager in `space` mints.
constexpr std::uint64_t first_raw_id(std::uint32_t space) {
  return allocation_id(space, 1).raw();
}

/// The refusals below write their words into one string reserved once,
/// with words.hpp's appends: the operator+ chains they replace built a
/// temporary per piece, three to seven allocations a refusal, and the pool
/// fuzzer refuses on purpose several times an input (issue 13). Reserved
/// for the longest text (every number 20 digits: 231 bytes), so no refusal
/// grows its string. The words are pinned by tests/pool/refusal_text_test.cpp.
constexpr std::size_t refusal_capacity = 256;

/// "4096 bytes".
void append_bytes(std::string& text, std::uint64_t count) {
  words::append_number(text, count);
  text += " bytes";
}

/// The allocation id spaces live managers hold, a bit each (failure_id.hpp):
/// a manager takes the lowest free one when it is built and hands it back
/// when it goes, so the first manager of a program mints the plain numbers
/// 1, 2, 3 … and two live managers never share a space. Behind a mutex, as
/// managers may be built on any thread; touched only then, never on a hot
/// path.
class IdSpaces {
 public:
  std::uint32_t take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    const std::uint32_t space = take_lowest_free();
    if (space == allocation_spaces) {
      throw std::length_error("MemoryManager: " + std::to_string(allocation_spaces) +
                              " managers are alive already, and each mints its allocation ids "
                              "in a space of its own");
    }
    return space;
  }

  void give(std::uint32_t space) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    clear(space);
  }

  /// give(space), then take(), as one step under the lock: what a manager
  /// destroyed and built again would hold (MemoryManager::restart). Cannot
  /// fail: the space just given back is free, so some space is.
  std::uint32_t retake(std::uint32_t space) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    clear(space);
    return take_lowest_free();
  }

 private:
  void clear(std::uint32_t space) noexcept {
    taken_[space / 64] &= ~(std::uint64_t{1} << (space % 64));
  }
  /// Marks the lowest free space taken and returns it; allocation_spaces
  /// when every one is taken. The caller holds the lock.
  std::uint32_t take_lowest_free() noexcept {
    for (std::size_t word = 0; word < taken_.size(); ++word) {
      if (taken_[word] != ~std::uint64_t{0}) {
        const auto bit = static_cast<unsigned>(std::countr_one(taken_[word]));
        taken_[word] |= std::uint64_t{1} << bit;
        return static_cast<std::uint32_t>(word * 64 + bit);
      }
    }
    return allocation_spaces;
  }

  std::mutex mutex_;
  std::array<std::uint64_t, allocation_spaces / 64> taken_{};
};

/// Never destroyed, so a manager destroyed during static destruction (a
/// global Device) can still hand its space back: one registry for the
/// process, leaked on purpose, mutable behind its own mutex.
IdSpaces& id_spaces() {
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory,cppcoreguidelines-avoid-non-const-global-variables)
  static IdSpaces& spaces = *new IdSpaces();
  return spaces;
}

} // namespace

MemoryManager::MemoryManager(Storage& storage, ErrorGraph& graph, MemoryConfig config)
    : storage_(storage)
    , graph_(graph)
    , config_(std::move(config))
    , observer_(config_.observer) {
  config_.validate(storage_.alignment());
  // In the body, after validate(): a bad config throws before anything is
  // taken. The id space first: if there is none, nothing else is built.
  // Both follow take(), which must come after validate(): not initializers.
  space_ = id_spaces().take(); // NOLINT(cppcoreguidelines-prefer-member-initializer)
  // NOLINTNEXTLINE(cppcoreguidelines-prefer-member-initializer)
  next_allocation_ = first_raw_id(space_);
  try {
    inbox_ = new detail::ReleaseInbox();
  } catch (...) {
    id_spaces().give(space_);
    throw;
  }
  try {
    cache_ = std::make_unique<detail::SliceCache>(*inbox_);
    lanes_.resize(max_lanes);
    if (observer_ != nullptr) {
      observed_ = std::make_unique<ObservedStorage>(storage_, *observer_);
    }
  } catch (...) {
    observed_.reset();
    lanes_.clear();
    cache_.reset();
    inbox_->release();
    id_spaces().give(space_);
    throw;
  }
}

MemoryManager::~MemoryManager() {
  reset();
  // Tombstoned slices with handles still out: drop the manager's reference.
  // The last handle frees the record (detail::release); one whose handles
  // are already gone is freed here.
  for (Slice* slice = tombstoned_; slice != nullptr;) {
    Slice* next = slice->bin_next;
    slice->bin_prev = nullptr;
    slice->bin_next = nullptr;
    if (slice->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      detail::destroy(slice);
    }
    slice = next;
  }
  tombstoned_ = nullptr;
  lanes_.clear();
  for (auto& closed : closed_lanes_) {
    closed.clear();
  }
  cache_.reset();
  inbox_->release();
  id_spaces().give(space_);
}

// ------------------------------------------------------------ discovery

void MemoryManager::end_allocations(Slice* released, bool erase_later) noexcept {
  // Many handles dropped between two calls (a step's activations, a batch
  // of requests) arrive as one list, and with 10^5 live allocations each
  // record and table slot in it is a cache miss. So a cursor runs
  // released_lookahead records ahead and asks for what ending them will
  // read; only the walk along the list itself stays one miss per record.
  // The first few are asked for here, as the cursor passes them (their
  // link and id share a line): each record's table slot is asked for once,
  // not again when its turn comes (8 instructions an end, pool20).
  Slice* ahead = released;
  for (std::uint32_t lead = 0; lead < released_lookahead && ahead != nullptr; ++lead) {
    live_.prefetch(ahead->allocation);
    ahead = ahead->next_released;
  }
  while (released != nullptr) {
    if (ahead != nullptr) {
      __builtin_prefetch(ahead, 1); // Its first line: state, page, neighbours.
      live_.prefetch(ahead->allocation);
      ahead = ahead->next_released;
    }
    Slice* slice = released;
    released = slice->next_released;
    slice->next_released = nullptr;
    if (slice->state == SliceState::Tombstoned) {
      // Its last handle is gone too: the record can be reused.
      if (slice->bin_prev != nullptr) {
        slice->bin_prev->bin_next = slice->bin_next;
      } else {
        tombstoned_ = slice->bin_next;
      }
      if (slice->bin_next != nullptr) {
        slice->bin_next->bin_prev = slice->bin_prev;
      }
      slice->size = 0;
      slice->allocation = 0;
      cache_->give(slice);
      continue;
    }
    // P1: the allocation has ended for good; no tag outlives it. Its table
    // slot, a cache miss at 10^5 live allocations, was asked for when the
    // cursor passed it: the rest is done while it comes.
    const std::uint64_t ended = slice->allocation;
    if (observer_ != nullptr) [[unlikely]] {
      observer_->on_released(AllocationId::from_raw(ended), slice->page->base + slice->offset,
                             slice->size);
    }
    stats_.in_use -= slice->size;
    stats_.padding -= slice->extent - slice->size;
    stats_.allocations -= 1;
    slice->taint.clear(graph_);
    if (erase_later && erase_later_count_ < erase_later_.size()) {
      erase_later_[erase_later_count_++] = ended; // Its slot arrives meanwhile.
    } else {
      live_.erase(live_.find(ended));
    }
    slice->state = SliceState::Free;
    slice->allocation = 0;
    slice->size = 0;
    slice->page->pool->release(slice);
  }
}

void MemoryManager::erase_ended() noexcept {
  for (std::uint32_t at = 0; at < erase_later_count_; ++at) {
    live_.erase(live_.find(erase_later_[at]));
  }
  erase_later_count_ = 0;
}

// ------------------------------------------------------------ allocation

std::uint32_t MemoryManager::route(std::uint64_t size) const noexcept {
  // The ladder's bounds read once: the vector's size, recomputed at every
  // step and again for the arena's answer, was half of this walk's
  // instructions (every allocate walks it; pool20).
  const SlicedPoolConfig* const ladder = config_.sliced.data();
  const auto rungs = static_cast<std::uint32_t>(config_.sliced.size());
  std::uint32_t index = 0;
  while (index < rungs && size > ladder[index].max_slice) {
    ++index;
  }
  return index;
}

std::vector<std::unique_ptr<detail::Pool>>& MemoryManager::open_lane(std::uint32_t lane) {
  if (lane >= max_lanes) {
    // Written on the stack: std::invalid_argument copies its text into a
    // buffer of its own whatever it is given, so a std::string built first
    // was one more heap allocation a refusal, and the pool fuzzer asks for a
    // lane past the last on purpose (issue 13). 128 bytes hold the longest
    // text (every number 10 digits: 100 bytes and the terminator).
    std::array<char, 128> text{};
    char* at = text.data();
    char* const end = text.data() + text.size() - 1; // room for the terminator
    const auto put = [&](std::string_view piece) {   // cut at `end`, never past it
      at = std::copy_n(piece.begin(), std::min(piece.size(), static_cast<std::size_t>(end - at)),
                       at);
    };
    const auto put_number = [&](std::uint64_t value) { at = std::to_chars(at, end, value).ptr; };
    put("MemoryManager: lane ");
    put_number(lane);
    put(" is not one of the ");
    put_number(max_lanes);
    put(" lanes a manager serves (0 to ");
    put_number(max_lanes - 1);
    put(")");
    *at = '\0';
    throw std::invalid_argument(text.data());
  }
  if (!closed_lanes_[lane].empty()) {
    // Closed by restart(), emptied as reset() empties a lane that goes on
    // serving: built from the same config, placed at the same lane.
    lanes_[lane].swap(closed_lanes_[lane]);
    return lanes_[lane];
  }
  Storage& pages = observed_ ? static_cast<Storage&>(*observed_) : storage_;
  std::vector<std::unique_ptr<detail::Pool>> pools;
  for (const SlicedPoolConfig& pool : config_.sliced) {
    pools.push_back(std::make_unique<detail::SlicedPool>(pages, *cache_, stats_, config_.alignment,
                                                         pool.page_size));
  }
  pools.push_back(
      std::make_unique<detail::ArenaPool>(pages, *cache_, stats_, config_.alignment, config_));
  for (std::uint32_t index = 0; index < pools.size(); ++index) {
    pools[index]->place(index, lane);
  }
  lanes_[lane] = std::move(pools);
  return lanes_[lane];
}

std::uint32_t MemoryManager::lane_count() const noexcept {
  std::uint32_t count = 0;
  for (const auto& lane : lanes_) {
    count += lane.empty() ? 0u : 1u;
  }
  return count;
}

detail::Released MemoryManager::release_free_memory() {
  detail::Released total;
  for (auto& lane : lanes_) {
    for (auto& pool : lane) {
      const detail::Released released = pool->release_free_pages();
      total.bytes += released.bytes;
      total.blocks += released.blocks;
    }
  }
  return total;
}

void MemoryManager::throw_out_of_memory(std::uint64_t size, std::string_view cause,
                                        const detail::Released& released) {
  const MemoryStats now = stats();
  // The same words as ever, appended into one buffer reserved once: an
  // operator+ chain reallocated the message as it grew, and took `cause` as
  // a string copy. A fuzzer provokes this on purpose (issue 13).
  // The storage's name is appended in place (Storage::append_name): a copy
  // of an adaptor's name was one more heap string per refusal. 64 bytes of
  // the reservation are for it; a longer name grows the buffer once.
  std::string text;
  text.reserve(320 + cause.size());
  const auto number = [&text](std::uint64_t value) {
    std::array<char, 24> digits{};
    text.append(digits.data(),
                std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr);
  };
  const auto count_of_bytes = [&](std::uint64_t value) {
    number(value);
    text += " bytes";
  };
  text += "cannot allocate ";
  count_of_bytes(size);
  text += " from ";
  storage_.append_name(text);
  text += ": in use ";
  count_of_bytes(now.in_use);
  text += ", reserved ";
  count_of_bytes(now.reserved);
  text += " in ";
  number(now.pages);
  text += " pages, largest free block ";
  count_of_bytes(now.largest_free_block);
  text += "; gave back ";
  count_of_bytes(released.bytes);
  text += " in ";
  number(released.blocks);
  text += " pages of cached free memory first (";
  text += cause;
  text += ")";
  throw Exception(Error::out_of_memory(std::move(text)));
}

Slice* MemoryManager::reserve_again_or_throw(detail::Pool& pool, std::uint64_t size,
                                             std::uint64_t extent) {
  try {
    throw; // What the first pool.reserve threw (allocate's handler calls this).
  } catch (const StorageExhausted& first) {
    // Out of memory is the last resort: memory every lane caches free is
    // memory the storage could give us. Hand it back and try once more.
    detail::Released released;
    try {
      released = release_free_memory();
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(size, first.what(), released);
    }
    if (released.bytes == 0) {
      throw_out_of_memory(size, first.what(), released);
    }
    try {
      return pool.reserve(extent);
    } catch (const StorageExhausted& second) {
      throw_out_of_memory(size, second.what(), released);
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(size, "the host could not allocate the pool's own records", released);
    }
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(size, "the host could not allocate the pool's own records", {});
  }
}

Allocation MemoryManager::allocate(std::uint64_t size, std::uint32_t lane) {
  live_.prefetch(next_allocation_); // Where the new id will land: fetched while we reserve.
  // Allocations ended since the last call go back to their pools first (so
  // this request can reuse them), but their table entries are erased on the
  // way out, however it is taken: each is a cache miss with 10^5 live
  // allocations, and by then it has arrived. Nothing in between looks an id
  // up, so no caller ever sees an ended allocation in the table.
  struct EraseEndedOnExit {
    MemoryManager& manager;
    explicit EraseEndedOnExit(MemoryManager& owner) noexcept
        : manager(owner) {}
    EraseEndedOnExit(const EraseEndedOnExit&) = delete;
    EraseEndedOnExit& operator=(const EraseEndedOnExit&) = delete;
    EraseEndedOnExit(EraseEndedOnExit&&) = delete;
    EraseEndedOnExit& operator=(EraseEndedOnExit&&) = delete;
    ~EraseEndedOnExit() {
      // Most calls ended nothing to erase: no call then (callgrind: ~8
      // instructions a pair of the random workload, issue 12 item 4).
      if (manager.erase_later_count_ != 0) {
        manager.erase_ended();
      }
    }
  } const erase_ended_on_exit(*this);
  if (Slice* released = take_released()) {
    end_allocations(released, /*erase_later=*/true);
  }
  if (size > config_.max_allocation) {
    throw_too_big(size);
  }
  if ((next_allocation_ & allocation_number_mask) == 0) [[unlikely]] {
    throw_ids_exhausted(); // 2^52 - 1 allocations minted: the space is spent.
  }
  std::vector<std::unique_ptr<detail::Pool>>* pools = nullptr;
  if (lane < lanes_.size() && !lanes_[lane].empty()) [[likely]] {
    pools = &lanes_[lane];
  } else {
    try {
      pools = &open_lane(lane);
    } catch (const std::bad_alloc&) {
      throw_out_of_memory(size, "the host could not allocate the lane's pools", {});
    }
  }
  const std::uint64_t extent = size == 0 ? config_.alignment : round_up(size, config_.alignment);
  detail::Pool& pool = *(*pools)[route(size)];
  try {
    live_.reserve_one();
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(size, "the host could not grow the allocation table", {});
  }
  // The first try inline, the rest (cold) out of line: a function of its
  // own around it cost ~15 instructions a pair in calls and spills.
  Slice* slice = nullptr;
  try {
    slice = pool.reserve(extent);
  } catch (...) {
    slice = reserve_again_or_throw(pool, size, extent);
  }
  slice->taint.clear(graph_); // P1: a new allocation on an old slice starts clean.
  if (config_.fresh_bytes == FreshBytes::NeverWritten) {
    // N1: its bytes are claimed before anyone can bind them. Only minting
    // the node can throw (the graph's table growing); the slice goes back
    // then, and nothing has changed.
    try {
      never_written_.claim(slice->taint, size, graph_);
    } catch (const std::bad_alloc&) {
      pool.release(slice);
      throw_out_of_memory(size, "the host could not allocate the never-written failure", {});
    }
  }

  // Bind: nothing below can fail.
  const std::uint64_t id = next_allocation_++;
  slice->state = SliceState::Bound;
  slice->allocation = id;
  slice->size = size;
  live_.insert(detail::LiveAllocation(id, slice));
  // A free slice holds only the manager's reference and no handle can reach
  // it, so the first handle's count is a plain store, not an atomic add.
  slice->refs.store(2, std::memory_order_relaxed);
  stats_.in_use += size;
  stats_.padding += slice->extent - size;
  stats_.allocations += 1;
  stats_.peak_in_use = stats_.in_use > stats_.peak_in_use ? stats_.in_use : stats_.peak_in_use;
  if (observer_ != nullptr) [[unlikely]] {
    observer_->on_bound(AllocationId::from_raw(id), slice->page->base + slice->offset, size);
  }
  return Allocation(slice, AllocationId::from_raw(id), size);
}

// ------------------------------------------------------------ bindings

void MemoryManager::throw_too_big(std::uint64_t size) const {
  std::string text;
  text.reserve(refusal_capacity);
  text += "cannot allocate ";
  append_bytes(text, size);
  text += ": no pool holds more than ";
  append_bytes(text, config_.max_allocation);
  text += " (MemoryConfig::max_allocation)";
  throw Exception(Error::buffer_too_big(std::move(text)));
}

void MemoryManager::throw_not_found(AllocationId allocation) {
  std::string text;
  text.reserve(refusal_capacity);
  words::append(text, allocation);
  text += " no longer exists: its last handle was dropped, or the memory was reset";
  throw Exception(Error::not_found(std::move(text)));
}

void MemoryManager::throw_ids_exhausted() const {
  throw std::overflow_error("MemoryManager::allocate: memory " + std::to_string(space_) +
                            " has minted every allocation id of its space");
}

void MemoryManager::throw_bad_binding(const Binding& binding) const {
  std::string text;
  if (allocation_space(binding.allocation) != space_) {
    // Never minted here: the lookup missed, as for an unknown id, but the
    // caller mixed up devices, which deserves its own words.
    text.reserve(refusal_capacity);
    words::append(text, binding.allocation);
    text += " was made by another memory manager (memory ";
    words::append_number(text, allocation_space(binding.allocation));
    text += "), not this one (memory ";
    words::append_number(text, space_);
    text += "): a binding is used only on the device that made its buffer";
    throw Exception(Error::invalid_binding(std::move(text)));
  }
  const detail::LiveAllocation* entry = live_.find(binding.allocation.raw());
  if (entry == nullptr) {
    throw_not_found(binding.allocation);
  }
  text.reserve(refusal_capacity);
  text += "bytes ";
  words::append(text, binding.range);
  text += " reach past the end of ";
  words::append(text, binding.allocation);
  text += " (size ";
  words::append_number(text, entry->slice->size);
  text += ")";
  throw Exception(Error::invalid_binding(std::move(text)));
}

void MemoryManager::taint(const Binding& binding, FailureId failure) {
  lookup(binding).taint.taint(binding.range, failure, graph_);
}

void MemoryManager::written(const Binding& binding) {
  lookup(binding).taint.written(binding.range, graph_);
}

std::optional<FailureId> MemoryManager::failure(const Binding& binding) {
  return lookup(binding).taint.failure(binding.range);
}

std::vector<FailureId> MemoryManager::failures(const Binding& binding) {
  return lookup(binding).taint.failures(binding.range);
}

BoundBytes MemoryManager::resolve(const Binding& binding) {
  discover_released();
  return resolve_swept(binding);
}

Allocation MemoryManager::share(AllocationId allocation) {
  discover_released();
  detail::LiveAllocation* entry = live_.find(allocation.raw());
  if (entry == nullptr) {
    throw_not_found(allocation);
  }
  Slice* slice = entry->slice;
  // Only while a handle exists: 1 is the manager's own reference, and a
  // slice at 1 is already on its way to the inbox.
  std::uint64_t refs = slice->refs.load(std::memory_order_relaxed);
  do {
    if (refs <= 1) {
      return Allocation();
    }
  } while (!slice->refs.compare_exchange_weak(refs, refs + 1, std::memory_order_relaxed));
  return Allocation(slice, allocation, slice->size);
}

bool MemoryManager::contains(AllocationId allocation) {
  discover_released();
  return live_.find(allocation.raw()) != nullptr;
}

AllocationInfo MemoryManager::describe(const Slice* slice) noexcept {
  return AllocationInfo{AllocationId::from_raw(slice->allocation),
                        slice->size,
                        slice->extent,
                        slice->page->base + slice->offset,
                        slice->page->pool_index,
                        slice->page->lane,
                        &slice->taint};
}

std::vector<const Taint*> MemoryManager::carriers() const {
  std::vector<const Taint*> found;
  carriers(found);
  return found;
}

void MemoryManager::carriers(std::vector<const Taint*>& into) const {
  into.clear();
  live_.for_each([&](const detail::LiveAllocation& entry) {
    if (!entry.slice->taint.is_clean()) {
      into.push_back(&entry.slice->taint);
    }
  });
}

// ------------------------------------------------------------ cleanup, reset

void MemoryManager::cleanup() {
  discover_released();
  static_cast<void>(release_free_memory());
}

void MemoryManager::tombstone_all() noexcept {
  // Every live slice: clear (P1), unbind, and move onto the tombstone list
  // until its handles are gone.
  live_.for_each([&](const detail::LiveAllocation& entry) {
    Slice* slice = entry.slice;
    if (observer_ != nullptr) {
      observer_->on_released(AllocationId::from_raw(slice->allocation),
                             slice->page->base + slice->offset, slice->size);
    }
    slice->taint.clear(graph_);
    slice->state = SliceState::Tombstoned;
    stats_.in_use -= slice->size;
    stats_.padding -= slice->extent - slice->size;
    stats_.allocations -= 1;
    slice->bin_prev = nullptr;
    slice->bin_next = tombstoned_;
    if (tombstoned_ != nullptr) {
      tombstoned_->bin_prev = slice;
    }
    tombstoned_ = slice;
  });
  live_.clear();
}

void MemoryManager::end_all_and_give_back_pages() noexcept {
  discover_released();
  tombstone_all();
  // release_all_pages recycles each Free slice's record into cache_,
  // detaches the tombstoned ones, and forgets what the pool learned: the
  // state a lane goes on serving in.
  for (auto& lane : lanes_) {
    for (auto& pool : lane) {
      pool->release_all_pages();
    }
  }
}

void MemoryManager::reset() {
  // tombstone_all() empties the allocation table in place (IdTable::clear):
  // its slots stay for the allocations that come after (see the header).
  end_all_and_give_back_pages();
}

void MemoryManager::restart() noexcept {
  end_all_and_give_back_pages();
  // Then every open lane is closed, its emptied pools set aside for
  // open_lane.
  for (std::uint32_t lane = 0; lane < lanes_.size(); ++lane) {
    if (!lanes_[lane].empty()) { // An open lane's closed slot is empty.
      closed_lanes_[lane].swap(lanes_[lane]);
    }
  }
  erase_later_count_ = 0;
  stats_ = MemoryStats{};
  never_written_ = NeverWrittenClaim{};
  space_ = id_spaces().retake(space_);
  next_allocation_ = first_raw_id(space_);
}

MemoryStats MemoryManager::stats() {
  discover_released();
  MemoryStats now = stats_;
  now.largest_free_block = 0;
  for (auto& lane : lanes_) {
    for (auto& pool : lane) {
      pool->consolidate(); // The largest free block is what merging would give.
      const std::uint64_t largest = pool->largest_free();
      now.largest_free_block = largest > now.largest_free_block ? largest : now.largest_free_block;
    }
  }
  return now;
}

void MemoryManager::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("MemoryManager: " + what); };
  MemoryStats seen;
  for_each_pool([&](const detail::Pool& pool) { pool.check_invariants(seen); });
  live_.check_invariants("MemoryManager allocation table");
  if (live_.size() != seen.allocations) {
    fail(std::to_string(seen.allocations) + " bound slices but " + std::to_string(live_.size()) +
         " allocations in the table");
  }
  live_.for_each([&](const detail::LiveAllocation& entry) {
    if (entry.slice->state != SliceState::Bound || entry.slice->allocation != entry.id) {
      fail("allocation " + std::to_string(entry.id) + " points at a slice not bound to it");
    }
    if (entry.id >= next_allocation_) {
      fail("allocation " + std::to_string(entry.id) + " was never minted");
    }
  });
  const Slice* previous = nullptr;
  for (const Slice* slice = tombstoned_; slice != nullptr; slice = slice->bin_next) {
    if (slice->state != SliceState::Tombstoned || slice->page != nullptr ||
        !slice->taint.is_clean() || slice->bin_prev != previous) {
      fail("a tombstoned slice is still on a page, carries taint, or is mislinked (P1)");
    }
    previous = slice;
  }
  if (seen.in_use != stats_.in_use || seen.padding != stats_.padding ||
      seen.allocations != stats_.allocations || seen.reserved != stats_.reserved ||
      seen.pages != stats_.pages) {
    fail("usage figures drifted (P2): counted in use " + std::to_string(seen.in_use) +
         ", padding " + std::to_string(seen.padding) + ", allocations " +
         std::to_string(seen.allocations) + ", reserved " + std::to_string(seen.reserved) +
         ", pages " + std::to_string(seen.pages) + "; maintained " + std::to_string(stats_.in_use) +
         ", " + std::to_string(stats_.padding) + ", " + std::to_string(stats_.allocations) + ", " +
         std::to_string(stats_.reserved) + ", " + std::to_string(stats_.pages));
  }
  if (stats_.peak_in_use < stats_.in_use || stats_.peak_reserved < stats_.reserved) {
    fail("a peak is below the current figure");
  }
}

} // namespace taintpool
