// LoopbackWorld: matching calls across in-process ranks and computing the
// collectives on host memory (loopback.hpp).
#include <taintpool/collective/loopback.hpp>
#include <taintpool/exception.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace taintpool {

class LoopbackWorld::Rank final : public Communicator {
 public:
  Rank(LoopbackWorld& world, int rank)
      : world_(world)
      , rank_(rank) {}

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return world_.size(); }
  [[nodiscard]] std::string name() const override {
    return "loopback rank " + std::to_string(rank_) + " of " + std::to_string(world_.size());
  }
  [[nodiscard]] bool lands_at_once() const noexcept override { return false; }
  [[nodiscard]] Ticket start(const CollectiveCall& call) override {
    return world_.start(rank_, call);
  }
  [[nodiscard]] bool landed(Ticket ticket) override {
    const Slot* found = world_.slot(rank_, ticket);
    return found == nullptr || found->landed;
  }
  void wait_all() override { world_.wait_all(rank_); }
  [[nodiscard]] std::optional<Error> failure(Ticket ticket) const override {
    const Slot* found = world_.slot(rank_, ticket);
    return found != nullptr ? found->failure : std::nullopt;
  }
  [[nodiscard]] std::span<const std::byte> summaries(Ticket ticket) const override {
    const Slot* found = world_.slot(rank_, ticket);
    return found != nullptr ? std::span<const std::byte>(found->summaries)
                            : std::span<const std::byte>();
  }
  void release(Ticket ticket) noexcept override {
    const auto found = find(ticket);
    if (found != slots.end() && found->first == ticket) {
      world_.give_back(found->second.summaries);
      slots.erase(found); // Moves the later slots down: their summaries' bytes stay put.
    }
  }
  [[nodiscard]] std::optional<Error> broken() const override { return world_.broken_; }

  /// The first open slot whose ticket is not below `ticket`.
  std::vector<std::pair<Ticket, Slot>>::iterator find(Ticket ticket) noexcept {
    return std::lower_bound(
        slots.begin(), slots.end(), ticket,
        [](const std::pair<Ticket, Slot>& open, Ticket wanted) { return open.first < wanted; });
  }

  /// The open tickets' slots, ascending by ticket. Tickets only grow, so a
  /// new one goes at the end, and a rank holds few at once (those whose
  /// verdict is pending): a sorted vector searched by halves, where a
  /// std::map took a node per collective per rank (issue 13). Moving a
  /// Slot keeps its summaries' buffer, so a span summaries() returned
  /// stays valid while its ticket is open, as the map's did.
  std::vector<std::pair<Ticket, Slot>> slots;
  Ticket next_ticket = 1;

 private:
  LoopbackWorld& world_;
  int rank_;
};

LoopbackWorld::LoopbackWorld(int ranks) {
  if (ranks < 1 || ranks > max_ranks) {
    throw std::invalid_argument("LoopbackWorld: " + std::to_string(ranks) + " ranks (1 to " +
                                std::to_string(max_ranks) + ")");
  }
  for (int rank = 0; rank < ranks; ++rank) {
    ranks_.push_back(std::make_unique<Rank>(*this, rank));
  }
  next_sequence_.assign(static_cast<std::size_t>(ranks), 0);
}

LoopbackWorld::~LoopbackWorld() = default;

Communicator& LoopbackWorld::rank(int rank) {
  if (rank < 0 || rank >= size()) {
    throw std::out_of_range("LoopbackWorld: no rank " + std::to_string(rank) + " of " +
                            std::to_string(size()));
  }
  return *ranks_[static_cast<std::size_t>(rank)];
}

std::size_t LoopbackWorld::waiting() const noexcept {
  std::size_t count = 0;
  for (const Match& match : collectives_) {
    count += match.calls.size();
  }
  for (const Match& match : pairs_) {
    count += match.calls.size();
  }
  return count;
}

std::vector<std::byte> LoopbackWorld::take_buffer(std::size_t bytes) noexcept {
  // The smallest spare that holds `bytes`, the newest of those: one that
  // does not would be reallocated by its first fill, an allocation for
  // nothing kept; and a larger one than needed is kept for a call that
  // needs it. Taking the newest that held them, a call's few bytes and its
  // summary took the ranks' landed summaries' buffers (a kilobyte per rank),
  // so every collective allocated those again (issue 13).
  auto best = spare_.rend();
  for (auto spare = spare_.rbegin(); spare != spare_.rend(); ++spare) {
    if (spare->capacity() >= bytes &&
        (best == spare_.rend() || spare->capacity() < best->capacity())) {
      best = spare;
    }
  }
  if (best == spare_.rend()) {
    return {};
  }
  std::vector<std::byte> buffer = std::move(*best);
  spare_.erase(std::next(best).base());
  buffer.clear();
  return buffer;
}

