// The vocabulary of one launch: what a body sees (KernelContext), what it
// says back (LaunchOutcome), and what launch() tells the caller
// (LaunchResult). §3.5, rules S1–S5.
//
// A body reports failure by value, not by exception: a returned failure is a
// failure of the *work* and becomes taint on its outputs (S1), with any
// ranges it did write released (S2). An exception is different: it means the
// body did not finish in a known state, so the whole write set stays claimed
// by the provisional TornDown failure and the exception reaches the caller
// (S3).
#pragma once

#include <taintpool/byte_range.hpp>
#include <taintpool/device/unwritten_reads.hpp>
#include <taintpool/error.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/pool/allocation.hpp>
#include <taintpool/stream/stream_id.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace taintpool {

/// S2: bytes a failing body did write, relative to one of its outputs.
struct WrittenRange {
  std::uint32_t output; ///< Index into the launch's write bindings.
  ByteRange range;      ///< Relative to that binding's first byte.

  friend bool operator==(const WrittenRange&, const WrittenRange&) = default;
};

/// What a body says back: success, success having written only some
/// ranges (S6), failure, or failure after writing some ranges (S2). Built
/// only through the four named constructors.
///
/// Shaped as one pointer, null for success(): every launch builds, tests
/// and destroys one of these, and the common answer must cost what a null
/// pointer costs — a store, a test, a test — with no out-of-line destructor
/// on the launch path (issue 11, item 7: the scope's budget is counted in
/// cache lines as much as in instructions). The other three answers carry
/// an error or ranges, which allocate anyway; their details take one more
/// allocation beside them.
///
/// Copies are deep (a copy owns its own details); a moved-from outcome is
/// success().
class LaunchOutcome {
 public:
  /// Every output was written. Allocation-free.
  [[nodiscard]] static LaunchOutcome success() noexcept { return LaunchOutcome(); }

  /// S6: the body succeeded but wrote only `written` (a launch of zero
  /// blocks writes nothing). Those bytes are released; every other byte of
  /// the write set keeps the state it had before the launch — stale bytes
  /// stay stale with their failure. Ranges are untrusted, as for partial().
  [[nodiscard]] static LaunchOutcome wrote_only(std::vector<WrittenRange> written) {
    return LaunchOutcome(Details{std::nullopt, std::move(written), true});
  }

  /// Nothing was written: every output carries `error` (S1).
  [[nodiscard]] static LaunchOutcome failure(Error error) {
    return LaunchOutcome(Details{std::move(error), {}, false});
  }

  /// S2: the body failed after writing `written`; those bytes are released,
  /// the rest of the write set carries `error`. Ranges are untrusted: one
  /// outside its output is ignored (never releases bytes the launch did not
  /// own) and counted in the failure's message.
  [[nodiscard]] static LaunchOutcome partial(Error error, std::vector<WrittenRange> written) {
    return LaunchOutcome(Details{std::move(error), std::move(written), false});
  }

  LaunchOutcome(const LaunchOutcome& other)
      : details_(other.details_ ? std::make_unique<Details>(*other.details_) : nullptr) {}
  LaunchOutcome& operator=(const LaunchOutcome& other) {
    if (this != &other) {
      details_ = other.details_ ? std::make_unique<Details>(*other.details_) : nullptr;
    }
    return *this;
  }
  LaunchOutcome(LaunchOutcome&&) noexcept = default;
  LaunchOutcome& operator=(LaunchOutcome&&) noexcept = default;
  ~LaunchOutcome() = default;

  /// success(): every output written, nothing to say. The one test the
  /// launch path makes on a body's answer.
  [[nodiscard]] bool whole_success() const noexcept { return details_ == nullptr; }
  /// success() or wrote_only().
  [[nodiscard]] bool ok() const noexcept { return details_ == nullptr || !details_->error; }
  /// wrote_only(): a success that did not write the whole write set.
  [[nodiscard]] bool wrote_only() const noexcept { return details_ != nullptr && details_->only; }
  /// The failure's error, or null on success.
  [[nodiscard]] const Error* error() const noexcept {
    return details_ != nullptr && details_->error ? &*details_->error : nullptr;
  }
  /// The ranges a partial failure (S2) or a wrote_only success (S6)
  /// reported; empty otherwise.
  [[nodiscard]] std::span<const WrittenRange> written() const noexcept {
    return details_ != nullptr ? std::span<const WrittenRange>(details_->written)
                               : std::span<const WrittenRange>();
  }

