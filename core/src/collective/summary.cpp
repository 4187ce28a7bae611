// The summary's geometry and its two directions: summarize() on the sender,
// carried_stale() and fed_stale() on the receiver. See summary.hpp.
#include <taintpool/collective/summary.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace taintpool {

static_assert(sizeof(TaintSummary) == TaintSummary::bytes, "the wire format is 1024 bytes");
static_assert(std::is_trivially_copyable_v<TaintSummary>, "a summary travels as bytes");

std::string_view name(DataType type) noexcept {
  switch (type) {
  case DataType::u8:
    return "u8";
  case DataType::i32:
    return "i32";
  case DataType::i64:
    return "i64";
  case DataType::f32:
    return "f32";
  case DataType::f64:
    return "f64";
  }
  return "?";
}

std::string_view name(ReduceOp op) noexcept {
  switch (op) {
  case ReduceOp::sum:
    return "sum";
  case ReduceOp::prod:
    return "prod";
  case ReduceOp::min:
    return "min";
  case ReduceOp::max:
    return "max";
  }
  return "?";
}

std::string_view name(CollectiveKind kind) noexcept {
  switch (kind) {
  case CollectiveKind::all_reduce:
    return "all_reduce";
  case CollectiveKind::all_gather:
    return "all_gather";
  case CollectiveKind::reduce_scatter:
    return "reduce_scatter";
  case CollectiveKind::broadcast:
    return "broadcast";
  case CollectiveKind::send:
    return "send";
  case CollectiveKind::recv:
    return "recv";
  }
  return "?";
}

// ------------------------------------------------------------ pieces

PieceLayout::PieceLayout(std::uint64_t elements, std::uint64_t element_size)
    : elements_(elements)
    , element_size_(element_size)
    , pieces_(static_cast<std::uint32_t>(std::min<std::uint64_t>(elements, max_pieces))) {
  if (element_size == 0 || elements > (std::uint64_t{1} << 56) ||
      elements * element_size / element_size != elements) {
    throw std::invalid_argument("PieceLayout: " + std::to_string(elements) + " elements of " +
                                std::to_string(element_size) + " bytes cannot be cut into pieces");
  }
}

ByteRange PieceLayout::piece(std::uint32_t piece) const noexcept {
  const std::uint64_t first = piece * elements_ / pieces_;
  const std::uint64_t last = (piece + 1) * elements_ / pieces_;
  return ByteRange::of(first * element_size_, last * element_size_);
}

std::uint64_t PieceLayout::overlapping(ByteRange bytes) const noexcept {
  std::uint64_t mask = 0;
  for (std::uint32_t index = 0; index < pieces_; ++index) {
    if (piece(index).overlaps(bytes)) {
      mask |= std::uint64_t{1} << index;
    }
  }
  return mask;
}

// ------------------------------------------------------------ the sender

namespace {

/// Writes a root's text into a fixed buffer of TaintSummary::text_bytes,
/// in place: the summary's own Root::text, or root_text()'s scratch. What
/// does not fit is counted, not kept; finish() then cuts as the text has
/// always been cut — at text_bytes - 3, backed off over UTF-8 continuation
/// bytes so no sequence is split, then "..." — and returns the length.
/// Every byte the cut needs (up to text_bytes - 1) is in the buffer, so
/// the result is byte for byte what building the whole std::string and
/// cutting it gave, without that string and its growth (issue 13: a
/// stale collective built it per root, on every rank).
class RootTextWriter {
 public:
  explicit RootTextWriter(char (&buffer)[TaintSummary::text_bytes]) noexcept
      : buffer_(buffer) {}

  void put(std::string_view text) noexcept {
    const std::size_t room = TaintSummary::text_bytes - used_;
    const std::size_t fits = std::min(room, text.size());
    std::memcpy(buffer_ + used_, text.data(), fits);
    used_ += fits;
    cut_ = cut_ || fits < text.size();
  }
  void put(std::uint64_t number) noexcept {
    char digits[20]; // 2^64 - 1 has 20 digits.
    char* const end = std::to_chars(digits, digits + sizeof(digits), number).ptr;
    put(std::string_view(digits, static_cast<std::size_t>(end - digits)));
  }
  // As to_string(FailureId), to_string(AllocationId), to_string(Error)
  // and to_string(ByteRange) spell them.
  void put(FailureId id) noexcept {
    put("failure ");
    put(id.raw());
  }
  void put(AllocationId id) noexcept {
    put("allocation ");
    put(std::uint64_t{allocation_number(id)});
    if (allocation_space(id) != 0) {
      put(" (memory ");
      put(std::uint64_t{allocation_space(id)});
      put(")");
    }
  }
  void put(const Error& error) noexcept {
    put(name(error.kind()));
    if (!error.message().empty()) {
      put(": ");
      put(std::string_view(error.message()));
    }
  }
  void put(ByteRange range) noexcept {
    put("[");
    put(range.begin());
    put(", ");
    put(range.end());
    put(")");
  }