void LoopbackWorld::fill(std::vector<std::byte>& buffer, std::span<const std::byte> bytes) {
  if (buffer.capacity() < bytes.size()) {
    std::vector<std::byte> spare = take_buffer(bytes.size());
    if (spare.capacity() != 0) {
      buffer.swap(spare);
      give_back(spare);
    }
  }
  buffer.assign(bytes.begin(), bytes.end());
}

std::vector<LoopbackWorld::Started> LoopbackWorld::take_calls() {
  std::vector<Started> calls;
  if (!spare_calls_.empty()) {
    calls = std::move(spare_calls_.back());
    spare_calls_.pop_back();
  }
  calls.reserve(ranks_.size()); // Once per list: a kept one has room already.
  return calls;
}

void LoopbackWorld::give_back(Match& match) noexcept {
  for (Started& done : match.calls) {
    give_back(done.data); // Moved from already when a pair failed: nothing to keep.
    give_back(done.summary);
  }
  match.calls.clear();
  if (spare_calls_.size() >= kSpare) {
    return;
  }
  try {
    spare_calls_.push_back(std::move(match.calls));
  } catch (...) {
    // Out of memory for the list: the list is freed with its match.
  }
}

void LoopbackWorld::give_back(std::vector<std::byte>& buffer) noexcept {
  if (buffer.capacity() == 0 || spare_.size() >= kSpare) {
    return;
  }
  try {
    spare_.push_back(std::move(buffer)); // Strong guarantee: on a throw, nothing moved.
  } catch (...) {
    // Out of memory for the list: the buffer is freed with its owner.
  }
}

LoopbackWorld::Slot* LoopbackWorld::slot(int rank, Ticket ticket) {
  Rank& owner = *ranks_[static_cast<std::size_t>(rank)];
  const auto found = owner.find(ticket);
  return found != owner.slots.end() && found->first == ticket ? &found->second : nullptr;
}

namespace {

bool pair_kind(CollectiveKind kind) noexcept {
  return kind == CollectiveKind::send || kind == CollectiveKind::recv;
}

/// Bytes a call sends (its snapshot).
std::size_t sent_bytes(const CollectiveCall& call, int ranks) {
  const std::size_t element = size_of(call.type);
  switch (call.kind) {
  case CollectiveKind::reduce_scatter:
    return static_cast<std::size_t>(ranks) * call.count * element;
  case CollectiveKind::recv:
    return 0;
  default:
    return call.send != nullptr ? call.count * element : 0;
  }
}

template <class T>
T combine_one(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>; // Sums and products wrap, never overflow.
    switch (op) {
    case ReduceOp::sum:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    case ReduceOp::prod:
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
    }
  } else {
    switch (op) {
    case ReduceOp::sum:
      return a + b;
    case ReduceOp::prod:
      return a * b;
    case ReduceOp::min:
      return std::min(a, b);
    case ReduceOp::max:
      return std::max(a, b);
    }
  }
  return a;
}

template <class T>
void combine_as(ReduceOp op, std::byte* into, const std::byte* from, std::size_t elements) {
  for (std::size_t index = 0; index < elements; ++index) {
    T a;
    T b;
    std::memcpy(&a, into + index * sizeof(T), sizeof(T));
    std::memcpy(&b, from + index * sizeof(T), sizeof(T));
    a = combine_one(op, a, b);
    std::memcpy(into + index * sizeof(T), &a, sizeof(T));
  }
}

/// into[i] = into[i] op from[i], element by element.
void combine(DataType type, ReduceOp op, std::byte* into, const std::byte* from,
             std::size_t elements) {
  switch (type) {
  case DataType::u8:
    combine_as<std::uint8_t>(op, into, from, elements);
    break;
  case DataType::i32:
    combine_as<std::int32_t>(op, into, from, elements);
    break;
  case DataType::i64:
    combine_as<std::int64_t>(op, into, from, elements);
    break;
  case DataType::f32:
    combine_as<float>(op, into, from, elements);
    break;
  case DataType::f64:
    combine_as<double>(op, into, from, elements);
    break;
  }
}

void copy_out(std::byte* to, const std::byte* from, std::size_t bytes) {
  if (bytes != 0) {
    std::memcpy(to, from, bytes);
  }
}

} // namespace

