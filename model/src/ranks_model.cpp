// The ranks model: per byte, which contribution bytes each output byte of
// each rank came from, which pieces are stale, and what that makes each
// byte carry. See ranks_model.hpp.
#include <taintpool/model/ranks_model.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

namespace taintpool::model {

namespace {

constexpr std::uint64_t kMaxPieces = 64;
constexpr std::size_t kRoots = 4;
constexpr std::size_t kTextBytes = 220;
constexpr int kListedSources = 8;
/// The bytes a kept per-byte buffer is first sized for: a model is made
/// per fuzz input, and its buffers, grown to each larger collective in
/// turn, reallocated several times per rank per input (issue 13); a
/// collective_fuzzer buffer is at most 384 bytes.
constexpr std::size_t kFirstBytes = 512;

/// Makes room for `size` elements in one step: at least kFirstBytes the
/// first time, so that the common sizes never reallocate.
template <class T>
void room(std::vector<T>& buffer, std::size_t size) {
  if (buffer.capacity() < size) {
    buffer.reserve(std::max(size, kFirstBytes));
  }
}

std::uint64_t element_size(DataType type) {
  switch (type) {
  case DataType::u8:
    return 1;
  case DataType::i32:
  case DataType::f32:
    return 4;
  case DataType::i64:
  case DataType::f64:
    return 8;
  }
  return 1;
}

/// Combines element values into `a`: every byte known, or the whole
/// element unknown (a byte past the last whole element, too). In place over
/// `b`'s bytes, so a reduction over N ranks copies no contribution.
void combine(std::vector<std::optional<std::uint8_t>>& a,
             std::span<const std::optional<std::uint8_t>> b, DataType type, ReduceOp op) {
  const std::uint64_t width = element_size(type);
  std::size_t first = 0;
  for (; first + width <= a.size(); first += width) {
    bool known = true;
    std::uint64_t x = 0;
    std::uint64_t y = 0;
    for (std::uint64_t at = 0; at < width; ++at) {
      known = known && a[first + at] && b[first + at];
      if (known) {
        x |= std::uint64_t{*a[first + at]} << (8 * at);
        y |= std::uint64_t{*b[first + at]} << (8 * at);
      }
    }
    if (!known) {
      for (std::uint64_t at = 0; at < width; ++at) {
        a[first + at].reset();
      }
      continue;
    }
    std::uint64_t result = 0;
    if (type == DataType::u8) {
      const auto u = static_cast<std::uint8_t>(x);
      const auto v = static_cast<std::uint8_t>(y);
      switch (op) {
      case ReduceOp::sum:
        result = static_cast<std::uint8_t>(u + v);
        break;
      case ReduceOp::prod:
        result = static_cast<std::uint8_t>(u * v);
        break;
      case ReduceOp::min:
        result = std::min(u, v);
        break;
      case ReduceOp::max:
        result = std::max(u, v);
        break;
      }
    } else if (type == DataType::i32) {
      const auto u = static_cast<std::uint32_t>(x);
      const auto v = static_cast<std::uint32_t>(y);
      const auto su = static_cast<std::int32_t>(u);
      const auto sv = static_cast<std::int32_t>(v);
      switch (op) {
      case ReduceOp::sum:
        result = static_cast<std::uint32_t>(u + v);
        break;
      case ReduceOp::prod:
        result = static_cast<std::uint32_t>(u * v);
        break;
      case ReduceOp::min:
        result = static_cast<std::uint32_t>(std::min(su, sv));
        break;
      case ReduceOp::max:
        result = static_cast<std::uint32_t>(std::max(su, sv));
        break;
      }
    } else {
      throw std::logic_error("model: only u8 and i32 reductions are modelled");
    }
    for (std::uint64_t at = 0; at < width; ++at) {
      a[first + at] = static_cast<std::uint8_t>(result >> (8 * at));
    }
  }
  for (; first < a.size(); ++first) {
    a[first].reset();
  }
}

/// Visits the maximal runs of bytes in [0, size) for which `marked(byte)`
/// holds, ascending, as `fn(ByteRange)`. Allocates nothing: it runs twice
/// over every output (its own stale runs, its fed runs), where a vector of
/// runs per piece (and a marked vector to find them) was the ranks model's
/// most frequent allocation (issue 13).
template <class Marked, class Fn>
void for_each_run(std::uint64_t size, const Marked& marked, const Fn& fn) {
  for (std::uint64_t byte = 0; byte < size;) {
    if (!marked(byte)) {
      ++byte;
      continue;
    }
    std::uint64_t end = byte;
    while (end < size && marked(end)) {
      ++end;
    }
    fn(ByteRange::of(byte, end));
    byte = end;
  }
}

/// Appends to_string(id)'s words: "allocation 7", or "allocation 7
/// (memory 2)" for an id of another manager's space.
void append_allocation(std::string& text, AllocationId id) {
  text += "allocation ";
  text += std::to_string(allocation_number(id));
  if (allocation_space(id) != 0) {
    text += " (memory ";
    text += std::to_string(allocation_space(id));
    text += ')';
  }
}

// A report's root line (RanksModel::root_line's words) from its parts:
// `step_at(i)` is the path's step i, newest first, for i below `steps`.
// Shared by the line of a Report and the line worded from the model's own
// records in place (contribution_of), so the two cannot word it apart.
template <class StepAt>
void word_root_line(std::string& text, AllocationId origin, FailureId failure, const Error& root,
                    std::size_t steps, StepAt step_at, bool incomplete) {
  // Appended piece by piece into `text`, whose capacity the caller keeps:
  // built by operator+ per step into a fresh string, it was the collective
  // fuzzer's largest allocation site (issue 13). The words are the ones
  // to_string spells (the error's as to_string(Error): its kind's name,
  // then ": " and the message when there is one; an id's as
  // to_string(FailureId) and to_string(AllocationId), whose own strings
  // outgrow the small-string buffer once an id names its memory).
  text.clear();
  text.reserve(2 * kTextBytes); // Once per kept string: most lines fit, cut or not.
  append_allocation(text, origin);
  text += " was left unwritten by failure ";
  text += std::to_string(failure.raw());
  text += " (";
  text += name(root.kind());
  if (!root.message().empty()) {
    text += ": ";
    text += root.message();
  }
  text += ')';
  for (std::size_t at = steps; at-- > 0;) {
    const SkipRecord& step = step_at(at);
    text += ", then ";
    text += step.kernel;
    text += step.took_part ? " took part with stale bytes of "
            : step.ran     ? " ran on stale bytes of "
                           : " was skipped: it needed ";
    append_allocation(text, step.needed);
  }
  if (incomplete) {
    text += " (the path may begin earlier)";
  }
  if (text.size() > kTextBytes) {
    std::size_t keep = kTextBytes - 3;
    while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0u) == 0x80u) {
      --keep;
    }
    text.resize(keep);
    text += "...";
  }
}

} // namespace

