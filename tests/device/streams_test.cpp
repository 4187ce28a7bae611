// Pins: the stream rules by name — O1 conflicting accesses on different
// streams run in host order, O2 one wait per source stream and none for
// disjoint bytes, O3 stream-ordered reuse (lanes and pins), O4 detect mode,
// O5 many threads — plus S6 (a launch that ran but wrote only some bytes).
//
// Why on DeferredHostBackend: its streams are real queues run in a random
// interleaving the waits allow, so a missing wait shows up as wrong bytes.
// Each ordering test runs its program under many seeds and checks the bytes
// against the sequential program; one test first shows that, without the
// Device's waits, the same queues do produce wrong bytes under some seed —
// so the others could fail.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/fault_injecting_storage.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>
#include <taintpool/stream/stream_table.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "deferred_work.hpp"

namespace taintpool {
namespace {

constexpr std::uint64_t kSeeds = 64;

using test::add_later;
using test::bytes_of;
using test::fill_later;

std::vector<std::byte> read_ok(Device& device, const Binding& binding) {
  std::vector<std::byte> out(static_cast<std::size_t>(binding.range.size()));
  const ReadOutcome outcome = device.read(binding, out);
  EXPECT_TRUE(outcome.ok()) << to_string(outcome);
  return out;
}

// ------------------------------------------------------------ O1, O2

TEST(Streams, O1_WithoutWaitsTheQueuesDoRunOutOfHostOrderUnderSomeSeed) {
  // The harness can fail: the same two queues, no wait, give the reader
  // stale bytes under at least one seed.
  bool saw_stale = false;
  for (std::uint64_t seed = 0; seed < kSeeds && !saw_stale; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    const StreamHandle a = backend.default_stream();
    const StreamHandle b = backend.create_stream();
    std::byte x{0};
    std::byte y{0};
    backend.enqueue(a, [] {});
    backend.enqueue(a, [&] { x = std::byte{7}; });
    backend.enqueue(b, [&] { y = x; });
    backend.run_all();
    saw_stale = y != std::byte{7};
  }
  EXPECT_TRUE(saw_stale);
}

TEST(Streams, O1_AReadOnAnotherStreamWaitsForItsWriterUnderEveryInterleaving) {
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend);
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(64);
    Allocation y = device.create_buffer(64, side);
    ASSERT_TRUE(device.launch("fill x", {}, {x.whole()}, fill_later(backend, 5)).ran());
    ASSERT_TRUE(
        device.launch(side, "y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    EXPECT_EQ(read_ok(device, y.whole()), bytes_of(64, 6)) << "seed " << seed;
    EXPECT_EQ(device.stream_stats().waits_inserted, 1u);
    device.check_invariants();
  }
}

TEST(Streams, O1_AWriteOnAnotherStreamWaitsForEarlierReaders) {
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend);
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(32);
    Allocation y = device.create_buffer(32);
    device.write(x.whole(), bytes_of(32, 10));
    ASSERT_TRUE(device.launch("y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    // Overwrites what the default stream may still be reading.
    ASSERT_TRUE(device.launch(side, "refill x", {}, {x.whole()}, fill_later(backend, 99)).ran());
    EXPECT_EQ(read_ok(device, y.whole()), bytes_of(32, 11)) << "seed " << seed;
    EXPECT_EQ(read_ok(device, x.whole()), bytes_of(32, 99)) << "seed " << seed;
    EXPECT_EQ(device.stream_stats().waits_inserted, 1u) << "write after read, once";
  }
}

TEST(Streams, O1_ACrossingLaunchThatFailsThrowsOrNamesItsWritesStillHoldsOffALaterWriter) {
  // The body queues its read of x on the side stream and then ends badly:
  // its read is work all the same (S3), so the default stream's later
  // refill of x must wait for it under every interleaving (write after
  // read). The launch reads x across streams with every binding clean, the
  // flat path's ordered case; these are its three cold ends.
  enum class End { Fails, Throws, NamesNoWrite };
  for (const End end : {End::Fails, End::Throws, End::NamesNoWrite}) {
    for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
      DeferredHostBackend backend;
      backend.set_seed(seed);
      Device device(backend);
      const StreamId side = device.create_stream();
      Allocation x = device.create_buffer(32);
      Allocation y = device.create_buffer(32, side);
      device.write(x.whole(), bytes_of(32, 10));
      auto seen = std::make_shared<std::vector<std::byte>>();
      auto read_then_end = [&backend, seen, end](const KernelContext& context) {
        const std::span<const std::byte> in = context.read(0);
        backend.enqueue(context, [in, seen] { seen->assign(in.begin(), in.end()); });
        if (end == End::Throws) {
          throw std::runtime_error("the body threw after queueing its read");
        }
        if (end == End::Fails) {
          return LaunchOutcome::failure(Error::launch("the body failed after its read"));
        }
        return LaunchOutcome::wrote_only({});
      };
      if (end == End::Throws) {
        EXPECT_THROW(static_cast<void>(
                         device.launch(side, "read x", {x.whole()}, {y.whole()}, read_then_end)),
                     std::runtime_error);
      } else {
        static_cast<void>(device.launch(side, "read x", {x.whole()}, {y.whole()}, read_then_end));
      }
      ASSERT_TRUE(device.launch("refill x", {}, {x.whole()}, fill_later(backend, 99)).ran());
      EXPECT_EQ(read_ok(device, x.whole()), bytes_of(32, 99));
      EXPECT_EQ(*seen, bytes_of(32, 10)) << "seed " << seed << ", end " << static_cast<int>(end);
      EXPECT_EQ(device.stream_stats().waits_inserted, 1u)
          << "the refill after the read (x's host write was complete before it)";
      device.check_invariants();
    }
  }
}

TEST(Streams, O2_LaunchesOnDisjointBytesOfOneBufferNeverWait) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(128);
  ASSERT_TRUE(device.launch("low half", {}, {x.bind(0, 64)}, fill_later(backend, 1)).ran());
  ASSERT_TRUE(device.launch(side, "high half", {}, {x.bind(64, 64)}, fill_later(backend, 2)).ran());
  ASSERT_TRUE(device
                  .launch(side, "high half again", {x.bind(64, 64)}, {x.bind(64, 64)},
                          fill_later(backend, 3))
                  .ran());
  EXPECT_EQ(device.stream_stats().waits_inserted, 1u)
      << "only the first touch of the default stream's buffer from the side stream orders it "
         "after the default stream's tail (the buffer's memory may be reused from there, O3)";
  Allocation y = device.create_buffer(128, side);
  ASSERT_TRUE(device.launch(side, "y low", {}, {y.bind(0, 64)}, fill_later(backend, 4)).ran());
  const std::uint64_t before = device.stream_stats().waits_inserted;
  ASSERT_TRUE(device.launch("y high", {}, {y.bind(64, 64)}, fill_later(backend, 5)).ran());
  ASSERT_TRUE(
      device.launch("y high + 1", {y.bind(64, 64)}, {x.bind(0, 64)}, fill_later(backend, 6)).ran());
  EXPECT_EQ(device.stream_stats().waits_inserted, before + 1)
      << "the default stream waits once for the side stream's tail (its first touch of y), and "
         "not again for bytes the side stream never wrote since";
  std::vector<std::byte> expected = bytes_of(64, 6);
  EXPECT_EQ(read_ok(device, x.bind(0, 64)), expected);
  EXPECT_EQ(read_ok(device, x.bind(64, 64)), bytes_of(64, 3));
}

