#include <taintpool/report.hpp>

#include <ostream>

#include "words.hpp"

namespace taintpool {

namespace {

// The printer appends every word into one string, sized once from what the
// report holds. It used to join temporaries (operator+ chains, a
// to_string() per id and range): a dozen allocations for a short report and
// more per step, where one suffices. A report is printed where a person will
// read it, but taint_fuzzer prints every report its report op makes (the
// printer must hold up on every walk), and under the sanitizers those
// temporaries were a tenth of its allocations (issue 13, twenty-fourth
// round). The words are those of to_string(FailureId), to_string(AllocationId),
// to_string(ByteRange) and to_string(Error): the same appends (words.hpp),
// pinned word for word by tests/engine/report_text_test.cpp.

using words::append;

/// Room for the whole text, so it is allocated once: the fixed words with
/// the widest numbers (a headline of at most 170 bytes, an origin line of
/// 100, the cap's note 100), each step's kernel plus at most 110, and the
/// root's message, which may appear twice (N3's site). Appends past it
/// would still work; tests/engine/steady_state_alloc_test.cpp counts one
/// allocation for the widest report.
std::size_t room_for(const Report& report) {
  std::size_t room = 384 + 2 * report.root.message().size();
  for (const SkipRecord& step : report.path) {
    room += step.kernel.size() + 112;
  }
  return room;
}

/// The read, with its stale bytes when the caller knows them.
void append_read(std::string& text, const Report& report) {
  append(text, report.read);
  if (report.stale) {
    text += " bytes ";
    append(text, *report.stale);
  }
}

void append_cap_note(std::string& text, const Report& report) {
  if (report.path_may_be_incomplete) {
    text += "\n  (";
    words::append_number(text, report.skips_recorded);
    text += " skips were recorded and only the newest are kept: the path may begin earlier)";
  }
}

/// N3: the words for bytes the NeverWritten failure claims — the read's own
/// bytes when it claims them directly, else the origin's, at the path's end.
/// The root's message is the creating site, when the creator gave one.
std::string never_written(const Report& report) {
  std::string text;
  text.reserve(room_for(report));
  const auto append_site = [&] {
    if (!report.root.message().empty()) {
      text += " (";
      text += report.root.message();
      text += ')';
    }
  };
  if (report.path.empty()) {
    append_read(text, report);
    text += report.stale ? " were" : " was";
    text += " never written since it was created";
    append_site();
    return text;
  }
  append_read(text, report);
  text += " cannot be read: ";
  append(text, report.failure);
  text += " (";
  text += name(report.root.kind());
  text += ')';
  for (const SkipRecord& step : report.path) {
    text += "\n  ";
    text += step.kernel;
    text += step.took_part ? " took part with never-written bytes of "
            : step.ran     ? " ran on never-written bytes of "
                           : " was skipped: it needed ";
    append(text, step.needed);
  }
  text += "\n  ";
  append(text, report.origin);
  text += " was never written since it was created";
  append_site();
  append_cap_note(text, report);
  return text;
}

} // namespace

std::string to_string(const Report& report) {
  if (report.root.kind() == ErrorKind::NeverWritten) {
    return never_written(report);
  }
  std::string text;
  text.reserve(room_for(report));
  append_read(text, report);
  text += " cannot be read: ";
  append(text, report.failure);
  text += " (";
  append(text, report.root);
  text += ')';
  for (const SkipRecord& step : report.path) {
    text += "\n  ";
    text += step.kernel;
    if (step.took_part) {
      text += " took part with stale bytes of ";
      append(text, step.needed);
      text += " (a collective runs on every rank)";
      continue;
    }
    text += step.ran ? " ran on stale bytes of " : " was skipped: it needed ";
    append(text, step.needed);
    if (step.ran) {
      text += " before the failure was known";
    }
  }
  text += "\n  ";
  append(text, report.origin);
  text += " was left unwritten by ";
  append(text, report.failure);
  append_cap_note(text, report);
  return text;
}

std::ostream& operator<<(std::ostream& out, const Report& report) {
  return out << to_string(report);
}

} // namespace taintpool
