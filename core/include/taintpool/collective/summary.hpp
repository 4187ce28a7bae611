// TaintSummary: what one rank tells the others about the taint of the bytes
// it contributes to a collective (C2), and how each rank turns everybody's
// summaries into the failures its outputs carry (C3, C4).
//
// # Pieces
//
// A contribution (a rank's send buffer) of m elements is cut into
// P = min(64, m) pieces of whole elements: piece p is elements
// [p*m/P, (p+1)*m/P) (rounded down). Every rank cuts the same way, since the
// sizes of a collective agree on every rank, so "piece 5 of rank 3" names the
// same positions everywhere. A piece is stale when any of its bytes is; that
// is the precision at which taint crosses ranks: one bit per piece, 64 bits
// per contribution, whatever its size.
//
// # The summary (fixed size: 1024 bytes, trivially copyable, no pointers)
//
//   stale        bit p set: piece p holds a stale byte
//   root_of[p]   for a stale piece: which entry of root[] explains it — the
//                failure of the piece's lowest stale byte
//   root[0..3]   up to four distinct failures, in the order their first
//                piece appears: the failure's id on the sender and a line of
//                text (root_text: the root error and the skip path that
//                brought it to the contribution; cut at 220 bytes)
//   more_roots   distinct failures beyond four; their pieces name root[3]
//
// A clean contribution's summary is all zeros in its first 16 bytes, and the
// rest is never read: building it writes 16 bytes.
//
// # From summaries to failures (carried_stale, fed_stale)
//
// For each collective the output bytes of a receiving rank are images of
// pieces of some ranks' contributions (all-reduce: every rank's piece p maps
// to the same bytes; all-gather: rank s's piece p to block s; reduce-scatter:
// the part of piece p inside this rank's block; broadcast and recv: the
// root's or sender's piece p). An output byte is stale iff some contributor's
// piece it is an image of is stale (C3) — every receiving rank derives this
// from the same summaries, so they all agree. Its failure (C4): if this
// rank's own piece is stale, the failure of that piece on this rank (carried,
// local first); otherwise the collective's one failure of kind Remote on this
// rank, whose message names every source rank and root text that fed it.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/collective/communicator.hpp>
#include <taintpool/collective/data_type.hpp>
#include <taintpool/detail/function_ref.hpp>
#include <taintpool/device/exchange.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace taintpool {

/// How a contribution is cut into pieces (see above).
class PieceLayout {
 public:
  /// At most this many pieces per contribution: one bit each in the summary.
  static constexpr std::uint32_t max_pieces = 64;

  /// `elements` elements of `element_size` bytes. Throws
  /// std::invalid_argument for an element size of 0 or a size past 2^56
  /// elements (so p*m cannot overflow).
  PieceLayout(std::uint64_t elements, std::uint64_t element_size);

  /// min(64, elements).
  [[nodiscard]] std::uint32_t pieces() const noexcept { return pieces_; }
  /// The bytes of piece `piece` (< pieces()), relative to the contribution.
  [[nodiscard]] ByteRange piece(std::uint32_t piece) const noexcept;
  /// The pieces holding a byte of `bytes` (relative to the contribution), as
  /// a bit mask.
  [[nodiscard]] std::uint64_t overlapping(ByteRange bytes) const noexcept;
  /// The contribution's size in bytes.
  [[nodiscard]] std::uint64_t bytes() const noexcept { return elements_ * element_size_; }

 private:
  std::uint64_t elements_;
  std::uint64_t element_size_;
  std::uint32_t pieces_;
};

/// One rank's summary of one contribution (see above): the wire format.
struct TaintSummary {
  static constexpr std::size_t bytes = 1024;     ///< sizeof(TaintSummary).
  static constexpr std::size_t roots = 4;        ///< Root entries with text.
  static constexpr std::size_t text_bytes = 220; ///< Text per root entry.

  struct Root {
    std::uint64_t failure; ///< The failure's raw id on the sender.
    std::uint32_t length;  ///< Bytes of `text` in use.
    char text[text_bytes]; ///< root_text(), cut; not NUL-terminated.
  };

  std::uint64_t stale;      ///< Bit p: piece p holds a stale byte.
  std::uint32_t root_count; ///< Entries of root[] in use.
  std::uint32_t more_roots; ///< Distinct failures past `roots`; their pieces name root[3].
  std::uint8_t root_of[PieceLayout::max_pieces]; ///< Stale piece p: its entry in root[].
  Root root[roots];
  std::uint8_t reserved[16]; ///< Zero; keeps the size a round 1024.

