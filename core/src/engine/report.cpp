#include <taintpool/report.hpp>

#include <ostream>

namespace taintpool {

namespace {

/// N3: the words for bytes the NeverWritten failure claims — the read's own
/// bytes when it claims them directly, else the origin's, at the path's end.
/// The root's message is the creating site, when the creator gave one.
std::string never_written(const Report& report) {
  const std::string site =
      report.root.message().empty() ? std::string() : " (" + report.root.message() + ")";
  if (report.path.empty()) {
    std::string text = to_string(report.read);
    text += report.stale ? " bytes " + to_string(*report.stale) + " were" : " was";
    return text + " never written since it was created" + site;
  }
  std::string text = to_string(report.read);
  if (report.stale) {
    text += " bytes " + to_string(*report.stale);
  }
  text += " cannot be read: " + to_string(report.failure) + " (" +
          std::string(name(report.root.kind())) + ")";
  for (const SkipRecord& step : report.path) {
    text += "\n  " + step.kernel +
            (step.took_part ? " took part with never-written bytes of "
             : step.ran     ? " ran on never-written bytes of "
                            : " was skipped: it needed ") +
            to_string(step.needed);
  }
  text += "\n  " + to_string(report.origin) + " was never written since it was created" + site;
  if (report.path_may_be_incomplete) {
    text += "\n  (" + std::to_string(report.skips_recorded) +
            " skips were recorded and only the newest are kept: the path may begin earlier)";
  }
  return text;
}

} // namespace

std::string to_string(const Report& report) {
  if (report.root.kind() == ErrorKind::NeverWritten) {
    return never_written(report);
  }
  std::string text = to_string(report.read);
  if (report.stale) {
    text += " bytes " + to_string(*report.stale);
  }
  text += " cannot be read: " + to_string(report.failure) + " (" + to_string(report.root) + ")";
  for (const SkipRecord& step : report.path) {
    if (step.took_part) {
      text += "\n  " + step.kernel + " took part with stale bytes of " + to_string(step.needed) +
              " (a collective runs on every rank)";
      continue;
    }
    text += "\n  " + step.kernel +
            (step.ran ? " ran on stale bytes of " : " was skipped: it needed ") +
            to_string(step.needed) + (step.ran ? " before the failure was known" : "");
  }
  text += "\n  " + to_string(report.origin) + " was left unwritten by " + to_string(report.failure);
  if (report.path_may_be_incomplete) {
    text += "\n  (" + std::to_string(report.skips_recorded) +
            " skips were recorded and only the newest are kept: the path may begin earlier)";
  }
  return text;
}

std::ostream& operator<<(std::ostream& out, const Report& report) {
  return out << to_string(report);
}

} // namespace taintpool
