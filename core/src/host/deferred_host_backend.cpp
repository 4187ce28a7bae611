#include <taintpool/host/deferred_host_backend.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace taintpool {

DeferredHostBackend::DeferredHostBackend(std::uint64_t alignment)
    : HostBackend(alignment)
    , queues_(only_the_default_queue())
    , default_queue_(queues_.front().get()) {
}

DeferredHostBackend::DeferredHostBackend(Storage& storage, MemoryConfig config)
    : HostBackend(storage, std::move(config))
    , queues_(only_the_default_queue())
    , default_queue_(queues_.front().get()) {
}

DeferredHostBackend::~DeferredHostBackend() = default;

std::vector<std::unique_ptr<DeferredHostBackend::Queue>>
DeferredHostBackend::only_the_default_queue() {
  std::vector<std::unique_ptr<Queue>> queues;
  queues.push_back(std::make_unique<Queue>());
  return queues;
}

void DeferredHostBackend::FinishingStorage::deallocate(StorageHandle handle,
                                                       std::uint64_t size) noexcept {
  try {
    queues_.run_all(); // Nothing queued may touch the page once it is back.
  } catch (...) {
    // A queue that can never run (a wait on an event that never completes)
    // touches nothing; a throwing item is the test's own failure.
  }
  pages_.deallocate(handle, size);
}

std::vector<LateFailure> DeferredHostBackend::synchronize() {
  run_all();
  unconfirmed_.clear();
  return std::exchange(pending_, {});
}

std::optional<std::uint64_t> DeferredHostBackend::oldest_unconfirmed_launch() const noexcept {
  if (unconfirmed_.empty()) {
    return std::nullopt;
  }
  return *std::min_element(unconfirmed_.begin(), unconfirmed_.end());
}

DeferredHostBackend::Queue& DeferredHostBackend::queue(StreamHandle stream) {
  auto* found = static_cast<Queue*>(stream);
  for (const auto& owned : queues_) {
    if (owned.get() == found && owned->live) {
      return *owned;
    }
  }
  throw std::logic_error("DeferredHostBackend: not a live stream of this backend");
}

void DeferredHostBackend::enqueue(StreamHandle stream, std::function<void()> work) {
  queue(stream).items.push_back(Item{Item::Kind::Work, std::move(work), nullptr});
}