TEST(Streams, O2_OneWaitPerSourceStreamHoweverManyBuffersItWrote) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  Allocation a = device.create_buffer(16);
  Allocation b = device.create_buffer(16);
  Allocation c = device.create_buffer(16, side);
  ASSERT_TRUE(device.launch("fill a", {}, {a.whole()}, fill_later(backend, 1)).ran());
  ASSERT_TRUE(device.launch("fill b", {}, {b.whole()}, fill_later(backend, 2)).ran());
  ASSERT_TRUE(
      device.launch(side, "c = a + b", {a.whole(), b.whole()}, {c.whole()}, fill_later(backend, 3))
          .ran());
  EXPECT_EQ(device.stream_stats().waits_inserted, 1u);
  EXPECT_EQ(device.stream_stats().events_recorded, 1u);
  ASSERT_TRUE(
      device.launch(side, "c again", {a.whole(), b.whole()}, {c.whole()}, fill_later(backend, 3))
          .ran());
  EXPECT_EQ(device.stream_stats().waits_inserted, 1u) << "already ordered: no second wait";
}

TEST(Streams, O2_OrderingIsTransitiveThroughAChainOfWaits) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId one = device.create_stream();
  const StreamId two = device.create_stream();
  Allocation x = device.create_buffer(16);
  Allocation y = device.create_buffer(16, one);
  Allocation z = device.create_buffer(16, two);
  ASSERT_TRUE(device.launch("x", {}, {x.whole()}, fill_later(backend, 1)).ran());
  ASSERT_TRUE(
      device.launch(one, "y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
  ASSERT_TRUE(
      device.launch(two, "z = y + 1", {y.whole()}, {z.whole()}, add_later(backend, 1)).ran());
  const std::uint64_t before = device.stream_stats().waits_inserted;
  // x was written on the default stream, before what stream one waited
  // for, which stream two waited for: no wait.
  ASSERT_TRUE(
      device.launch(two, "z = x + 1", {x.whole()}, {z.whole()}, add_later(backend, 1)).ran());
  EXPECT_EQ(device.stream_stats().waits_inserted, before);
  EXPECT_EQ(read_ok(device, z.whole()), bytes_of(16, 2));
}

TEST(Streams, O1_HostWritesAndReadsOnAStreamAreOrderedLikeLaunches) {
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend);
    const StreamId side = device.create_stream();
    // x's bytes are set first: fresh memory holds whatever its page held
    // (here, often the 50 an earlier seed wrote), which is no evidence.
    const Allocation x = device.create_buffer(bytes_of(8, 10));
    Allocation y = device.create_buffer(8);
    device.write(x.whole(), bytes_of(8, 10)); // Fresh memory may hold anything (D1).
    ASSERT_TRUE(device.launch("y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    device.write(side, x.whole(), bytes_of(8, 50)); // Must not land before the read of x.
    std::vector<std::byte> out(8);
    ASSERT_TRUE(device.read(side, y.whole(), out).ok());
    EXPECT_EQ(out, bytes_of(8, 11)) << "seed " << seed;
  }
}

// ------------------------------------------------------------ O3

TEST(Streams, O3_MemoryOneStreamUsedIsReusedAtOnceByThatStreamAndByNoOther) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  const std::byte* first = nullptr;
  {
    Allocation x = device.create_buffer(4096);
    ASSERT_TRUE(device.launch("x", {}, {x.whole()}, fill_later(backend, 1)).ran());
    device.memory().for_each_allocation([&](const AllocationInfo& info) { first = info.data; });
  }
  Allocation on_side = device.create_buffer(4096, side);
  const std::byte* side_address = nullptr;
  device.memory().for_each_allocation([&](const AllocationInfo& info) {
    if (info.id == on_side.id()) {
      side_address = info.data;
    }
  });
  EXPECT_NE(side_address, first) << "another stream's lane";
  Allocation again = device.create_buffer(4096);
  const std::byte* again_address = nullptr;
  device.memory().for_each_allocation([&](const AllocationInfo& info) {
    if (info.id == again.id()) {
      again_address = info.data;
    }
  });
  EXPECT_EQ(again_address, first) << "the same stream reuses it at once";
  EXPECT_GT(backend.pending(), 0u) << "without waiting for the queued fill";
}