 private:
  /// Everything but success() says.
  struct Details {
    std::optional<Error> error;
    std::vector<WrittenRange> written;
    bool only = false;
  };
  LaunchOutcome() noexcept = default;
  explicit LaunchOutcome(Details details)
      : details_(std::make_unique<Details>(std::move(details))) {}
  std::unique_ptr<Details> details_;
};

/// How a launch ended, as LaunchResult reports it.
enum class LaunchStatus : std::uint8_t {
  Ran,     ///< The body ran and succeeded; every output was released (on an
           ///< asynchronous backend, until a late failure says otherwise).
  Failed,  ///< The body ran and failed (S1, S2); `failure` is its failure.
  Skipped, ///< An input was stale; the body did not run; `failure` is the root (S1, S4).
};

/// What launch() tells the caller. The failure path fills the optionals;
/// a successful launch leaves them empty and allocates nothing.
struct LaunchResult {
  /// Ran, nothing else. User-provided on purpose, not `= default`: with a
  /// defaulted constructor `LaunchResult{}` zero-fills all 112 bytes first,
  /// and g++ 12 does that with `rep stosq`, whose start-up costs tens of
  /// cycles on the Intel hosts of the GPU machines (the plain launch()'s
  /// answer, issue 11 item 7). Written out, it is six stores: the status,
  /// three engaged flags and the vector's pointers.
  // NOLINTNEXTLINE(modernize-use-equals-default): see above.
  LaunchResult() noexcept {}

  LaunchStatus status = LaunchStatus::Ran; ///< Ran, Failed or Skipped.
  /// Failed: the launch's failure, while it still claims bytes (a failure
  /// with an empty write set, or whose every byte was reported written,
  /// leaves nothing behind and is none). Skipped: the root failure.
  std::optional<FailureId> failure;
  /// Skipped: the input whose stale bytes stopped the launch.
  std::optional<AllocationId> needed;
  /// Failed: the body's error (as stored on the failure, kernel named).
  std::optional<Error> error;
  /// N2, UnwrittenReads::Report only: the never-written bytes the launch
  /// read and ran on anyway, one entry per read binding and claimed range.
  /// Empty (no allocation) whenever the reads held no such bytes.
  std::vector<UnwrittenRead> unwritten;

  /// status == Ran.
  [[nodiscard]] bool ran() const noexcept { return status == LaunchStatus::Ran; }
};

/// What Device::submit() tells the caller: launch()'s answer, shaped for
/// the launch that ran and has nothing to report — one pointer, null then.
///
/// Why: LaunchResult is four optionals and a vector (~100 bytes); building,
/// moving and destroying it on every successful launch costs tens of
/// instructions, a measurable share of the scope's budget on the CUDA
/// backend (issue 11, item 7: 1% of a bare launch). A verdict costs a
/// null store to build and a null test to destroy. Every other answer (a
/// skip, a failure, a success with N2 unwritten reads) carries the whole
/// LaunchResult, exactly as launch() would have returned it, on the heap:
/// those paths allocate their records and messages anyway.
///
/// Move-only (it owns the details); moving leaves a plain Ran behind.
class LaunchVerdict {
 public:
  /// Ran, nothing to report. Allocation-free.
  LaunchVerdict() noexcept = default;
  /// Any answer; allocates (one LaunchResult) unless it is a bare Ran.
  explicit LaunchVerdict(LaunchResult result);

  /// Ran, Failed or Skipped.
  [[nodiscard]] LaunchStatus status() const noexcept {
    return details_ ? details_->status : LaunchStatus::Ran;
  }
  /// status() == Ran.
  [[nodiscard]] bool ran() const noexcept { return status() == LaunchStatus::Ran; }
  /// The whole answer, as launch() returns it (for a bare Ran, an empty
  /// LaunchResult). Valid while the verdict lives.
  [[nodiscard]] const LaunchResult& result() const noexcept;
  /// The whole answer, moved out; the verdict is a bare Ran after.
  [[nodiscard]] LaunchResult take();

 private:
  std::unique_ptr<LaunchResult> details_; ///< Null: a bare Ran.
};

/// One binding as a body sees it: the bytes it may touch (host address for
/// the host backend, device address for CUDA), and which allocation they
/// belong to.
struct BoundBuffer {
  AllocationId allocation; ///< Whose bytes.
  ByteRange range;         ///< Allocation-relative.
  std::byte* data;         ///< Address of the binding's first byte.
};