std::uint64_t DeferredHostBackend::next_random() noexcept {
  // splitmix64: small, and the same seed gives the same interleaving.
  rng_ += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = rng_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool DeferredHostBackend::runnable(const Queue& queue) noexcept {
  if (queue.items.empty()) {
    return false;
  }
  const Item& head = queue.items.front();
  return head.kind != Item::Kind::Wait || head.marker->done;
}

bool DeferredHostBackend::step() {
  std::size_t candidates = 0;
  bool queued = false;
  for (const auto& owned : queues_) {
    queued = queued || !owned->items.empty();
    candidates += runnable(*owned) ? 1U : 0U;
  }
  if (candidates == 0) {
    if (queued) {
      throw std::logic_error("DeferredHostBackend: work is queued but every queue waits on an "
                             "event that cannot complete");
    }
    return false;
  }
  std::size_t pick = next_random() % candidates;
  for (const auto& owned : queues_) {
    if (!runnable(*owned)) {
      continue;
    }
    if (pick-- != 0) {
      continue;
    }
    Item item = std::move(owned->items.front());
    owned->items.pop_front();
    switch (item.kind) {
    case Item::Kind::Work:
      item.work();
      break;
    case Item::Kind::Record:
      item.marker->done = true;
      break;
    case Item::Kind::Wait:
      break;
    }
    return true;
  }
  return false; // Unreachable: pick < candidates.
}

std::size_t DeferredHostBackend::run_all() {
  std::size_t ran = 0;
  while (step()) {
    ++ran;
  }
  return ran;
}

void DeferredHostBackend::run_until(const bool& flag) {
  while (!flag) {
    if (!step()) {
      throw std::logic_error("DeferredHostBackend: waited for an item that was never queued");
    }
  }
}

std::size_t DeferredHostBackend::pending() const noexcept {
  std::size_t count = 0;
  for (const auto& owned : queues_) {
    count += owned->items.size();
  }
  return count;
}

StreamHandle DeferredHostBackend::default_stream() noexcept {
  return default_queue_;
}

StreamHandle DeferredHostBackend::create_stream() {
  queues_.push_back(std::make_unique<Queue>());
  return queues_.back().get();
}

void DeferredHostBackend::destroy_stream(StreamHandle stream) noexcept {
  const auto position = [&] {
    return std::find_if(queues_.begin(), queues_.end(),
                        [&](const std::unique_ptr<Queue>& owned) { return owned.get() == stream; });
  };
  auto found = position();
  if (found == queues_.end()) {
    return; // Dead already, or not this backend's.
  }
  Queue& dying = **found;
  // As cudaStreamDestroy: queued work still runs; the handle is dead.
  try {
    while (!dying.items.empty()) {
      if (!step()) {
        break;
      }
    }
  } catch (...) {
  }
  dying.live = false;
  dying.items = detail::Fifo<Item>{}; // Drops what could not run, and the ring.
  found = position();                 // The items ran: found again, not trusted.
  try {
    retired_.push_back(std::move(*found)); // Strong guarantee: on a throw, *found still owns it.
  } catch (...) {
    return; // Out of memory: it stays in the walk, dead and empty, as before.
  }
  queues_.erase(found);
}

EventHandle DeferredHostBackend::record(StreamHandle stream) {
  Queue& into = queue(stream);
  Event* event = nullptr;
  if (!free_events_.empty()) {
    event = free_events_.back();
    free_events_.pop_back();
  } else {
    events_.push_back(std::make_unique<Event>());
    event = events_.back().get();
  }
  event->current = std::make_shared<Marker>();
  if (into.items.empty()) {
    event->current->done = true; // Nothing before it: complete at once.
  } else {
    into.items.push_back(Item{Item::Kind::Record, nullptr, event->current});
  }
  return event;
}

void DeferredHostBackend::wait(StreamHandle waiter, EventHandle event) {
  Queue& into = queue(waiter);
  // As cudaStreamWaitEvent: the wait is for the event's record as of now.
  const std::shared_ptr<Marker>& marker = static_cast<Event*>(event)->current;
  if (!marker->done) {
    into.items.push_back(Item{Item::Kind::Wait, nullptr, marker});
  }
}

bool DeferredHostBackend::done(EventHandle event) noexcept {
  return static_cast<Event*>(event)->current->done;
}

void DeferredHostBackend::release(EventHandle event) noexcept {
  try {
    free_events_.push_back(static_cast<Event*>(event));
  } catch (...) {
    // The event stays owned by events_; it is only not reused.
  }
}

void DeferredHostBackend::finish(StreamHandle stream) {
  Queue& target = queue(stream);
  while (!target.items.empty()) {
    if (!step()) {
      break;
    }
  }
}

void DeferredHostBackend::copy(StreamHandle stream, std::byte* to, const std::byte* from,
                               std::size_t bytes) {
  // The copy's record lives on this frame, which blocks until it ran; the
  // queued work captures only its address. A lambda of one pointer fits
  // std::function's small buffer (16 bytes in libstdc++, for a trivially
  // copyable callable), so queueing it allocates nothing; capturing `to`,
  // `from`, `bytes` and the flag by reference (32 bytes) took a heap block
  // per host copy, every host read and write (issue 13).
  struct Copy {
    std::byte* to;
    const std::byte* from;
    std::size_t bytes;
    bool copied = false;
  } record{to, from, bytes};
  Copy* const pending = &record;
  const auto work = [pending] {
    if (pending->bytes != 0) {
      std::memcpy(pending->to, pending->from, pending->bytes);
    }
    pending->copied = true;
  };
  static_assert(sizeof(work) == sizeof(void*) && std::is_trivially_copyable_v<decltype(work)>,
                "a host copy's work is one pointer, stored inside std::function");
  enqueue(stream, work);
  run_until(record.copied);
}

std::optional<Error> DeferredHostBackend::copy_in(StreamHandle stream, std::byte* to,
                                                  const std::byte* from, std::size_t bytes) {
  copy(stream, to, from, bytes);
  return std::nullopt;
}

std::optional<Error> DeferredHostBackend::copy_out(StreamHandle stream, std::byte* to,
                                                   const std::byte* from, std::size_t bytes) {
  copy(stream, to, from, bytes);
  return std::nullopt;
}

} // namespace taintpool
