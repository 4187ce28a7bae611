// Unwritten reads: what a Device does with reads of never-written bytes
// (N1, N2), and where it remembers who created a buffer (N3).
//
// Under FreshBytes::NeverWritten (fresh_bytes.hpp) the bytes of a new
// allocation are claimed by the memory's NeverWritten failure until
// something writes them. A launch that reads such bytes is, by default,
// skipped like any launch with a stale input (S1). Runtimes that want
// warnings rather than changed control flow pick Report: the launch runs, and
// its LaunchResult lists the never-written bytes it read (N2). Reads from the
// host fail either way (D1), naming the allocation, the bytes, and the site
// the caller gave when it created the buffer (N3).
//
// Cost: nothing on a launch whose reads are clean; the policy is looked at
// only when a read holds a claim (the skip path). Creation sites are stored
// only under NeverWritten, and only when the caller gives one: a hash-map
// entry per named buffer, pruned as buffers end — a debugging aid, off the
// hot path.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/failure_id.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace taintpool {

/// What a launch that reads never-written bytes does (DeviceOptions).
enum class UnwrittenReads : std::uint8_t {
  Skip,   ///< N2: it is skipped like any launch with a stale input (S1). The default.
  Report, ///< N2: it runs; LaunchResult::unwritten names what it read unwritten.
};

/// N2: never-written bytes a launch read and ran on anyway (UnwrittenReads::Report).
struct UnwrittenRead {
  AllocationId allocation; ///< Whose bytes.
  ByteRange bytes;         ///< Allocation-relative, within the read binding.

  friend bool operator==(const UnwrittenRead&, const UnwrittenRead&) = default;
};

/// N3: the creating site of each buffer whose creator named one, so a report
/// of its never-written bytes can say where it came from. Cold: a map from
/// allocation to text, touched by create_buffer with a site and by reports.
class CreationSites {
 public:
  /// Remembers `site` for `allocation` (an empty site is not stored). Entries
  /// of allocations that ended are dropped every time the map doubles, via
  /// `live(AllocationId) -> bool`, so the map tracks the live named buffers.
  template <class Live>
  void note(AllocationId allocation, std::string_view site, Live&& live) {
    if (site.empty()) {
      return;
    }
    if (sites_.size() >= prune_at_) {
      std::erase_if(sites_,
                    [&](const auto& entry) { return !live(AllocationId::from_raw(entry.first)); });
      prune_at_ = 2 * sites_.size() + 64;
    }
    sites_.insert_or_assign(allocation.raw(), std::string(site));
  }

  /// The site given for `allocation`, or null.
  [[nodiscard]] const std::string* find(AllocationId allocation) const {
    const auto found = sites_.find(allocation.raw());
    return found == sites_.end() ? nullptr : &found->second;
  }

  /// Entries held (live named buffers, plus ended ones not yet pruned).
  [[nodiscard]] std::size_t size() const noexcept { return sites_.size(); }

 private:
  std::unordered_map<std::uint64_t, std::string> sites_;
  std::size_t prune_at_ = 64;
};

} // namespace taintpool
