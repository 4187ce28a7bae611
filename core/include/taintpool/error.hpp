// Error: what a failure means, as the graph stores it and a report prints it.
//
// An Error is a kind plus a human message. The kind is what code branches on
// (an OutOfMemory is retried after a cleanup, a TornDown is never seen by a
// well-behaved caller); the message is what a person acts on, so producers
// put every fact they have into it (kernel, allocation, byte range, sizes).
//
// Cost: one byte of kind plus one std::string. Error::torn_down() — the
// provisional failure every write scope mints (§3.5, S1) — carries no message
// and so constructs, moves and destroys without touching the heap; that is
// part of the G10 zero-allocation success path.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace taintpool {

/// What kind of trouble a failure is: the part of an Error code branches on.
/// One byte, so an Error stays a string and a tag.
enum class ErrorKind : std::uint8_t {
  Generic,        ///< Anything without a more specific kind.
  Launch,         ///< A kernel failed to launch or reported failure.
  OutOfMemory,    ///< A storage could not provide memory (P3).
  BufferTooBig,   ///< No pool can ever hold the requested size (P3).
  TornDown,       ///< Provisional: a write scope was entered and never finished (S1, S3).
  Unwritten,      ///< A read found bytes with no successful writer (D1).
  Skipped,        ///< A launch did not run because an input was stale (S1). The core
                  ///< never stores it: a skip carries its root's error (S4).
  NotFound,       ///< A named allocation or failure no longer exists.
  InvalidBinding, ///< A binding reaches past its allocation, or names none (P3).
  Race,           ///< Detect mode: two accesses on different streams conflicted with
                  ///< nothing ordering them; the reader's outputs are suspect (O4).
  Remote,         ///< A collective computed these bytes from bytes another rank said
                  ///< were stale; the message names the rank and its root (C4).
  Communicator,   ///< A collective could not complete: a peer failed, or did not take
                  ///< part within the timeout; the communicator is broken (C6).
  NeverWritten,   ///< N1: fresh bytes nobody has written since their allocation was made
                  ///< (FreshBytes::NeverWritten only). Unlike Unwritten — what a *read*
                  ///< throws when it finds stale bytes of any cause — this is a root
                  ///< failure: the one node that claims a manager's never-written bytes.
};

/// The lower-case name of a kind, as printed: "out of memory", "torn down"...
[[nodiscard]] std::string_view name(ErrorKind kind) noexcept;

/// A kind plus a message: what a failure node stores (G4, G6) and what a
/// Report copies out, so a report outlives the node it came from.
class Error {
 public:
  /// Moves `message` in; never throws (moving a std::string never allocates).
  Error(ErrorKind kind, std::string message) noexcept
      : message_(std::move(message))
      , kind_(kind) {}

  /// One named constructor per kind, so a producer states the kind at the
  /// call site. Each moves the message in: no copy beyond the caller's.
  [[nodiscard]] static Error generic(std::string message) {
    return {ErrorKind::Generic, std::move(message)};
  }
  [[nodiscard]] static Error launch(std::string message) {
    return {ErrorKind::Launch, std::move(message)};
  }
  [[nodiscard]] static Error out_of_memory(std::string message) {
    return {ErrorKind::OutOfMemory, std::move(message)};
  }
  [[nodiscard]] static Error buffer_too_big(std::string message) {
    return {ErrorKind::BufferTooBig, std::move(message)};
  }
  [[nodiscard]] static Error not_found(std::string message) {
    return {ErrorKind::NotFound, std::move(message)};
  }
  [[nodiscard]] static Error invalid_binding(std::string message) {
    return {ErrorKind::InvalidBinding, std::move(message)};
  }
  [[nodiscard]] static Error race(std::string message) {
    return {ErrorKind::Race, std::move(message)};
  }
  [[nodiscard]] static Error remote(std::string message) {
    return {ErrorKind::Remote, std::move(message)};
  }
  [[nodiscard]] static Error communicator(std::string message) {
    return {ErrorKind::Communicator, std::move(message)};
  }

  /// N1: the one failure that claims a manager's never-written bytes.
  /// Payload-free, like torn_down(): minting it never touches the heap.
  [[nodiscard]] static Error never_written() noexcept { return Error(ErrorKind::NeverWritten); }

  /// The provisional failure of a write scope. Payload-free: no allocation.
  [[nodiscard]] static Error torn_down() noexcept { return Error(ErrorKind::TornDown); }

  /// What code branches on.
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  /// What a person acts on; empty for the payload-free torn_down().
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

  /// Same kind and same message.
  friend bool operator==(const Error&, const Error&) = default;

 private:
  /// A payload-free error, built in place: the message starts empty rather
  /// than moved from an empty temporary (each such move copies the inline
  /// buffer, a checked memcpy under AddressSanitizer). The error graph
  /// builds a TornDown error for every slot its table grows by and every
  /// node it moves or vacates (issue 13, forty-third round).
  explicit Error(ErrorKind kind) noexcept
      : kind_(kind) {}

  std::string message_;
  ErrorKind kind_;
};

/// "out of memory: <message>", or just the kind's name when the message is
/// empty ("torn down").
[[nodiscard]] std::string to_string(const Error& error);
/// Writes to_string(error).
std::ostream& operator<<(std::ostream& out, const Error& error);

} // namespace taintpool
