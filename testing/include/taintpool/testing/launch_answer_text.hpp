// launch_answer_text.hpp: a LaunchResult as one line of text — everything a
// user can see of a launch's answer — for tests that compare two ways of
// launching (plain against planned, launch() against submit()).
//
// Why text: a differential test compares transcripts of many answers, and a
// mismatch must name the field that differs; one string per answer makes
// gtest print both sides whole. Why shared: the comparisons only mean
// something if every one looks at the same fields, so a field added to
// LaunchResult is added here once (review leftover of issue 11, item 7).
//
// What it covers: the status, the failure and the failure it needed (S1,
// G8), the error's kind and message (G4), and every unwritten read (N2).
// Cost: allocates the string; for tests only. Header only, no state.
#pragma once

#include <taintpool/device/device.hpp>

#include <string>

namespace taintpool::testing {

/// Every field a user sees of `result`, in a fixed order, as text.
inline std::string describe(const LaunchResult& result) {
  std::string text = "status " + std::to_string(static_cast<int>(result.status));
  text += " failure " + (result.failure ? to_string(*result.failure) : std::string("-"));
  text += " needed " + (result.needed ? to_string(*result.needed) : std::string("-"));
  text += " error " + (result.error
                           ? std::string(name(result.error->kind())) + ":" + result.error->message()
                           : std::string("-"));
  for (const UnwrittenRead& read : result.unwritten) {
    text += " unwritten " + to_string(read.allocation) + " " + to_string(read.bytes);
  }
  return text;
}

} // namespace taintpool::testing