  /// The root text of entry `index`, as sent.
  [[nodiscard]] std::string_view text(std::size_t index) const noexcept {
    return {root[index].text, root[index].length};
  }
};

/// A clean summary: the first 16 bytes zero, the rest untouched.
inline void clear_summary(TaintSummary& summary) noexcept {
  summary.stale = 0;
  summary.root_count = 0;
  summary.more_roots = 0;
}

/// The exact root failure of each stale piece of a contribution: what the
/// rank's own outputs carry (C4), beyond the four the summary can name.
struct Summarized {
  /// Raw failure ids (FailureId::raw()), for stale pieces only; 0 elsewhere.
  std::array<std::uint64_t, PieceLayout::max_pieces> piece_root{};
};

/// C2: fills `summary` for the contribution laid out by `layout`, whose
/// stale ranges (relative to it, ascending, disjoint) are `stale`; each
/// root's text is root_text(report_of(failure)). Allocates only when
/// something is stale. Returns the exact root of every stale piece.
Summarized summarize(TaintSummary& summary, const PieceLayout& layout,
                     std::span<const StaleInput> stale,
                     detail::FunctionRef<const Report&(FailureId)> report_of);

/// One line for the summary: "allocation 7 was left unwritten by failure 12
/// (out of memory: ...)", then ", then <kernel> was skipped: it needed
/// allocation 8" for each step of the path, oldest first; cut to
/// TaintSummary::text_bytes, ending in "..." when cut.
[[nodiscard]] std::string root_text(const Report& report);

/// The geometry of one collective as one rank sees it.
struct CollectiveShape {
  CollectiveKind kind = CollectiveKind::all_reduce;
  std::uint64_t count = 0;        ///< As CollectiveCall::count.
  std::uint64_t element_size = 1; ///< size_of(type).
  int ranks = 1;                  ///< Communicator size.
  int me = 0;                     ///< This rank.
  int peer = 0;                   ///< Broadcast root, send/recv peer.

  /// Bytes of this rank's contribution (0 when it contributes nothing).
  [[nodiscard]] std::uint64_t send_bytes() const noexcept;
  /// Bytes of this rank's output (0 when it receives nothing).
  [[nodiscard]] std::uint64_t recv_bytes() const noexcept;
  /// The layout every contributor's pieces follow.
  [[nodiscard]] PieceLayout layout() const;
  /// Whether rank `rank`'s contribution reaches this rank's output.
  [[nodiscard]] bool feeds_me(int rank) const noexcept;
  /// Where piece `piece` of rank `source`'s contribution lands in this
  /// rank's output (empty if it does not).
  [[nodiscard]] ByteRange image(int source, std::uint32_t piece) const;
  /// The same, given layout(): what a loop over many pieces calls, so the
  /// layout is built and checked once, not once per piece.
  [[nodiscard]] ByteRange image(int source, std::uint32_t piece,
                                const PieceLayout& layout) const noexcept;
};

/// C4, this rank's half: the output bytes computed from its own stale
/// pieces (`mine`, with their exact roots), which take those failures. Known
/// when the call is made. Empty unless this rank contributes to its own
/// output and some piece is stale.
[[nodiscard]] std::vector<CarriedStale>
carried_stale(const CollectiveShape& shape, const TaintSummary& mine, const Summarized& roots);

/// C3/C4, the other ranks' half: the output bytes fed by another rank's
/// stale pieces (less those this rank's own stale pieces already explain),
/// and the one error they carry (kind Remote): "rank 1 was fed stale bytes
/// from rank 3: <root text>", every feeding rank and root listed.
struct FedStale {
  std::vector<WrittenRange> ranges; ///< Output 0's bytes, ascending, disjoint.
  std::optional<Error> error;       ///< Set when ranges is not empty.
};

/// From the summaries as Communicator::summaries delivers them (each
/// TaintSummary::bytes long). Allocates only when something is stale.
[[nodiscard]] FedStale fed_stale(const CollectiveShape& shape,
                                 std::span<const std::byte> summaries);

/// Whether fed_stale() would find nothing: a scan of the stale masks, and
/// when one is not clean, fed_stale()'s test piece by piece, stopping at
/// the first fed piece. Never allocates (but throws as fed_stale() does on
/// too few summary bytes).
[[nodiscard]] bool fed_clean(const CollectiveShape& shape, std::span<const std::byte> summaries);

} // namespace taintpool