  /// The text's length in the buffer, cut when it did not fit.
  std::uint32_t finish() noexcept {
    if (!cut_) {
      return static_cast<std::uint32_t>(used_);
    }
    std::size_t keep = TaintSummary::text_bytes - 3;
    // Never cut a UTF-8 sequence in two: back off over continuation bytes.
    while (keep > 0 && (static_cast<unsigned char>(buffer_[keep]) & 0xC0u) == 0x80u) {
      --keep;
    }
    std::memcpy(buffer_ + keep, "...", 3);
    return static_cast<std::uint32_t>(keep + 3);
  }

 private:
  char* buffer_;
  std::size_t used_ = 0;
  bool cut_ = false; ///< Some byte did not fit.
};

/// root_text(report) into `buffer`; returns its length.
std::uint32_t write_root_text(const Report& report,
                              char (&buffer)[TaintSummary::text_bytes]) noexcept {
  RootTextWriter text(buffer);
  text.put(report.origin);
  text.put(" was left unwritten by ");
  text.put(report.failure);
  text.put(" (");
  text.put(report.root);
  text.put(")");
  // Oldest first. (Reverse iterators, not std::views::reverse: clang 14
  // cannot use libstdc++ 12's ranges.)
  for (std::size_t back = report.path.size(); back-- > 0;) {
    const SkipRecord& step = report.path[back];
    text.put(", then ");
    text.put(std::string_view(step.kernel));
    if (step.took_part) {
      text.put(" took part with stale bytes of ");
    } else if (step.ran) {
      text.put(" ran on stale bytes of ");
    } else {
      text.put(" was skipped: it needed ");
    }
    text.put(step.needed);
  }
  if (report.path_may_be_incomplete) {
    text.put(" (the path may begin earlier)");
  }
  return text.finish();
}

} // namespace

std::string root_text(const Report& report) {
  char buffer[TaintSummary::text_bytes];
  const std::uint32_t length = write_root_text(report, buffer);
  return std::string(buffer, length);
}

Summarized summarize(TaintSummary& summary, const PieceLayout& layout,
                     std::span<const StaleInput> stale,
                     detail::FunctionRef<const Report&(FailureId)> report_of) {
  clear_summary(summary);
  Summarized out;
  if (stale.empty()) {
    return out; // The common path: 16 bytes written.
  }
  // The distinct roots in piece order, raw: at most one per piece, so an
  // array on the stack, where a vector was an allocation per summarized
  // contribution (issue 13).
  std::array<std::uint64_t, PieceLayout::max_pieces> distinct{};
  std::size_t distinct_count = 0;
  for (std::uint32_t index = 0; index < layout.pieces(); ++index) {
    const ByteRange piece = layout.piece(index);
    // Ascending and disjoint: the first range that reaches into the piece
    // holds its lowest stale byte.
    const auto first = std::find_if(stale.begin(), stale.end(), [&](const StaleInput& input) {
      return input.range.overlaps(piece);
    });
    if (first == stale.end()) {
      continue;
    }
    summary.stale |= std::uint64_t{1} << index;
    out.piece_root[index] = first->failure.raw();
    const std::uint64_t* const begin = distinct.data();
    const std::uint64_t* const known =
        std::find(begin, begin + distinct_count, first->failure.raw());
    if (known == begin + distinct_count) {
      distinct.at(distinct_count++) = first->failure.raw(); // pieces() <= max_pieces.
    }
    summary.root_of[index] = static_cast<std::uint8_t>(
        std::min<std::size_t>(static_cast<std::size_t>(known - begin), TaintSummary::roots - 1));
  }
  summary.root_count =
      static_cast<std::uint32_t>(std::min<std::size_t>(distinct_count, TaintSummary::roots));
  summary.more_roots = static_cast<std::uint32_t>(distinct_count - summary.root_count);
  for (std::uint32_t entry = 0; entry < summary.root_count; ++entry) {
    // Written straight into the entry (C2), where a std::string was built
    // and copied: the same bytes and cut, and no allocation per root.
    TaintSummary::Root& root = summary.root[entry];
    root.failure = distinct[entry];
    root.length = write_root_text(report_of(FailureId::from_raw(distinct[entry])), root.text);
  }
  return out;
}