/// What a body sees: its inputs and outputs, in the order the launch named
/// them. Reads are const. For the CUDA backend the spans hold device
/// addresses: pass .data() to a kernel, never dereference on the host.
class KernelContext {
 public:
  /// Built by the Device for one launch: views only, no copy or allocation.
  /// Valid for the duration of the body.
  KernelContext(std::uint64_t launch, std::string_view kernel, std::span<const BoundBuffer> reads,
                std::span<const BoundBuffer> writes, void* backend_data, StreamId stream = {},
                void* stream_handle = nullptr) noexcept
      : launch_(launch)
      , kernel_(kernel)
      , reads_(reads)
      , writes_(writes)
      , backend_data_(backend_data)
      , stream_(stream)
      , stream_handle_(stream_handle) {}

  /// The launch's sequence number on its device (1, 2, 3 …): how a backend
  /// names it when it reports a failure late (LateFailure).
  [[nodiscard]] std::uint64_t launch() const noexcept { return launch_; }
  /// The launch's name, as the caller gave it.
  [[nodiscard]] std::string_view kernel() const noexcept { return kernel_; }
  /// Number of read bindings.
  [[nodiscard]] std::size_t reads() const noexcept { return reads_.size(); }
  /// Number of write bindings.
  [[nodiscard]] std::size_t writes() const noexcept { return writes_.size(); }

  /// Input `index`'s bytes. Throws std::out_of_range for a bad index.
  [[nodiscard]] std::span<const std::byte> read(std::size_t index) const {
    const BoundBuffer& buffer = at(reads_, index, "read");
    return {buffer.data, static_cast<std::size_t>(buffer.range.size())};
  }
  /// Output `index`'s bytes. Throws std::out_of_range for a bad index.
  [[nodiscard]] std::span<std::byte> write(std::size_t index) const {
    const BoundBuffer& buffer = at(writes_, index, "write");
    return {buffer.data, static_cast<std::size_t>(buffer.range.size())};
  }

  /// Input `index` as elements of T. Throws std::invalid_argument if its
  /// size or address does not fit T.
  template <class T>
  [[nodiscard]] std::span<const T> read_as(std::size_t index) const {
    const std::span<const std::byte> bytes = read(index);
    check_fits(bytes.data(), bytes.size(), sizeof(T), alignof(T));
    return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
  }
  /// Output `index` as elements of T; the same checks as read_as.
  template <class T>
  [[nodiscard]] std::span<T> write_as(std::size_t index) const {
    const std::span<std::byte> bytes = write(index);
    check_fits(bytes.data(), bytes.size(), sizeof(T), alignof(T));
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

  /// Input / output `index` with its allocation and range (for a backend, or
  /// a body that reports S2 ranges). Throws std::out_of_range for a bad index.
  [[nodiscard]] const BoundBuffer& read_binding(std::size_t index) const {
    return at(reads_, index, "read");
  }
  [[nodiscard]] const BoundBuffer& write_binding(std::size_t index) const {
    return at(writes_, index, "write");
  }

  /// Backend-specific data (Backend::backend_data()).
  [[nodiscard]] void* backend_data() const noexcept { return backend_data_; }
  /// The stream the launch runs on: its work must be queued there (the
  /// Device ordered that stream after every conflicting access, O1).
  [[nodiscard]] StreamId stream() const noexcept { return stream_; }
  /// The backend's handle of that stream (a cudaStream_t for CUDA).
  [[nodiscard]] void* stream_handle() const noexcept { return stream_handle_; }

 private:
  // The Device sets a launch plan's prebuilt context (launch_plan.hpp) to a
  // launch's number and name, in place, under its lock: two stores, not a
  // context built anew or copied.
  friend class Device;
  KernelContext& relaunch(std::uint64_t launch, std::string_view kernel) noexcept {
    launch_ = launch;
    kernel_ = kernel;
    return *this;
  }

  static const BoundBuffer& at(std::span<const BoundBuffer> buffers, std::size_t index,
                               const char* what);
  static void check_fits(const void* data, std::size_t bytes, std::size_t size,
                         std::size_t alignment);

  std::uint64_t launch_;
  std::string_view kernel_;
  std::span<const BoundBuffer> reads_;
  std::span<const BoundBuffer> writes_;
  void* backend_data_;
  StreamId stream_;
  void* stream_handle_;
};

} // namespace taintpool
