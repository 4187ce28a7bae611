// Pins: StreamModel's node of a launch (node_of), now found by searching
// its nodes, which are in host order and so ascending by launch number,
// rather than looked up in a map by launch (one allocation per launch:
// issue 13, twenty-seventh round). A launch that queued nothing has no
// node; nodes count up from 0 in the order launches ended; a launch
// numbered below one already queued is refused, since the search relies on
// the order (O1-O4 read their order from these nodes).
//
// Also pins what issue 13's thirty-fourth round made cheaper: a NodeSet
// keeps its first 64 nodes in a word of its own (the rest in a vector) and
// must answer as the plain bitset did on both sides of that line; and a
// launch's lists are refilled from the last launch's, so nothing of the
// last launch (the streams it waited for) may carry over.
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

TEST(StreamModelNodes, O1_ANodeSetHoldsAndMergesNodesOnBothSidesOfItsInlineWord) {
  NodeSet low;
  NodeSet high;
  for (const std::size_t node : {0u, 5u, 63u}) {
    low.set(node);
  }
  for (const std::size_t node : {64u, 127u, 200u}) {
    high.set(node);
  }
  EXPECT_TRUE(low.test(63));
  EXPECT_FALSE(low.test(64));
  EXPECT_FALSE(low.test(1000)); // Past every word: not there, not an error.
  EXPECT_FALSE(high.test(0));
  EXPECT_TRUE(high.test(64));
  EXPECT_FALSE(high.test(65));
  EXPECT_TRUE(high.test(200));
  low.merge(high);
  for (std::size_t node = 0; node < 260; ++node) {
    const bool in =
        node == 0 || node == 5 || node == 63 || node == 64 || node == 127 || node == 200;
    EXPECT_EQ(low.test(node), in) << node;
  }
  high.merge(NodeSet()); // A shorter set leaves the longer one as it was.
  EXPECT_TRUE(high.test(200));
  EXPECT_FALSE(high.test(0));
}

TEST(StreamModelNodes, O2_ALaunchMayWaitOnceForAStreamTheLaunchBeforeItWaitedForToo) {
  StreamModel model(false);
  model.create_stream(1);
  const AllocationId buffer = AllocationId::from_raw(1);
  model.created(buffer, 8, 0);
  const Binding bytes{buffer, ByteRange::of(0, 8)};
  const std::span<const Binding> none;
  const std::span<const Binding> one(&bytes, 1);
  int first_event = 0;
  int second_event = 0;
  // Launch 1 writes the buffer on stream 0; launch 2 reads it on stream 1,
  // waiting once for stream 0.
  (void)model.begin(0, 1, none, one);
  EXPECT_EQ(model.end(true), std::nullopt);
  model.recorded(&first_event, 0);
  EXPECT_FALSE(model.begin(1, 2, one, none).empty());
  EXPECT_EQ(model.waited(1, &first_event), std::nullopt);
  EXPECT_EQ(model.end(true), std::nullopt);
  // Launch 3 writes it again on stream 0, waiting for the read; launch 4
  // reads it on stream 1: a first wait of its own for stream 0, however
  // launch 2 waited.
  int read_event = 0;
  model.recorded(&read_event, 1);
  (void)model.begin(0, 3, none, one);
  EXPECT_EQ(model.waited(0, &read_event), std::nullopt);
  EXPECT_EQ(model.end(true), std::nullopt);
  model.recorded(&second_event, 0);
  EXPECT_FALSE(model.begin(1, 4, one, none).empty());
  EXPECT_EQ(model.waited(1, &second_event), std::nullopt);
  EXPECT_EQ(model.end(true), std::nullopt);
}

TEST(StreamModelNodes, O1_ALaunchQueuedAfterAHigherNumberedOneIsRefused) {
  StreamModel model(false);
  run(model, 0, 5, true);
  (void)model.begin(0, 4, std::span<const Binding>(), std::span<const Binding>());
  EXPECT_THROW((void)model.end(true), std::logic_error);
}

} // namespace
} // namespace taintpool::model
