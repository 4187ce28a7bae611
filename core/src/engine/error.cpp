#include <taintpool/error.hpp>

#include <ostream>

#include "words.hpp"

namespace taintpool {

std::string_view name(ErrorKind kind) noexcept {
  switch (kind) {
  case ErrorKind::Generic:
    return "error";
  case ErrorKind::Launch:
    return "launch failed";
  case ErrorKind::OutOfMemory:
    return "out of memory";
  case ErrorKind::BufferTooBig:
    return "buffer too big";
  case ErrorKind::TornDown:
    return "torn down";
  case ErrorKind::Unwritten:
    return "unwritten";
  case ErrorKind::Skipped:
    return "skipped";
  case ErrorKind::NotFound:
    return "not found";
  case ErrorKind::InvalidBinding:
    return "invalid binding";
  case ErrorKind::Race:
    return "race";
  case ErrorKind::Remote:
    return "stale on another rank";
  case ErrorKind::Communicator:
    return "communicator failed";
  case ErrorKind::NeverWritten:
    return "never written";
  }
  return "unknown error kind";
}

std::string to_string(const Error& error) {
  // Sized once: Exception's what() is this text, so every refusal builds
  // it; appended piecewise it grew twice for a long message.
  std::string text;
  text.reserve(name(error.kind()).size() + 2 + error.message().size());
  words::append(text, error);
  return text;
}

std::ostream& operator<<(std::ostream& out, const Error& error) {
  return out << to_string(error);
}

} // namespace taintpool