// ------------------------------------------------------------ the geometry

namespace {

bool gathers(CollectiveKind kind) noexcept {
  return kind == CollectiveKind::all_reduce || kind == CollectiveKind::all_gather ||
         kind == CollectiveKind::reduce_scatter;
}

/// Where rank `source`'s summary sits among the delivered ones.
std::size_t summary_index(const CollectiveShape& shape, int source) noexcept {
  return gathers(shape.kind) ? static_cast<std::size_t>(source) : 0;
}

std::uint64_t stale_mask(std::span<const std::byte> summaries, std::size_t index) noexcept {
  std::uint64_t mask = 0;
  std::memcpy(&mask, summaries.data() + index * TaintSummary::bytes, sizeof(mask));
  return mask;
}

} // namespace

std::uint64_t CollectiveShape::send_bytes() const noexcept {
  switch (kind) {
  case CollectiveKind::all_reduce:
  case CollectiveKind::all_gather:
  case CollectiveKind::send:
    return count * element_size;
  case CollectiveKind::reduce_scatter:
    return static_cast<std::uint64_t>(ranks) * count * element_size;
  case CollectiveKind::broadcast:
    return me == peer ? count * element_size : 0;
  case CollectiveKind::recv:
    return 0;
  }
  return 0;
}

std::uint64_t CollectiveShape::recv_bytes() const noexcept {
  switch (kind) {
  case CollectiveKind::all_reduce:
  case CollectiveKind::reduce_scatter:
  case CollectiveKind::broadcast:
  case CollectiveKind::recv:
    return count * element_size;
  case CollectiveKind::all_gather:
    return static_cast<std::uint64_t>(ranks) * count * element_size;
  case CollectiveKind::send:
    return 0;
  }
  return 0;
}

PieceLayout CollectiveShape::layout() const {
  const std::uint64_t elements =
      kind == CollectiveKind::reduce_scatter ? static_cast<std::uint64_t>(ranks) * count : count;
  return PieceLayout(elements, element_size);
}

bool CollectiveShape::feeds_me(int rank) const noexcept {
  switch (kind) {
  case CollectiveKind::all_reduce:
  case CollectiveKind::all_gather:
  case CollectiveKind::reduce_scatter:
    return true;
  case CollectiveKind::broadcast:
  case CollectiveKind::recv:
    return rank == peer;
  case CollectiveKind::send:
    return false;
  }
  return false;
}

ByteRange CollectiveShape::image(int source, std::uint32_t piece) const {
  return image(source, piece, layout());
}

ByteRange CollectiveShape::image(int source, std::uint32_t piece,
                                 const PieceLayout& layout) const noexcept {
  if (!feeds_me(source)) {
    return {};
  }
  const ByteRange bytes = layout.piece(piece);
  const std::uint64_t block = count * element_size;
  switch (kind) {
  case CollectiveKind::all_gather: {
    const std::uint64_t shift = static_cast<std::uint64_t>(source) * block;
    return ByteRange::of(bytes.begin() + shift, bytes.end() + shift);
  }
  case CollectiveKind::reduce_scatter: {
    const std::uint64_t first = static_cast<std::uint64_t>(me) * block;
    const ByteRange mine = bytes.intersect(ByteRange::sized(first, block));
    return mine.empty() ? ByteRange{} : ByteRange::of(mine.begin() - first, mine.end() - first);
  }
  default:
    return bytes;
  }
}

// ------------------------------------------------------------ the receiver

std::vector<CarriedStale> carried_stale(const CollectiveShape& shape, const TaintSummary& mine,
                                        const Summarized& roots) {
  std::vector<CarriedStale> out;
  if (mine.stale == 0 || !shape.feeds_me(shape.me)) {
    return out;
  }
  // At most one per stale piece: one allocation, where growing by
  // doubling took up to seven (issue 13).
  out.reserve(static_cast<std::size_t>(std::popcount(mine.stale)));
  const PieceLayout layout = shape.layout();
  for (std::uint32_t index = 0; index < layout.pieces(); ++index) {
    if ((mine.stale >> index & 1u) == 0) {
      continue;
    }
    const ByteRange bytes = shape.image(shape.me, index, layout);
    if (!bytes.empty()) {
      out.push_back(CarriedStale{0, bytes, 0, FailureId::from_raw(roots.piece_root[index])});
    }
  }
  return out;
}

