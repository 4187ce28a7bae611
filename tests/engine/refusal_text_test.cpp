// Pins the engine's contract violations and bad ranges word for word: what
// a person reads when a failure with no node is tagged, untagged, skipped
// through or reported, when an untag has no tag to take, or when a range is
// inverted or overflows. The texts are built in one reserved string each
// (issue 13, twenty-ninth round); these expectations were written against
// the operator+ chains that came before and pass on both, so the rewrite
// changed no word. bad_input_test.cpp pins that each changes nothing.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace taintpool {
namespace {

/// what() of the E `fn` throws; a failure of the test, and no text, when
/// it throws none.
template <class E, class Fn>
std::string text_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "nothing of the expected type was thrown";
  return {};
}

TEST(RefusalText, G2_G3_G7_G8_AFailureWithNoNodeIsRefusedInTheseWords) {
  ErrorGraph graph;
  const FailureId gone = FailureId::from_raw(12345678901234567890ULL);
  EXPECT_EQ(text_of<std::logic_error>([&] { graph.tag(gone); }),
            "ErrorGraph::tag: failure 12345678901234567890 has no node (R2: a claim or skip must "
            "point at a live failure)");
  EXPECT_EQ(text_of<std::logic_error>([&] {
              graph.skipped(gone, {"linear", AllocationId::from_raw(1), {}});
            }),
            "ErrorGraph::skipped: failure 12345678901234567890 has no node (R2: a claim or skip "
            "must point at a live failure)");
  EXPECT_EQ(text_of<std::logic_error>([&] { graph.untag(gone); }),
            "ErrorGraph::untag: failure 12345678901234567890 has no node (R2: untag of a failure "
            "no carrier holds)");
  EXPECT_EQ(text_of<std::logic_error>(
                [&] { static_cast<void>(graph.report(gone, AllocationId::from_raw(1))); }),
            "ErrorGraph::report: failure 12345678901234567890 has no node; only a live failure "
            "can explain a read (G8)");
}

TEST(RefusalText, G3_AnUntagWithoutAMatchingTagIsRefusedInTheseWords) {
  ErrorGraph graph;
  const FailureId held = graph.insert(Error::generic("held"));
  EXPECT_EQ(text_of<std::logic_error>([&] { graph.untag(held); }),
            "ErrorGraph::untag: failure 1 has no tags left (an untag without a matching tag)");
  graph.prune(held);
}

TEST(RefusalText, T1_ABadRangeIsRefusedInTheseWords) {
  EXPECT_EQ(text_of<std::invalid_argument>(
                [] { static_cast<void>(ByteRange::of(UINT64_MAX, UINT64_MAX - 1)); }),
            "byte range begins after it ends: begin 18446744073709551615 > end "
            "18446744073709551614");
  EXPECT_EQ(text_of<std::overflow_error>(
                [] { static_cast<void>(ByteRange::sized(UINT64_MAX, UINT64_MAX)); }),
            "byte range overflows 64 bits: offset 18446744073709551615 + size "
            "18446744073709551615 > 2^64 - 1");
}

} // namespace
} // namespace taintpool
