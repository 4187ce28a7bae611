#include <taintpool/stream/queue_backend.hpp>
#include <taintpool/stream/stream_id.hpp>

#include <ostream>

namespace taintpool {

// The synchronous defaults: work completes as it is queued, so a stream is
// only a name, every event is born complete and a wait orders nothing that
// is not already done. Tokens are distinct non-null words; nothing reads
// through them.

namespace {
void* token(std::uintptr_t value) noexcept {
  return reinterpret_cast<void*>(value); // NOLINT(performance-no-int-to-ptr)
}
} // namespace

StreamHandle QueueBackend::default_stream() noexcept {
  return token(1);
}

StreamHandle QueueBackend::create_stream() {
  next_stream_token_ += 1;
  return token(next_stream_token_);
}

void QueueBackend::destroy_stream(StreamHandle /*stream*/) noexcept {
}

EventHandle QueueBackend::record(StreamHandle /*stream*/) {
  return token(1);
}

void QueueBackend::wait(StreamHandle /*waiter*/, EventHandle /*event*/) {
}

bool QueueBackend::done(EventHandle /*event*/) noexcept {
  return true;
}

void QueueBackend::release(EventHandle /*event*/) noexcept {
}

void QueueBackend::finish(StreamHandle /*stream*/) {
}

bool QueueBackend::synchronous() const noexcept {
  return true;
}

std::string to_string(StreamId stream) {
  return "stream " + std::to_string(stream.number());
}

std::ostream& operator<<(std::ostream& out, StreamId stream) {
  return out << to_string(stream);
}

} // namespace taintpool