namespace {

/// The feeders: every source other than this rank that feeds it and whose
/// summary lies within `summaries`, ascending; calls `fn(source, mask)`
/// with its stale mask while `fn` returns true. The one statement of that
/// filter, which masks_clean(), max_fed_pieces() and for_each_fed_piece()
/// share (the last after checking the size, so it sees every source).
template <class Fn>
void for_each_feeder(const CollectiveShape& shape, std::span<const std::byte> summaries, Fn&& fn) {
  for (int source = 0; source < shape.ranks; ++source) {
    if (source == shape.me || !shape.feeds_me(source)) {
      continue;
    }
    const std::size_t index = summary_index(shape, source);
    if ((index + 1) * TaintSummary::bytes <= summaries.size() &&
        !fn(source, stale_mask(summaries, index))) {
      return;
    }
  }
}

/// Whether every source other than this rank sent an all-clean mask.
bool masks_clean(const CollectiveShape& shape, std::span<const std::byte> summaries) noexcept {
  bool clean = true;
  for_each_feeder(shape, summaries, [&](int, std::uint64_t mask) {
    clean = mask == 0;
    return clean;
  });
  return clean;
}

/// The most pieces for_each_fed_piece() can visit: every stale piece of
/// every feeder, before the own pieces explain some and empty images drop.
std::size_t max_fed_pieces(const CollectiveShape& shape,
                           std::span<const std::byte> summaries) noexcept {
  std::size_t most = 0;
  for_each_feeder(shape, summaries, [&](int, std::uint64_t mask) {
    most += static_cast<std::size_t>(std::popcount(mask));
    return true;
  });
  return most;
}

/// fed_stale's precondition, also fed_clean's (which used to call it, and
/// keeps its message).
void check_summaries_size(const CollectiveShape& shape, std::span<const std::byte> summaries) {
  if (summaries.size() <
      (gathers(shape.kind) ? static_cast<std::size_t>(shape.ranks) : 1) * TaintSummary::bytes) {
    throw std::logic_error("fed_stale: the communicator delivered " +
                           std::to_string(summaries.size()) + " bytes of summaries");
  }
}

/// The test fed_stale() and fed_clean() share (C3/C4): calls
/// `fn(source, index, bytes)` for every fed piece — a stale piece of a
/// feeding rank whose image is not empty and that no own stale piece
/// explains (local first) — in source then piece order, while `fn` returns
/// true. Every image is one piece's, and pieces of the same index land on
/// the same bytes whoever sends them, so an image is either wholly
/// explained by an own piece or not at all. Allocates nothing (the own
/// images sit in a 64-entry array on the stack, computed once);
/// O(sources x pieces x own stale pieces), pieces <= 64. Throws as
/// fed_stale() does on too few summary bytes.
template <class Fn>
void for_each_fed_piece(const CollectiveShape& shape, std::span<const std::byte> summaries,
                        Fn&& fn) {
  check_summaries_size(shape, summaries);
  const PieceLayout layout = shape.layout();
  const std::uint64_t own =
      shape.feeds_me(shape.me) ? stale_mask(summaries, summary_index(shape, shape.me)) : 0;
  std::array<ByteRange, PieceLayout::max_pieces> own_images;
  std::size_t own_count = 0;
  for (std::uint32_t index = 0; index < layout.pieces(); ++index) {
    if ((own >> index & 1u) != 0) {
      own_images[own_count++] = shape.image(shape.me, index, layout);
    }
  }
  const auto own_explains = [&](ByteRange bytes) {
    return std::find(own_images.begin(), own_images.begin() + own_count, bytes) !=
           own_images.begin() + own_count;
  };
  for_each_feeder(shape, summaries, [&](int source, std::uint64_t stale) {
    for (std::uint32_t index = 0; index < layout.pieces(); ++index) {
      if ((stale >> index & 1u) == 0) {
        continue;
      }
      const ByteRange bytes = shape.image(source, index, layout);
      if (!bytes.empty() && !own_explains(bytes) && !fn(source, index, bytes)) {
        return false;
      }
    }
    return true;
  });
}

} // namespace

bool fed_clean(const CollectiveShape& shape, std::span<const std::byte> summaries) {
  // Exact, not just the masks: a reduce-scatter piece may land wholly in
  // another rank's block. fed_stale(...).ranges.empty(), stopping at the
  // first fed piece and building nothing: fed_stale's lists, ranges and
  // message were the collective path's second allocation site (issue 13).
  if (masks_clean(shape, summaries)) {
    return true;
  }
  bool clean = true;
  for_each_fed_piece(shape, summaries, [&](int, std::uint32_t, ByteRange) {
    clean = false;
    return false;
  });
  return clean;
}