TEST(Streams, O3_ABufferASideStreamWroteIsHeldUntilThatWorkCompletes_Pytorch188655) {
  // The pattern of pytorch/pytorch#188655: a side-stream copy into a buffer
  // of the main stream, the buffer dropped, a new allocation on the main
  // stream. The new allocation must not get the memory the copy may still
  // be writing; the bytes read back must be the right ones.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend);
    const StreamId side = device.create_stream();
    Allocation source = device.create_buffer(256, side);
    device.write(side, source.whole(), bytes_of(256, 42));
    const std::byte* dropped = nullptr;
    Allocation result = device.create_buffer(256);
    {
      Allocation buffer = device.create_buffer(256);
      device.memory().for_each_allocation([&](const AllocationInfo& info) {
        if (info.id == buffer.id()) {
          dropped = info.data;
        }
      });
      ASSERT_TRUE(device
                      .launch(side, "copy on the side", {source.whole()}, {buffer.whole()},
                              add_later(backend, 0))
                      .ran());
      ASSERT_TRUE(
          device.launch("consume", {buffer.whole()}, {result.whole()}, add_later(backend, 1))
              .ran());
      EXPECT_GE(device.stream_stats().pins_held, 1u);
    }
    Allocation reused = device.create_buffer(256);
    const std::byte* address = nullptr;
    device.memory().for_each_allocation([&](const AllocationInfo& info) {
      if (info.id == reused.id()) {
        address = info.data;
      }
    });
    if (backend.pending() != 0 && address == dropped) {
      // Only allowed once the side stream's copy has completed.
      EXPECT_EQ(device.stream_stats().pins_held, 0u) << "seed " << seed;
    }
    ASSERT_TRUE(
        device.launch("overwrite the new buffer", {}, {reused.whole()}, fill_later(backend, 9))
            .ran());
    EXPECT_EQ(read_ok(device, result.whole()), bytes_of(256, 43)) << "seed " << seed;
    device.synchronize();
    EXPECT_EQ(device.stream_stats().pins_held, 0u);
    device.check_invariants();
  }
}