Ticket LoopbackWorld::start(int rank, const CollectiveCall& call) {
  if (broken_) {
    throw Exception(*broken_);
  }
  Rank& me = *ranks_[static_cast<std::size_t>(rank)];
  Started started;
  started.rank = rank;
  started.call = call;
  const std::size_t bytes = sent_bytes(call, size());
  if (bytes != 0) {
    fill(started.data, std::span<const std::byte>(call.send, bytes));
  }
  if (!call.summary.empty()) {
    fill(started.summary, call.summary);
  }
  if (me.slots.capacity() == 0) {
    me.slots.reserve(kOpenSlots); // At its first call: a world that never calls pays nothing.
  }
  started.ticket = me.next_ticket++;
  me.slots.emplace_back(started.ticket, Slot{}); // The highest ticket yet: still sorted.
  const Ticket ticket = started.ticket;

  if (!pair_kind(call.kind)) {
    const std::uint64_t sequence = next_sequence_[static_cast<std::size_t>(rank)]++;
    auto match = std::find_if(collectives_.begin(), collectives_.end(),
                              [&](const Match& open) { return open.sequence == sequence; });
    if (match == collectives_.end()) {
      collectives_.push_back(Match{sequence, take_calls()});
      match = collectives_.end() - 1;
    }
    match->calls.push_back(std::move(started));
    if (match->calls.size() == ranks_.size()) {
      Match complete = std::move(*match);
      collectives_.erase(match);
      complete_collective(complete, rank);
      give_back(complete);
    }
    return ticket;
  }

  // A pair: the oldest open opposite half between the same two ranks.
  const CollectiveKind opposite =
      call.kind == CollectiveKind::send ? CollectiveKind::recv : CollectiveKind::send;
  const auto match = std::find_if(pairs_.begin(), pairs_.end(), [&](const Match& open) {
    const Started& half = open.calls.front();
    return half.call.kind == opposite && half.rank == call.peer && half.call.peer == rank;
  });
  if (match == pairs_.end()) {
    pairs_.push_back(Match{0, take_calls()});
    pairs_.back().calls.push_back(std::move(started));
    return ticket;
  }
  Match complete = std::move(*match);
  pairs_.erase(match);
  complete.calls.push_back(std::move(started));
  if (call.kind == CollectiveKind::send) {
    complete_pair(complete.calls.back(), complete.calls.front());
  } else {
    complete_pair(complete.calls.front(), complete.calls.back());
  }
  give_back(complete);
  return ticket;
}

void LoopbackWorld::complete_collective(Match& match, int /*completing*/) {
  std::sort(match.calls.begin(), match.calls.end(),
            [](const Started& a, const Started& b) { return a.rank < b.rank; });
  const CollectiveCall& first = match.calls.front().call;
  for (const Started& started : match.calls) {
    const CollectiveCall& call = started.call;
    const bool reduces =
        first.kind == CollectiveKind::all_reduce || first.kind == CollectiveKind::reduce_scatter;
    if (call.kind != first.kind || call.count != first.count || call.type != first.type ||
        (reduces && call.op != first.op) ||
        (first.kind == CollectiveKind::broadcast && call.peer != first.peer)) {
      const Error error = Error::communicator(
          "collective " + std::to_string(match.sequence) + ": rank " +
          std::to_string(started.rank) + " called " + std::string(name(call.kind)) + " of " +
          std::to_string(call.count) + " " + std::string(name(call.type)) + ", rank 0 called " +
          std::string(name(first.kind)) + " of " + std::to_string(first.count) + " " +
          std::string(name(first.type)) + " (the ranks' calls must agree)");
      fail(match, error);
      break_world(error);
      return;
    }
  }
  const std::size_t ranks = match.calls.size();
  const std::size_t element = size_of(first.type);
  const std::size_t block = first.count * element;
  std::vector<std::byte>& result = reduced_;
  switch (first.kind) {
  case CollectiveKind::all_reduce:
    result.assign(match.calls.front().data.begin(), match.calls.front().data.end());
    for (std::size_t rank = 1; rank < ranks; ++rank) {
      combine(first.type, first.op, result.data(), match.calls[rank].data.data(), first.count);
    }
    for (const Started& started : match.calls) {
      copy_out(started.call.recv, result.data(), block);
    }
    break;
  case CollectiveKind::all_gather:
    for (const Started& started : match.calls) {
      for (std::size_t rank = 0; rank < ranks; ++rank) {
        copy_out(started.call.recv + rank * block, match.calls[rank].data.data(), block);
      }
    }
    break;
  case CollectiveKind::reduce_scatter:
    for (std::size_t target = 0; target < ranks; ++target) {
      result.assign(match.calls[0].data.begin() + static_cast<std::ptrdiff_t>(target * block),
                    match.calls[0].data.begin() +
                        static_cast<std::ptrdiff_t>((target + 1) * block));
      for (std::size_t rank = 1; rank < ranks; ++rank) {
        combine(first.type, first.op, result.data(), match.calls[rank].data.data() + target * block,
                first.count);
      }
      copy_out(match.calls[target].call.recv, result.data(), block);
    }
    break;
  case CollectiveKind::broadcast: {
    const Started& root = match.calls[static_cast<std::size_t>(first.peer)];
    for (const Started& started : match.calls) {
      copy_out(started.call.recv, root.data.data(), std::min(block, root.data.size()));
    }
    break;
  }
  case CollectiveKind::send:
  case CollectiveKind::recv:
    break;
  }
  for (const Started& started : match.calls) {
    Slot* landed = slot(started.rank, started.ticket);
    if (landed == nullptr) {
      continue; // Released already (its Collectives went away).
    }
    if (first.kind == CollectiveKind::broadcast) {
      fill(landed->summaries, match.calls[static_cast<std::size_t>(first.peer)].summary);
    } else {
      // Sized once: appended sender by sender it grew (and copied) up to
      // once per rank, for every rank of every collective.
      std::size_t total = landed->summaries.size();
      for (const Started& sender : match.calls) {
        total += sender.summary.size();
      }
      if (landed->summaries.empty() && landed->summaries.capacity() < total) {
        landed->summaries = take_buffer(total); // A spare that holds them all, if one does.
      }
      landed->summaries.reserve(total);
      for (const Started& sender : match.calls) {
        landed->summaries.insert(landed->summaries.end(), sender.summary.begin(),
                                 sender.summary.end());
      }
    }
    landed->landed = true;
  }
}