RanksModel::RanksModel(int ranks)
    : ranks_(static_cast<std::size_t>(ranks)) {
}

RanksModel::RanksModel(int ranks, Room room) {
  const auto count = static_cast<std::size_t>(ranks);
  ranks_.reserve(count);
  for (std::size_t at = 0; at < count; ++at) {
    if (at < room.ranks.size()) {
      ranks_.emplace_back(false, std::move(room.ranks[at]));
    } else {
      ranks_.emplace_back(false);
    }
  }
  for (std::size_t at = count; at < room.ranks.size(); ++at) {
    spare_rooms_.push_back(std::move(room.ranks[at]));
  }
  // Only capacity matters: collective() refills every scratch element it
  // reads (contributions, plan, lists) before reading it.
  trade_scratch(room);
}

RanksModel::Room RanksModel::take_room() noexcept {
  Room room;
  room.ranks.reserve(ranks_.size() + spare_rooms_.size());
  for (DeviceModel& model : ranks_) {
    room.ranks.push_back(model.take_room());
  }
  for (DeviceModel::Room& spare : spare_rooms_) {
    room.ranks.push_back(std::move(spare));
  }
  spare_rooms_.clear();
  trade_scratch(room);
  // Content, not capacity: the last collective's fed error goes with the
  // model that made it, so a fuzz input that ends with one frees what it
  // allocated (libFuzzer runs an input again when it ends with more
  // mallocs than frees; issue 13).
  room.plan.fed_error.reset();
  return room;
}

