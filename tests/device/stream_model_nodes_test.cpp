// Pins: StreamModel's node of a launch (node_of), now found by searching
// its nodes, which are in host order and so ascending by launch number,
// rather than looked up in a map by launch (one allocation per launch:
// issue 13, twenty-seventh round). A launch that queued nothing has no
// node; nodes count up from 0 in the order launches ended; a launch
// numbered below one already queued is refused, since the search relies on
// the order (O1-O4 read their order from these nodes).
#include <taintpool/model/stream_model.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>

namespace taintpool::model {
namespace {

void run(StreamModel& model, std::uint32_t stream, std::uint64_t launch, bool queued) {
  (void)model.begin(stream, launch, std::span<const Binding>(), std::span<const Binding>());
  (void)model.end(queued);
}

TEST(StreamModelNodes, O1_ALaunchsNodeIsFoundByItsNumberAndASkippedLaunchHasNone) {
  StreamModel model(false);
  model.create_stream(1);
  run(model, 0, 1, true);
  run(model, 1, 2, false); // Skipped: no node.
  run(model, 1, 3, true);
  for (std::uint64_t launch = 4; launch < 200; ++launch) {
    run(model, static_cast<std::uint32_t>(launch % 2), launch, launch % 3 != 0);
  }
  EXPECT_EQ(model.node_of(0), std::nullopt);
  EXPECT_EQ(model.node_of(1), std::optional<std::size_t>(0));
  EXPECT_EQ(model.node_of(2), std::nullopt);
  EXPECT_EQ(model.node_of(3), std::optional<std::size_t>(1));
  std::size_t expected = 2;
  for (std::uint64_t launch = 4; launch < 200; ++launch) {
    if (launch % 3 != 0) {
      EXPECT_EQ(model.node_of(launch), std::optional<std::size_t>(expected)) << launch;
      EXPECT_EQ(model.stream_of(expected), launch % 2) << launch;
      ++expected;
    } else {
      EXPECT_EQ(model.node_of(launch), std::nullopt) << launch;
    }
  }
  EXPECT_EQ(model.nodes(), expected);
  EXPECT_EQ(model.node_of(200), std::nullopt);
}

TEST(StreamModelNodes, O1_ALaunchQueuedAfterAHigherNumberedOneIsRefused) {
  StreamModel model(false);
  run(model, 0, 5, true);
  (void)model.begin(0, 4, std::span<const Binding>(), std::span<const Binding>());
  EXPECT_THROW((void)model.end(true), std::logic_error);
}

} // namespace
} // namespace taintpool::model