FedStale fed_stale(const CollectiveShape& shape, std::span<const std::byte> summaries) {
  FedStale out;
  if (masks_clean(shape, summaries)) {
    return out;
  }
  struct Cited {
    int source;
    std::uint32_t entry;
  };
  std::vector<Cited> cited;
  // Every fed piece's image, into the list returned: sorted and coalesced
  // in place below (a list of images apart from it was one more allocation
  // per stale collective; issue 13). At most one per stale piece of a
  // feeding rank: reserved once, where growing by doubling took an
  // allocation per doubling of each.
  std::vector<WrittenRange>& fed = out.ranges;
  const std::size_t most = max_fed_pieces(shape, summaries);
  fed.reserve(most);
  cited.reserve(most);
  TaintSummary feeder;
  int loaded = -1; // The source `feeder` holds: the visitor goes source by source.
  for_each_fed_piece(shape, summaries, [&](int source, std::uint32_t index, ByteRange bytes) {
    fed.push_back(WrittenRange{0, bytes});
    if (source != loaded) {
      std::memcpy(&feeder, summaries.data() + summary_index(shape, source) * TaintSummary::bytes,
                  sizeof(feeder));
      loaded = source;
    }
    const std::uint32_t entry = std::min<std::uint32_t>(
        feeder.root_of[index], std::max<std::uint32_t>(feeder.root_count, 1) - 1);
    if (std::none_of(cited.begin(), cited.end(), [&](const Cited& known) {
          return known.source == source && known.entry == entry;
        })) {
      cited.push_back(Cited{source, entry});
    }
    return true;
  });
  if (fed.empty()) {
    return out;
  }
  // Ascending, then each image that meets or overlaps the range before it
  // merged into that one: the first `kept` entries are the ranges.
  std::sort(fed.begin(), fed.end(), [](const WrittenRange& a, const WrittenRange& b) {
    return a.range.begin() < b.range.begin();
  });
  std::size_t kept = 0;
  for (std::size_t at = 0; at < fed.size(); ++at) {
    const ByteRange bytes = fed[at].range;
    if (kept != 0 && fed[kept - 1].range.end() >= bytes.begin()) {
      const ByteRange last = fed[kept - 1].range;
      fed[kept - 1].range = ByteRange::of(last.begin(), std::max(last.end(), bytes.end()));
    } else {
      fed[kept++].range = bytes;
    }
  }
  fed.erase(fed.begin() + static_cast<std::ptrdiff_t>(kept), fed.end());

  // The message: every feeding rank, ascending, with the roots it cited.
  std::sort(cited.begin(), cited.end(), [](const Cited& a, const Cited& b) {
    return a.source != b.source ? a.source < b.source : a.entry < b.entry;
  });
  constexpr int listed_sources = 8;
  // Appended piece by piece into one buffer sized for every cited text
  // (operator+ made a temporary string per piece, each a heap block once
  // past the small-string buffer: a root text always is; issue 13).
  std::string message;
  message.reserve(64 + cited.size() * (TaintSummary::text_bytes + 2) +
                  std::min<std::size_t>(cited.size(), listed_sources) * 64);
  message += "fed stale bytes from ";
  int sources = 0;
  int unlisted = 0;
  for (std::size_t at = 0; at < cited.size();) {
    const int source = cited[at].source;
    if (sources == listed_sources) {
      ++unlisted;
      while (at < cited.size() && cited[at].source == source) {
        ++at;
      }
      continue;
    }
    TaintSummary summary;
    std::memcpy(&summary, summaries.data() + summary_index(shape, source) * TaintSummary::bytes,
                sizeof(summary));
    message += sources == 0 ? "rank " : "; and from rank ";
    message += std::to_string(source);
    message += ": ";
    bool first = true;
    bool last_entry = false;
    for (; at < cited.size() && cited[at].source == source; ++at) {
      const std::uint32_t entry = cited[at].entry;
      if (entry < summary.root_count) {
        const std::uint32_t length =
            std::min<std::uint32_t>(summary.root[entry].length, TaintSummary::text_bytes);
        if (!first) {
          message += "; ";
        }
        message.append(summary.root[entry].text, length);
      } else {
        message += first ? "a failure it did not describe" : "";
      }
      last_entry = last_entry || entry + 1 == TaintSummary::roots;
      first = false;
    }
    if (last_entry && summary.more_roots != 0) {
      message += " (and ";
      message += std::to_string(summary.more_roots);
      message += " more failures on rank ";
      message += std::to_string(source);
      message += ')';
    }
    ++sources;
  }
  if (unlisted != 0) {
    message += "; and from ";
    message += std::to_string(unlisted);
    message += " more ranks";
  }
  out.error = Error::remote(std::move(message));
  return out;
}

} // namespace taintpool
