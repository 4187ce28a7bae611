// OpLog: the ops a harness ran, as text for a failure report — text built
// only when a failure is being reported.
//
// Why it is shaped so: a failure report names the op that broke a rule and
// the ops before it, but a passing run (all but one in millions) never
// prints them, and formatting every op — bindings, plans, ranges — cost a
// large share of each run (issue 13). Runs are deterministic (the input
// fixes every choice, the injected allocation faults included), so a
// harness runs an input with its log `quiet`: it only counts the entries.
// When a check fails, the harness runs the same input again in a fresh
// harness with the log describing; that run fails at the same check and
// reports with the full history. Should it not fail again (a nondeterminism
// bug in the harness), the first failure is still reported, with a line that
// says so — a check never passes because its history was not written.
//
// Cost on a passing run: one counter increment per entry; the callable that
// would build the text is never called.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace taintpool::fuzz {

class OpLog {
 public:
  /// `describing`: keep every entry's text (a re-run for a failure report),
  /// or only count them.
  explicit OpLog(bool describing)
      : describing_(describing) {}

  [[nodiscard]] bool describing() const noexcept { return describing_; }

  /// Adds an entry: `text` is a string, or a callable returning one (called
  /// only when describing).
  template <class Text>
  void add(Text&& text) {
    ++count_;
    if (describing_) {
      if constexpr (std::is_invocable_v<Text>) {
        lines_.emplace_back(std::forward<Text>(text)());
      } else {
        lines_.emplace_back(std::forward<Text>(text));
      }
    }
  }

  /// Entries added, described or not.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }

  /// The last `last` entries, one per line, numbered ("  #n text"); when not
  /// describing, a line saying there is no text.
  [[nodiscard]] std::string tail(std::size_t last) const {
    if (!describing_) {
      return "  (" + std::to_string(count_) + " entries, not described)\n";
    }
    std::string text;
    const std::size_t first = lines_.size() > last ? lines_.size() - last : 0;
    for (std::size_t at = first; at < lines_.size(); ++at) {
      text += "  #" + std::to_string(at) + " " + lines_[at] + "\n";
    }
    return text;
  }

 private:
  bool describing_;
  std::size_t count_ = 0;
  std::vector<std::string> lines_;
};

/// What a quiet harness's context says after its describing re-run came
/// back without failing (the re-run's own failure aborts before this).
inline std::string rerun_did_not_fail() {
  return "(the input was run again with every op described, and that run passed: the failure "
         "above did not recur, so the harness is not deterministic — report it)\n";
}

} // namespace taintpool::fuzz