void LoopbackWorld::complete_pair(Started& send, Started& recv) {
  if (send.call.count != recv.call.count || send.call.type != recv.call.type) {
    Match both{0, {}};
    const Error error = Error::communicator(
        "rank " + std::to_string(send.rank) + " sent " + std::to_string(send.call.count) + " " +
        std::string(name(send.call.type)) + " to rank " + std::to_string(recv.rank) +
        ", which expected " + std::to_string(recv.call.count) + " " +
        std::string(name(recv.call.type)));
    both.calls.push_back(std::move(send));
    both.calls.push_back(std::move(recv));
    fail(both, error);
    break_world(error);
    return;
  }
  copy_out(recv.call.recv, send.data.data(), send.data.size());
  if (Slot* landed = slot(recv.rank, recv.ticket)) {
    fill(landed->summaries, send.summary);
    landed->landed = true;
  }
  if (Slot* landed = slot(send.rank, send.ticket)) {
    landed->landed = true;
  }
}

void LoopbackWorld::fail(Match& match, const Error& error) {
  for (const Started& started : match.calls) {
    if (Slot* failed = slot(started.rank, started.ticket)) {
      failed->landed = true;
      failed->failure = error;
    }
  }
}

void LoopbackWorld::break_world(const Error& error) {
  if (!broken_) {
    broken_ = error;
  }
  for (Match& match : collectives_) {
    fail(match, error);
  }
  for (Match& match : pairs_) {
    fail(match, error);
  }
  collectives_.clear();
  pairs_.clear();
}

void LoopbackWorld::wait_all(int rank) {
  // One thread: a call still waiting for a participant never completes.
  for (const Match& match : collectives_) {
    const bool mine = std::any_of(match.calls.begin(), match.calls.end(),
                                  [&](const Started& started) { return started.rank == rank; });
    if (!mine) {
      continue;
    }
    std::string missing;
    for (int other = 0; other < size(); ++other) {
      if (std::none_of(match.calls.begin(), match.calls.end(),
                       [&](const Started& started) { return started.rank == other; })) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(other);
      }
    }
    break_world(Error::communicator("rank " + missing + " did not take part in collective " +
                                    std::to_string(match.sequence) + " (" +
                                    std::string(name(match.calls.front().call.kind)) +
                                    ") that rank " + std::to_string(rank) + " waited for"));
    return;
  }
  for (const Match& match : pairs_) {
    const Started& half = match.calls.front();
    if (half.rank != rank) {
      continue;
    }
    break_world(
        Error::communicator("rank " + std::to_string(half.call.peer) + " did not " +
                            (half.call.kind == CollectiveKind::send ? "receive from" : "send to") +
                            " rank " + std::to_string(rank) + ", which waited for it"));
    return;
  }
}

} // namespace taintpool