TEST(Streams, O3_LaunchesBindingTheNewestPinsBufferMoveThatPinOnAndNoOtherDoes) {
  // Device::order takes no new handle for a binding of the allocation the
  // stream's newest pin holds at that point of the launch's sequence; the
  // pins must come out exactly as one handle per binding handed to
  // StreamTable::pin in order would leave them.
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  const Allocation shared = device.create_buffer(256);
  const Allocation other = device.create_buffer(256);
  const Allocation out = device.create_buffer(256, side);
  const auto launch = [&](std::initializer_list<Binding> reads) {
    ASSERT_TRUE(device
                    .launch(side, "read across", reads, {out.whole()},
                            [](const KernelContext&) { return LaunchOutcome::success(); })
                    .ran());
  };
  launch({shared.whole()});
  launch({shared.whole()}); // The newest pin holds it: moved on.
  EXPECT_EQ(device.stream_stats().pins_taken, 1u);
  EXPECT_EQ(device.stream_stats().pins_held, 1u);
  launch({shared.whole(), shared.bind(0, 16)}); // Twice in one launch: still the one pin.
  EXPECT_EQ(device.stream_stats().pins_taken, 1u);
  launch({other.whole(), shared.whole()}); // `other` becomes the newest: `shared` pinned anew.
  EXPECT_EQ(device.stream_stats().pins_taken, 3u);
  EXPECT_EQ(device.stream_stats().pins_held, 3u);
  launch({shared.whole()}); // The newest again: moved on.
  EXPECT_EQ(device.stream_stats().pins_taken, 3u);
  device.synchronize();
  EXPECT_EQ(device.stream_stats().pins_held, 0u);
  device.check_invariants();
}

TEST(Streams, O3_AllocateWaitsForStreamsOnlyAsTheLastStepBeforeOutOfMemory) {
  HostStorage host(256);
  FaultInjectingStorage storage(host);
  MemoryConfig config;
  config.sliced = {};
  config.max_allocation = std::uint64_t{1} << 20;
  DeferredHostBackend backend(storage, config);
  Device device(backend);
  const StreamId side = device.create_stream();
  storage.limit_capacity((std::uint64_t{1} << 20) + 4096);
  Allocation source = device.create_buffer(16, side);
  {
    Allocation big = device.create_buffer(std::uint64_t{1} << 20);
    ASSERT_TRUE(device
                    .launch(side, "side writes big", {source.whole()}, {big.whole()},
                            fill_later(backend, 1))
                    .ran());
  }
  // The only page is held for the side stream; a new one does not fit.
  ASSERT_GT(backend.pending(), 0u);
  Allocation next = device.create_buffer(std::uint64_t{1} << 20);
  EXPECT_EQ(backend.pending(), 0u) << "the retry waited for every stream";
  EXPECT_EQ(device.stream_stats().pins_held, 0u);
}

// ------------------------------------------------------------ O4

TEST(Streams, O4_DetectModeQueuesNoWaitAndTaintsAReadersOutputsWithARace) {
  DeferredHostBackend backend;
  Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(64);
  Allocation y = device.create_buffer(64, side);
  ASSERT_TRUE(device.launch("producer", {}, {x.whole()}, fill_later(backend, 5)).ran());
  const LaunchResult consumer =
      device.launch(side, "consumer", {x.whole()}, {y.whole()}, add_later(backend, 1));
  EXPECT_EQ(consumer.status, LaunchStatus::Failed);
  ASSERT_TRUE(consumer.error.has_value());
  EXPECT_EQ(consumer.error->kind(), ErrorKind::Race);
  EXPECT_EQ(device.stream_stats().waits_inserted, 0u);
  EXPECT_EQ(device.stream_stats().races_detected, 1u);
  std::vector<std::byte> out(64);
  const ReadOutcome read = device.read(y.whole(), out);
  ASSERT_EQ(read.reports.size(), 1u);
  const std::string text = to_string(read);
  EXPECT_NE(text.find("race"), std::string::npos) << text;
  EXPECT_NE(text.find("consumer"), std::string::npos) << text;
  EXPECT_NE(text.find("producer"), std::string::npos) << text;
  EXPECT_NE(text.find("stream 1"), std::string::npos) << text;
  EXPECT_NE(text.find("stream 0"), std::string::npos) << text;
  EXPECT_NE(text.find("bytes [0, 64)"), std::string::npos) << text;
  EXPECT_TRUE(device.read(x.whole(), out).ok()) << "the writer's bytes are its own";
  device.check_invariants();
}

