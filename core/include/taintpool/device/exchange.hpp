// Exchange: a launch that must run whatever its inputs hold — the Device's
// half of a collective (C1-C5; collective/collectives.hpp is the other half).
//
// A collective is work that every rank of a communicator must take part in:
// a rank that skipped it (S1) would leave the others waiting forever. So a
// collective cannot be an ordinary launch. It is an *exchange*:
//   * its reads are resolved, ordered after conflicting work on other
//     streams (O1, O2) and held (O3) exactly as a launch's, but never
//     checked: the body runs even when an input is stale (C1);
//   * before the body runs, the Device tells it which input bytes are stale
//     and why — each stale range with its failure, and the report (G8) of
//     each distinct failure — as known in host order, so the body can tell
//     the other ranks (the summary, C2);
//   * its writes form a write scope as a launch's do (S1): a provisional
//     failure claims them, and they are released when the body returns;
//   * the body then says which output bytes it computed from stale bytes:
//     from this rank's own input (`carried`: they take that input's failure,
//     and the failure gains a record naming the exchange, `took_part`) or
//     from bytes another rank said were stale (`fed`, with one error: they
//     take a failure of their own, kind Remote, C4). Everything else is
//     released. If the body learns about other ranks only later (an
//     asynchronous device), it says nothing here; its backend reports the
//     fed bytes as a LateFailure of this launch when the device synchronizes
//     (C5), which the Device attributes to them and to what ran on them since.
// A body that throws leaves the write set claimed by TornDown (S3): that is
// how a communicator error reaches the outputs (C6).
//
// Cost: on the path where no input is stale, an exchange is a launch — no
// allocation beyond a launch's, nothing computed for the summary but an empty
// list. The stale path allocates its reports and records.
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/detail/function_ref.hpp>
#include <taintpool/device/launch.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace taintpool {

/// Stale bytes of one input of an exchange, as the Device knew them when it
/// ran the body.
struct StaleInput {
  std::uint32_t input; ///< Index into the exchange's read bindings.
  ByteRange range;     ///< Relative to that binding's first byte.
  FailureId failure;   ///< The failure claiming them (T3).

  friend bool operator==(const StaleInput&, const StaleInput&) = default;
};

/// Output bytes an exchange computed from stale bytes of its own input: they
/// take the input's failure (C4).
struct CarriedStale {
  std::uint32_t output; ///< Index into the exchange's write bindings.
  ByteRange range;      ///< Relative to that binding's first byte.
  std::uint32_t input;  ///< The input they were computed from (the record's `needed`).
  FailureId failure;    ///< One of the StaleInput failures the body was given.

  friend bool operator==(const CarriedStale&, const CarriedStale&) = default;
};

/// What an exchange's body says back when it returns (see above). Empty on
/// the path where nothing is stale: no allocation.
struct ExchangeOutcome {
  /// Output bytes computed from this rank's own stale input.
  std::vector<CarriedStale> carried;
  /// Output bytes computed from bytes another rank said were stale, known
  /// now (a blocking communicator); they take one new failure with `fed_error`
  /// (named after the exchange, like a failed launch's error).
  std::vector<WrittenRange> fed;
  /// Required when `fed` is not empty; kind Remote by convention.
  std::optional<Error> fed_error;
};

/// What an exchange's body sees: the launch's context, and the stale bytes
/// of its inputs with the report of each failure among them. Views only,
/// valid for the duration of the body.
class ExchangeContext {
 public:
  ExchangeContext(const KernelContext& kernel, std::span<const StaleInput> stale,
                  std::span<const Report> reports) noexcept
      : kernel_(kernel)
      , stale_(stale)
      , reports_(reports) {}

  /// The launch's bindings, stream and number, as a launch body sees them.
  [[nodiscard]] const KernelContext& kernel() const noexcept { return kernel_; }
  /// Every stale range of every input, in input order, then by offset.
  [[nodiscard]] std::span<const StaleInput> stale() const noexcept { return stale_; }
  /// One report per distinct (failure, input allocation) among stale(): the
  /// root error and the skip path that brought it to that input (G8).
  [[nodiscard]] std::span<const Report> reports() const noexcept { return reports_; }
  /// The report of `failure` for input `input`'s allocation; null if none.
  [[nodiscard]] const Report* report(FailureId failure, AllocationId input) const noexcept {
    for (const Report& report : reports_) {
      if (report.failure == failure && report.read == input) {
        return &report;
      }
    }
    return nullptr;
  }

 private:
  const KernelContext& kernel_;
  std::span<const StaleInput> stale_;
  std::span<const Report> reports_;
};

/// An exchange's body, by reference; it must not outlive the exchange() call.
using ExchangeBody = detail::FunctionRef<ExchangeOutcome(const ExchangeContext&)>;

} // namespace taintpool