void RanksModel::trade_scratch(Room& room) noexcept {
  using std::swap;
  swap(contributions_, room.contributions);
  swap(contributed_, room.contributed);
  swap(plan_, room.plan);
  swap(fed_, room.fed);
  swap(own_piece_, room.own_piece);
  swap(feeds_, room.feeds);
  swap(own_runs_, room.own_runs);
  swap(cited_, room.cited);
  swap(kernel_, room.kernel);
  swap(message_, room.message);
}

std::string RanksModel::root_line(const Report& report) {
  std::string text;
  root_line(report, text);
  return text;
}

void RanksModel::root_line(const Report& report, std::string& text) {
  word_root_line(
      text, report.origin, report.failure, report.root, report.path.size(),
      [&](std::size_t step) -> const SkipRecord& { return report.path[step]; },
      report.path_may_be_incomplete);
}

void RanksModel::contribution_of(int rank, const Binding& send, DataType type,
                                 Contribution& out) const {
  // Every field is refilled: only capacity survives the last collective.
  const DeviceModel& model = ranks_.at(static_cast<std::size_t>(rank));
  out.element = element_size(type);
  out.writer.clear();
  out.value.clear();
  out.distinct.clear();
  out.unwritten.clear();
  // The model's bytes and per-byte owners in place (the copies cost two
  // allocations per rank per collective, issue 13); the owners are
  // claims() before they are cut into runs, and none (empty) for an
  // allocation the model no longer holds.
  const std::span<const std::optional<std::uint8_t>> values = model.bytes_in_place(send.allocation);
  const std::span<const std::uint64_t> writers = model.writers_in_place(send.allocation);
  if (send.range.end() > values.size() || (!writers.empty() && send.range.end() > writers.size())) {
    throw std::out_of_range("model: a collective's send buffer lies outside its allocation");
  }
  // N2: under Report, the never-written bytes are read and listed, never
  // stale: each maximal run of them, then their writer is 0.
  const std::optional<FailureId> never_written = model.never_written_failure();
  const std::uint64_t listed =
      model.unwritten_reads() == UnwrittenReads::Report && never_written ? never_written->raw() : 0;
  // Copied whole, then the listed bytes cleared in one pass: pushed a byte
  // at a time (a branch and a bounds check per byte) they were most of this
  // function's time (issue 13).
  const auto begin = static_cast<std::ptrdiff_t>(send.range.begin());
  const auto end = static_cast<std::ptrdiff_t>(send.range.end());
  room(out.value, send.range.size());
  room(out.writer, send.range.size());
  room(out.piece_at, send.range.size());
  out.piece_root.reserve(kMaxPieces); // Per piece: never more.
  out.slot.reserve(kMaxPieces);
  out.value.assign(values.begin() + begin, values.begin() + end);
  if (writers.empty()) {
    out.writer.assign(send.range.size(), 0);
  } else {
    out.writer.assign(writers.begin() + begin, writers.begin() + end);
  }
  for (std::uint64_t at = 0; listed != 0 && at < out.writer.size(); ++at) {
    if (out.writer[at] != listed) {
      continue;
    }
    const std::uint64_t byte = send.range.begin() + at;
    if (!out.unwritten.empty() && out.unwritten.back().bytes.end() == byte) {
      out.unwritten.back().bytes = ByteRange::of(out.unwritten.back().bytes.begin(), byte + 1);
    } else {
      out.unwritten.push_back(UnwrittenRead{send.allocation, ByteRange::of(byte, byte + 1)});
    }
    out.writer[at] = 0;
  }
  const std::uint64_t elements = out.writer.size() / out.element;
  out.pieces = std::min(elements, kMaxPieces);
  out.piece_root.assign(out.pieces, 0);
  out.slot.assign(out.pieces, 0);
  std::vector<std::uint64_t>& distinct = out.distinct;
  out.piece_at.assign(out.writer.size(), 0);
  for (std::uint64_t piece = 0; piece < out.pieces; ++piece) {
    const std::uint64_t first = piece * elements / out.pieces * out.element;
    const std::uint64_t last = (piece + 1) * elements / out.pieces * out.element;
    std::fill(out.piece_at.begin() + static_cast<std::ptrdiff_t>(first),
              out.piece_at.begin() + static_cast<std::ptrdiff_t>(last), piece);
    for (std::uint64_t byte = first; byte < last; ++byte) {
      if (out.writer[byte] != 0) {
        out.piece_root[piece] = out.writer[byte]; // The lowest stale byte's failure.
        break;
      }
    }
    if (out.piece_root[piece] == 0) {
      continue;
    }
    auto known = std::find(distinct.begin(), distinct.end(), out.piece_root[piece]);
    if (known == distinct.end()) {
      distinct.push_back(out.piece_root[piece]);
      known = distinct.end() - 1;
    }
    out.slot[piece] =
        std::min<std::size_t>(static_cast<std::size_t>(known - distinct.begin()), kRoots - 1);
  }
  // The entries' strings are kept and each is rewritten whole, so their
  // capacity serves the next collective. Grown, never shrunk: a resize down
  // freed the strings past the new count, and a later collective with more
  // roots allocated them again — in a fuzz input, more mallocs than frees,
  // which libFuzzer answers by running it again (issue 13). Only the first
  // `entries` are this collective's (a slot is below it).
  const std::size_t entries = std::min(distinct.size(), kRoots);
  if (out.texts.size() < entries) {
    out.texts.resize(entries);
  }
  for (std::size_t entry = 0; entry < entries; ++entry) {
    // Worded from the model's records in place: a Report refilled per root
    // copied every step's record (its name and produced list) first, a
    // tenth of collective_fuzzer's allocations (issue 13, fifty-first round).
    const FailureId root = FailureId::from_raw(distinct[entry]);
    const AllocationId origin = model.report_path(root, send.allocation, out.path);
    const std::uint64_t recorded = model.skips_recorded(root);
    word_root_line(
        out.texts[entry], origin, root, *model.error(root), out.path.size(),
        [&](std::size_t step) -> const SkipRecord& { return *out.path[step]; },
        recorded > DeviceModel::kept_skip_records);
  }
  out.more = distinct.size() > kRoots ? distinct.size() - kRoots : 0;
}