TEST(Streams, O4_AWriteAfterAnUnorderedReadTaintsTheEarlierReadersOutputs) {
  DeferredHostBackend backend;
  Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(32);
  Allocation y = device.create_buffer(32);
  Allocation z = device.create_buffer(32);
  device.write(x.whole(), bytes_of(32, 1));
  ASSERT_TRUE(device.launch("reader", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
  ASSERT_TRUE(device.launch("downstream", {y.whole()}, {z.whole()}, add_later(backend, 1)).ran());
  ASSERT_TRUE(device.launch(side, "writer", {}, {x.whole()}, fill_later(backend, 7)).ran());
  std::vector<std::byte> out(32);
  for (const Allocation* suspect : {&y, &z}) {
    const ReadOutcome read = device.read(suspect->whole(), out);
    ASSERT_FALSE(read.ok());
    EXPECT_NE(to_string(read).find("race"), std::string::npos) << to_string(read);
    EXPECT_NE(to_string(read).find("reader"), std::string::npos) << to_string(read);
  }
  EXPECT_TRUE(device.read(x.whole(), out).ok());
}

TEST(Streams, O4_TwoUnorderedWritesTaintOnlyTheBytesBothWrote) {
  DeferredHostBackend backend;
  Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(96);
  ASSERT_TRUE(device.launch("first", {}, {x.bind(0, 64)}, fill_later(backend, 1)).ran());
  const LaunchResult second =
      device.launch(side, "second", {}, {x.bind(32, 64)}, fill_later(backend, 2));
  EXPECT_EQ(second.status, LaunchStatus::Failed);
  std::vector<std::byte> out(32);
  EXPECT_TRUE(device.read(x.bind(0, 32), out).ok());
  EXPECT_FALSE(device.read(x.bind(32, 32), out).ok());
  EXPECT_TRUE(device.read(x.bind(64, 32), out).ok());
}

TEST(Streams, O4_AccessesOrderedByASynchronizeAreNoRace) {
  DeferredHostBackend backend;
  Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(16);
  Allocation y = device.create_buffer(16, side);
  ASSERT_TRUE(device.launch("producer", {}, {x.whole()}, fill_later(backend, 5)).ran());
  device.synchronize();
  EXPECT_TRUE(
      device.launch(side, "consumer", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
  EXPECT_EQ(device.stream_stats().races_detected, 0u);
  EXPECT_EQ(read_ok(device, y.whole()), bytes_of(16, 6));
}

// A race's message is built by appends into one string (issue 13: the
// operator+ chains took 8-10 allocations per race, which stream_fuzzer
// provokes on purpose). These pin its words, so the cheaper build says
// exactly what the chains said (the stream model checks the same words).

/// A Device in detect mode (O4) with one side stream beside the default.
struct DetectMode {
  DeferredHostBackend backend;
  Device device{backend, DeviceOptions{std::nullopt, StreamOrdering::Detect}};
  StreamId side = device.create_stream();
};

TEST(Streams, O4_AReadAfterAnUnorderedWriteIsARaceInTheseWords) {
  DetectMode rig;
  DeferredHostBackend& backend = rig.backend;
  Device& device = rig.device;
  const StreamId side = rig.side;
  Allocation x = device.create_buffer(64);
  // As long as the read: add_later's body copies its read into its write.
  Allocation y = device.create_buffer(16, side);
  ASSERT_TRUE(device.launch("producer", {}, {x.whole()}, fill_later(backend, 5)).ran());
  const LaunchResult consumer =
      device.launch(side, "consumer", {x.bind(8, 16)}, {y.whole()}, add_later(backend, 1));
  ASSERT_TRUE(consumer.error.has_value());
  EXPECT_EQ(consumer.error->kind(), ErrorKind::Race);
  EXPECT_EQ(consumer.error->message(),
            "consumer (launch 2 on stream 1) read " + to_string(x.id()) +
                " bytes [8, 24) that launch 1 (\"producer\") on stream 0 wrote, with nothing "
                "ordering the two (detect mode queued no wait)");
}

TEST(Streams, O4_TwoUnorderedWritesAreARaceInTheseWordsCountingTheOtherConflicts) {
  // The earlier writer's name is the one the message's reserved room does
  // not count: long enough that the string grows past its first room.
  DetectMode rig;
  DeferredHostBackend& backend = rig.backend;
  Device& device = rig.device;
  const StreamId side = rig.side;
  Allocation x = device.create_buffer(96);
  Allocation z = device.create_buffer(96);
  const std::string first(300, 'k');
  ASSERT_TRUE(
      device.launch(first, {}, {x.bind(0, 64), z.bind(0, 64)}, fill_later(backend, 1)).ran());
  const LaunchResult second =
      device.launch(side, "second", {}, {x.bind(32, 64), z.bind(32, 64)}, fill_later(backend, 2));
  ASSERT_TRUE(second.error.has_value());
  EXPECT_EQ(second.error->kind(), ErrorKind::Race);
  EXPECT_EQ(second.error->message(),
            "second (launch 2 on stream 1) wrote " + to_string(x.id()) +
                " bytes [32, 64) that launch 1 (\"" + first +
                "\") on stream 0 wrote, with nothing ordering the two (detect mode queued no "
                "wait); and 1 more such conflicts");
}

TEST(Streams, O4_AWriteAfterAnUnorderedReadIsARaceOfTheReaderInTheseWords) {
  DetectMode rig;
  DeferredHostBackend& backend = rig.backend;
  Device& device = rig.device;
  const StreamId side = rig.side;
  Allocation x = device.create_buffer(32);
  Allocation y = device.create_buffer(32);
  ASSERT_TRUE(device.launch("producer", {}, {x.whole()}, fill_later(backend, 1)).ran());
  device.synchronize();
  ASSERT_TRUE(device.launch("reader", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
  ASSERT_TRUE(device.launch(side, "writer", {}, {x.bind(4, 8)}, fill_later(backend, 7)).ran());
  std::vector<std::byte> out(32);
  const ReadOutcome read = device.read(y.whole(), out);
  ASSERT_EQ(read.reports.size(), 1u);
  EXPECT_EQ(read.reports[0].root.kind(), ErrorKind::Race);
  EXPECT_EQ(read.reports[0].root.message(),
            "reader: launch 2 (\"reader\") on stream 0 read " + to_string(x.id()) +
                " bytes [4, 12) while launch 3 on stream 1 wrote them, with nothing ordering "
                "the two (detect mode queued no wait) (reported when the device synchronised)");
}

// ------------------------------------------------------------ stream errors

TEST(Streams, P3_AStreamOfAnotherDeviceOrDestroyedOrNeverMadeIsNotFound) {
  DeferredHostBackend backend;
  Device device(backend);
  Device other(backend);
  const StreamId theirs = other.create_stream();
  const StreamId mine = device.create_stream();
  Allocation x = device.create_buffer(8);
  auto kind_of = [&](StreamId stream) {
    try {
      static_cast<void>(device.launch(stream, "k", {}, {x.whole()}, fill_later(backend, 1)));
    } catch (const Exception& error) {
      return error.kind();
    }
    return ErrorKind::Generic;
  };
  EXPECT_EQ(kind_of(theirs), ErrorKind::NotFound);
  EXPECT_EQ(kind_of(StreamId{}), ErrorKind::NotFound);
  EXPECT_EQ(kind_of(StreamId::of(mine.device(), 77)), ErrorKind::NotFound);
  device.destroy_stream(mine);
  EXPECT_EQ(kind_of(mine), ErrorKind::NotFound);
  EXPECT_THROW(device.destroy_stream(device.default_stream()), std::invalid_argument);
  EXPECT_TRUE(device.launch("still fine", {}, {x.whole()}, fill_later(backend, 1)).ran());
  EXPECT_EQ(read_ok(device, x.whole()), bytes_of(8, 1)) << "nothing was lost";
}

// ------------------------------------------------------------ O5

TEST(Streams, O5_ABodyCallingItsOwnDeviceIsRefusedAndTheScopeEndsAsAThrow) {
  HostBackend host;
  Device device(host);
  Allocation x = device.create_buffer(8);
  Allocation y = device.create_buffer(8);
  std::vector<std::byte> out(8);
  const std::vector<std::function<void()>> calls = {
      [&] { static_cast<void>(device.read(x.whole(), out)); },
      [&] { device.write(x.whole(), out); },
      [&] { device.synchronize(); },
      [&] { static_cast<void>(device.create_buffer(8)); },
      [&] { static_cast<void>(device.stale_reports(x.whole())); },
      [&] { static_cast<void>(device.read_bytes(x.whole())); },
      [&] {
        static_cast<void>(device.launch(
            "inner", {}, {}, [](const KernelContext&) { return LaunchOutcome::success(); }));
      },
  };
  for (const auto& call : calls) {
    EXPECT_THROW(static_cast<void>(device.launch("outer", {}, {y.whole()},
                                                 [&](const KernelContext&) {
                                                   call();
                                                   return LaunchOutcome::success();
                                                 })),
                 std::logic_error);
    const ReadOutcome read = device.read(y.whole(), out);
    ASSERT_FALSE(read.ok()) << "S3: the write set stays torn down";
    EXPECT_NE(to_string(read).find("threw"), std::string::npos);
  }
  device.check_invariants();
}

TEST(Streams, O5_ManyThreadsEachOnTheirOwnStreamGetTheirOwnBytes) {
  DeferredHostBackend backend;
  Device device(backend);
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      const StreamId stream = device.create_stream();
      for (int round = 0; round < kRounds; ++round) {
        const auto value = static_cast<std::uint8_t>(thread * 50 + round % 50);
        Allocation a = device.create_buffer(64, stream);
        Allocation b = device.create_buffer(64, stream);
        device.write(stream, a.whole(), bytes_of(64, value));
        static_cast<void>(
            device.launch(stream, "b = a + 1", {a.whole()}, {b.whole()}, add_later(backend, 1)));
        std::vector<std::byte> out(64);
        if (!device.read(stream, b.whole(), out).ok() ||
            out != bytes_of(64, static_cast<std::uint8_t>(value + 1))) {
          ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(wrong.load(), 0);
  device.check_invariants();
}

TEST(Streams, O5_ThreadsSharingBuffersAcrossStreamsKeepEveryRule) {
  HostBackend host;
  Device device(host);
  Allocation shared = device.create_buffer(256);
  device.write(shared.whole(), bytes_of(256, 1));
  std::vector<std::thread> threads;
  for (int thread = 0; thread < 4; ++thread) {
    threads.emplace_back([&, thread] {
      const StreamId stream = device.create_stream();
      for (int round = 0; round < 100; ++round) {
        Allocation mine = device.create_buffer(64, stream);
        const Binding slice = shared.bind(static_cast<std::uint64_t>(thread) * 64, 64);
        if (round % 7 == 3) {
          static_cast<void>(device.launch(stream, "fail", {}, {slice}, [](const KernelContext&) {
            return LaunchOutcome::failure(Error::launch("boom"));
          }));
        } else {
          static_cast<void>(device.launch(stream, "fill", {}, {slice}, [](const KernelContext& c) {
            std::fill(c.write(0).begin(), c.write(0).end(), std::byte{3});
            return LaunchOutcome::success();
          }));
        }
        static_cast<void>(
            device.launch(stream, "copy", {slice}, {mine.whole()}, [](const KernelContext& c) {
              std::copy(c.read(0).begin(), c.read(0).end(), c.write(0).begin());
              return LaunchOutcome::success();
            }));
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  device.sweep();
  device.check_invariants();
  EXPECT_LE(device.graph().size(), 4u) << "only the four slices' last failures can live (R1)";
}

// ------------------------------------------------------------ S6

TEST(Streams, S6_ALaunchThatRanButWroteNothingLeavesStaleOutputsStale) {
  // CubeCL's a_zero_cube_count_launch_does_not_untaint_its_outputs.
  HostBackend host;
  Device device(host);
  Allocation out = device.create_buffer(64);
  const LaunchResult failed = device.launch("fails", {}, {out.whole()}, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("no kernel image"));
  });
  ASSERT_TRUE(failed.failure.has_value());
  const LaunchResult empty =
      device.launch("zero blocks", {}, {out.whole()},
                    [](const KernelContext&) { return LaunchOutcome::wrote_only({}); });
  EXPECT_TRUE(empty.ran());
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, *failed.failure) << "the old failure, not a new one";
  device.check_invariants();
}

TEST(Streams, S6_NamedRangesAreReleasedAndEveryOtherByteKeepsItsPriorState) {
  HostBackend host;
  Device device(host);
  Allocation out = device.create_buffer(64);
  // Bytes [0, 32) stale by F, [32, 64) clean.
  const LaunchResult failed =
      device.launch("fails", {}, {out.bind(0, 32)}, [](const KernelContext&) {
        return LaunchOutcome::failure(Error::launch("x"));
      });
  ASSERT_TRUE(failed.failure.has_value());
  const LaunchResult partly =
      device.launch("writes [16, 48)", {}, {out.whole()}, [](const KernelContext&) {
        return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(16, 48)},
                                          WrittenRange{3, ByteRange::of(0, 8)},
                                          WrittenRange{0, ByteRange::of(60, 70)}});
      });
  EXPECT_TRUE(partly.ran());
  std::vector<std::byte> buffer(16);
  const ReadOutcome head = device.read(out.bind(0, 16), buffer);
  ASSERT_EQ(head.reports.size(), 1u);
  EXPECT_EQ(head.reports[0].failure, *failed.failure);
  EXPECT_TRUE(device.read(out.bind(16, 16), buffer).ok());
  EXPECT_TRUE(device.read(out.bind(32, 16), buffer).ok());
  EXPECT_TRUE(device.read(out.bind(48, 16), buffer).ok()) << "clean before, clean after";
  device.check_invariants();
  EXPECT_EQ(device.graph().size(), 1u);
}

TEST(Streams, S6_WhenTheOnlyCarrierIsRewrittenItsFailureSurvivesTheScope) {
  HostBackend host;
  Device device(host);
  Allocation out = device.create_buffer(8);
  const LaunchResult failed = device.launch("fails", {}, {out.whole()}, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("x"));
  });
  ASSERT_TRUE(failed.failure.has_value());
  static_cast<void>(device.launch("wrote nothing", {}, {out.whole()}, [](const KernelContext&) {
    return LaunchOutcome::wrote_only({});
  }));
  EXPECT_TRUE(device.graph().contains(*failed.failure));
  EXPECT_EQ(device.graph().tags(*failed.failure), 1u) << "R1: one carrier, one tag";
  static_cast<void>(device.launch("wrote it all", {}, {out.whole()}, [](const KernelContext&) {
    return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(0, 8)}});
  }));
  EXPECT_FALSE(device.graph().contains(*failed.failure)) << "G3: gone with its last claim";
}

TEST(Streams, O3_ADeviceThatNeverSynchronisesKeepsItsCrossStreamRecordsBounded) {
  // A pipeline step: an activation made on one stream, read on another,
  // dropped. Each materialises a cross-stream record; once its work is known
  // complete (here: the queues ran; the next create_buffer polls) the record
  // says nothing and goes, without any synchronize().
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId compute = device.default_stream();
  const StreamId copy = device.create_stream();
  const Allocation out = device.create_buffer(64, copy);
  std::size_t most = 0;
  for (int step = 0; step < 1000; ++step) {
    const Allocation activation = device.create_buffer(64, compute);
    ASSERT_TRUE(device
                    .launch(compute, "compute", {}, {activation.whole()},
                            fill_later(backend, static_cast<std::uint8_t>(step)))
                    .ran());
    ASSERT_TRUE(
        device.launch(copy, "copy", {activation.whole()}, {out.whole()}, add_later(backend, 1))
            .ran());
    static_cast<void>(backend.run_all());
    most = std::max<std::size_t>(most, device.stream_stats().records_held);
  }
  EXPECT_LE(most, 200u) << "records of completed work piled up";
  EXPECT_EQ(read_ok(device, out.whole()), bytes_of(64, static_cast<std::uint8_t>(999 + 1)));
  device.check_invariants();
}

// StreamTable's two pin calls, as contracts: Device::order follows the
// newest pin (last_pinned) and moves it on with pin_again, so a pin() of
// the allocation that pin already holds, or a pin_again() of another, is
// a caller's error and must be loud, changing nothing (O3).
TEST(Streams, O3_PinRefusesTheNewestPinsAllocationAndPinAgainRefusesAnyOther) {
  HostStorage storage;
  ErrorGraph graph;
  MemoryManager memory(storage, graph);
  const Allocation a = memory.allocate(64);
  const Allocation b = memory.allocate(64);
  HostBackend backend;
  StreamTable table(backend, 0); // Gone first: its pins hold a and b.
  const std::uint32_t slot = table.slot(table.create());

  table.pin(slot, 1, a);
  EXPECT_THROW(table.pin(slot, 2, a), std::logic_error) << "the newest pin already holds it";
  EXPECT_EQ(table.stats().pins_taken, 1u) << "a refused pin takes nothing";
  EXPECT_NO_THROW(table.pin_again(slot, 2, a.id()));
  EXPECT_THROW(table.pin_again(slot, 3, b.id()), std::logic_error) << "b is not pinned";
  EXPECT_EQ(table.last_pinned(slot), a.id());

  table.pin(slot, 3, b);
  EXPECT_EQ(table.stats().pins_taken, 2u);
  EXPECT_EQ(table.last_pinned(slot), b.id());
  EXPECT_THROW(table.pin_again(slot, 4, a.id()), std::logic_error) << "a is no longer the newest";
}

} // namespace
} // namespace taintpool
