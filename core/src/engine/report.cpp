#include <taintpool/report.hpp>

#include <ostream>

namespace taintpool {

std::string to_string(const Report& report) {
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