void RanksModel::no_contribution(int rank) {
  throw std::out_of_range("model: rank " + std::to_string(rank) + " sent no contribution");
}

std::vector<RanksModel::Expected> RanksModel::collective(const Collective& collective) {
  std::vector<Expected> expected;
  this->collective(collective, expected);
  return expected;
}

void RanksModel::collective(const Collective& collective, std::vector<Expected>& expected) {
  const int ranks = size();
  const std::uint64_t width = element_size(collective.type);
  const std::uint64_t block = collective.count * width;
  // Every element made anew (default fields), in the caller's capacity.
  expected.clear();
  expected.resize(collective.calls.size());

  // 1. Each rank's first steps (C2): poll, and synchronize if its input
  //    awaits a verdict.
  for (std::size_t at = 0; at < collective.calls.size(); ++at) {
    const Call& call = collective.calls[at];
    DeviceModel& model = rank(call.rank);
    expected[at].rank = call.rank;
    model.poll_exchanges();
    if (call.send) {
      if (model.awaits_verdict(std::span<const Binding>(&*call.send, 1))) {
        model.synchronize(true);
        expected[at].synchronized_first = true;
      }
    }
  }

  // 2. Every contribution, as it was when its rank called (a call per
  //    rank: the harness makes one).
  //    Grown, never shrunk: each Contribution's lists are kept capacity,
  //    and a resize down to fewer ranks freed them, so the next collective
  //    of more ranks allocated them again — in a fuzz input that follows
  //    one of fewer ranks, more mallocs than frees, which libFuzzer answers
  //    by running the input again (issue 13). contributed_ says which are
  //    this collective's.
  if (contributions_.size() < ranks_.size()) {
    contributions_.resize(ranks_.size());
  }
  contributed_.assign(ranks_.size(), 0);
  for (const Call& call : collective.calls) {
    if (call.send) {
      const auto index = static_cast<std::size_t>(call.rank);
      if (contributed_.at(index) != 0) {
        continue; // The first call's, as a map's emplace kept it.
      }
      contribution_of(call.rank, *call.send, collective.type, contributions_[index]);
      contributed_[index] = 1;
    }
  }

  // 3. Each receiving call: for every output byte, its sources.
  const auto peer_of = [&](const Call& call) {
    for (const Call& other : collective.calls) {
      if (other.rank != call.rank) {
        return other.rank;
      }
    }
    return call.rank;
  };
  for (std::size_t at = 0; at < collective.calls.size(); ++at) {
    const Call& call = collective.calls[at];
    const int me = call.rank;
    const bool immediate = at + 1 == collective.calls.size(); // It completes the collective.
    // The plan, refilled: exchange() reads it and keeps none of it.
    DeviceModel::ExchangePlan& plan = plan_;
    plan.values.resize(1);
    plan.carried.clear();
    plan.fed.clear();
    plan.fed_error.reset();
    plan.deferred = !immediate;
    std::uint64_t stale_bytes = 0;
    if (call.recv) {
      const std::uint64_t size = call.recv->range.size();
      std::vector<std::optional<std::uint8_t>>& values = plan.values.front();
      room(values, size);
      values.assign(size, std::nullopt);
      std::vector<std::uint8_t>& fed = fed_;
      room(fed, size);
      fed.assign(size, 0);
      // (source, root entry) pairs, sorted and made distinct below: the
      // order a std::set gave, without a node per pair.
      std::vector<std::pair<int, std::size_t>>& cited = cited_;
      cited.clear();
      // Own stale pieces that reach the output, by piece number (below
      // kMaxPieces): flags, not a list to search, grow and sort per call.
      std::array<bool, kMaxPieces> own_pieces{};
      // Where every output byte comes from, per kind: output bytes
      // [first, end) are contribution bytes [shift, shift + end - first)
      // of `rank`, one feed per source in rank order (all-reduce: byte i
      // of every rank's; all-gather: rank s's whole input to block s;
      // reduce-scatter: block `me` of every rank's; broadcast and recv: the
      // root's or the sender's). So byte b's sources are the feeds that
      // cover it, in rank order. Stated once per call, where listing the
      // sources of each byte anew (a vector refilled per byte, and each
      // source's contribution looked up and range-checked per byte) was
      // most of the model's time in a collective (issue 13).
      std::vector<Feed>& feeds = feeds_;
      feeds.clear();
      const auto feed = [&](int source, std::uint64_t first, std::uint64_t end,
                            std::uint64_t shift) {
        const Contribution& from = contribution(source);
        if (shift + (end - first) > from.value.size()) {
          throw std::out_of_range("model: a contribution shorter than the output it feeds");
        }
        feeds.push_back(Feed{source, &from, first, end, shift});
      };
      switch (call.kind) {
      case CollectiveKind::all_reduce:
        for (int source = 0; source < ranks; ++source) {
          feed(source, 0, size, 0);
        }
        break;
      case CollectiveKind::all_gather:
        for (int source = 0; source < ranks; ++source) {
          const std::uint64_t first = static_cast<std::uint64_t>(source) * block;
          feed(source, std::min(first, size), std::min(first + block, size), 0);
        }
        break;
      case CollectiveKind::reduce_scatter:
        for (int source = 0; source < ranks; ++source) {
          feed(source, 0, size, static_cast<std::uint64_t>(me) * block);
        }
        break;
      case CollectiveKind::broadcast:
        feed(collective.root, 0, size, 0);
        break;
      case CollectiveKind::recv:
        feed(peer_of(call), 0, size, 0);
        break;
      case CollectiveKind::send:
        break;
      }
      const bool reduces =
          call.kind == CollectiveKind::all_reduce || call.kind == CollectiveKind::reduce_scatter;
      // Per output byte: the piece of this rank's own contribution it was
      // computed from, if any (a rank's contribution reaches a byte at most
      // once); kNoPiece otherwise.
      constexpr std::uint64_t kNoPiece = ~std::uint64_t{0};
      std::vector<std::uint64_t>& own_piece = own_piece_;
      room(own_piece, size);
      own_piece.assign(size, kNoPiece);
      // Feed by feed, each over its bytes (a byte's sources are the feeds
      // covering it, so visiting feeds in the outer loop visits the same
      // (byte, source) pairs): first this rank's own — a byte computed
      // from an own stale piece is the rank's (kMine), whatever else fed
      // it — then every feed, marking the other bytes a stale piece
      // reached as fed and citing that piece's (source, root entry).
      constexpr std::uint8_t kFed = 1;
      constexpr std::uint8_t kMine = 2;
      for (const Feed& source : feeds) {
        if (source.rank != me) {
          continue;
        }
        const Contribution& contribution = *source.from;
        for (std::uint64_t byte = source.first; byte < source.end; ++byte) {
          const std::uint64_t piece = contribution.piece_at[byte - source.first + source.shift];
          own_piece[byte] = piece;
          if (contribution.piece_root[piece] != 0) {
            fed[byte] = kMine;
            own_pieces.at(piece) = true;
          }
        }
      }
      for (const Feed& source : feeds) {
        const Contribution& contribution = *source.from;
        if (!reduces) {
          // Values: the copy of the (only) source's bytes; a reduction is
          // computed element by element below.
          std::copy_n(contribution.value.begin() + static_cast<std::ptrdiff_t>(source.shift),
                      source.end - source.first,
                      values.begin() + static_cast<std::ptrdiff_t>(source.first));
        }
        for (std::uint64_t byte = source.first; byte < source.end; ++byte) {
          const std::uint64_t piece = contribution.piece_at[byte - source.first + source.shift];
          if (fed[byte] == kMine || contribution.piece_root[piece] == 0) {
            continue;
          }
          fed[byte] = kFed;
          const std::pair<int, std::size_t> entry{source.rank, contribution.slot[piece]};
          if (cited.empty() || cited.back() != entry) { // Runs of one pair: kept short.
            cited.push_back(entry);
          }
        }
      }
      if (reduces) {
        // Element by element over every rank's contribution, in rank order.
        const std::uint64_t first = call.kind == CollectiveKind::reduce_scatter
                                        ? static_cast<std::uint64_t>(me) * block
                                        : 0;
        const auto& base = contribution(0).value;
        values.assign(base.begin() + static_cast<std::ptrdiff_t>(first),
                      base.begin() + static_cast<std::ptrdiff_t>(first + size));
        for (int source = 1; source < ranks; ++source) {
          const auto& value = contribution(source).value;
          if (first + size > value.size()) {
            throw std::out_of_range("model: a contribution shorter than the reduction");
          }
          combine(values, std::span(value).subspan(first, size), collective.type, collective.op);
        }
      }
      // Carried: own stale pieces in ascending order, each its bytes — each
      // maximal run of bytes from one own stale piece, found in one pass
      // over the output (a pass per stale piece was a fifth of the model's
      // collective time), then ordered by piece (a piece's runs stay
      // ascending: they are disjoint, and sorted by their first byte).
      const Contribution* mine = static_cast<std::size_t>(me) < contributed_.size() &&
                                         contributed_[static_cast<std::size_t>(me)] != 0
                                     ? &contributions_[static_cast<std::size_t>(me)]
                                     : nullptr;
      std::vector<std::pair<std::uint64_t, ByteRange>>& runs = own_runs_;
      runs.clear();
      for_each_run(
          size,
          [&](std::uint64_t byte) {
            return own_piece[byte] != kNoPiece && own_pieces[own_piece[byte]];
          },
          [&](ByteRange range) {
            // Cut where the piece changes: a run is one piece's bytes.
            std::uint64_t begin = range.begin();
            for (std::uint64_t byte = begin + 1; byte <= range.end(); ++byte) {
              if (byte == range.end() || own_piece[byte] != own_piece[begin]) {
                // A run per own stale piece (its image is one span of the
                // output), so room for kMaxPieces at the model's first run:
                // grown by doubling, this list and the plan's carried list
                // were several allocations per model, and a model is made
                // per fuzz input (issue 13).
                if (runs.capacity() < kMaxPieces) {
                  runs.reserve(kMaxPieces);
                }
                runs.emplace_back(own_piece[begin], ByteRange::of(begin, byte));
                begin = byte;
              }
            }
          });
      std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second.begin() < b.second.begin();
      });
      if (plan.carried.capacity() < runs.size()) {
        plan.carried.reserve(std::max<std::size_t>(runs.size(), kMaxPieces));
      }
      for (const auto& [piece, range] : runs) {
        plan.carried.emplace_back(range, FailureId::from_raw(mine->piece_root[piece]));
        stale_bytes += range.size();
      }
      for_each_run(
          size, [&](std::uint64_t byte) { return fed[byte] == kFed; },
          [&](ByteRange range) { plan.fed.push_back(range); });
      if (!plan.fed.empty()) {
        // Every feeding rank, ascending, with the roots it cited, ascending;
        // past eight ranks, only how many more.
        std::sort(cited.begin(), cited.end());
        cited.erase(std::unique(cited.begin(), cited.end()), cited.end());
        // Appended in place into a kept buffer (operator+ made a temporary
        // per piece; issue 13); the Error below copies it.
        std::string& message = message_;
        message.assign("fed stale bytes from ");
        int listed = 0;
        int unlisted = 0;
        for (std::size_t at_cited = 0; at_cited < cited.size();) {
          const int source = cited[at_cited].first;
          std::size_t end = at_cited; // [at_cited, end): this source's entries, ascending.
          while (end < cited.size() && cited[end].first == source) {
            ++end;
          }
          const std::size_t first_entry = at_cited;
          at_cited = end;
          if (listed == kListedSources) {
            ++unlisted;
            continue;
          }
          const Contribution& contribution = this->contribution(source);
          message += listed == 0 ? "rank " : "; and from rank ";
          message += std::to_string(source);
          message += ": ";
          for (std::size_t index = first_entry; index < end; ++index) {
            if (index != first_entry) {
              message += "; ";
            }
            message += contribution.texts.at(cited[index].second);
          }
          if (cited[end - 1].second + 1 == kRoots && contribution.more != 0) {
            message += " (and ";
            message += std::to_string(contribution.more);
            message += " more failures on rank ";
            message += std::to_string(source);
            message += ')';
          }
          ++listed;
        }
        if (unlisted != 0) {
          message += "; and from ";
          message += std::to_string(unlisted);
          message += " more ranks";
        }
        plan.fed_error = Error(ErrorKind::Remote, message);
        if (immediate) {
          for (const ByteRange range : plan.fed) {
            stale_bytes += range.size();
          }
        }
      }
    }
    std::string& kernel = kernel_;
    kernel.assign(name(call.kind));
    kernel += '(';
    kernel += collective.name;
    kernel += ") on rank ";
    kernel += std::to_string(me);
    // Spans over the call's own bindings: a vector each cost two
    // allocations per call (issue 13).
    const std::span<const Binding> reads =
        call.send ? std::span<const Binding>(&*call.send, 1) : std::span<const Binding>();
    const std::span<const Binding> writes =
        call.recv ? std::span<const Binding>(&*call.recv, 1) : std::span<const Binding>();
    expected[at].launch = rank(me).exchange(kernel, reads, writes, plan);
    if (call.send) {
      // N2: what it read never written, listed (under Report only).
      expected[at].launch.result.unwritten = contribution(me).unwritten;
    }
    expected[at].stale_bytes = stale_bytes;
    expected[at].verdict_pending = !immediate;
  }
}

} // namespace taintpool::model
