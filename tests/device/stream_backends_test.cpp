// Pins the stream machinery below the Device: QueueBackend's defaults (a
// synchronous backend with one queue), DeferredHostBackend's scheduler
// (step, run_all, pending, events, a queue that can never run), the
// HappensBefore table's slot contract and pruning, and StreamTable's limits
// and event bookkeeping as the Device shows them (O1, O2, P3).
//
// Why here: the rule tests (streams_test.cpp) drive these through seeded
// programs; the edges — the 65th stream, a stream destroyed with events
// still tracked, a wait that can never be satisfied — are checked one by
// one, each with the exact figures it must give.
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/stream/happens_before.hpp>
#include <taintpool/stream/queue_backend.hpp>
#include <taintpool/stream/stream_table.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

std::vector<std::byte> bytes_of(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

/// Device work: fills every output with `value`, later, on the launch's stream.
auto fill_later(DeferredHostBackend& backend, std::uint8_t value) {
  return [&backend, value](const KernelContext& context) {
    for (std::size_t index = 0; index < context.writes(); ++index) {
      const std::span<std::byte> out = context.write(index);
      backend.enqueue(context, [out, value] {
        std::fill(out.begin(), out.end(), static_cast<std::byte>(value));
      });
    }
    return LaunchOutcome::success();
  };
}

/// Device work: copies input 0 into output 0, later, on the launch's stream.
auto copy_later(DeferredHostBackend& backend) {
  return [&backend](const KernelContext& context) {
    const std::span<const std::byte> in = context.read(0);
    const std::span<std::byte> out = context.write(0);
    backend.enqueue(context, [in, out] { std::copy(in.begin(), in.end(), out.begin()); });
    return LaunchOutcome::success();
  };
}

std::vector<std::byte> read_ok(Device& device, const Binding& binding) {
  std::vector<std::byte> out(static_cast<std::size_t>(binding.range.size()));
  const ReadOutcome outcome = device.read(binding, out);
  EXPECT_TRUE(outcome.ok()) << to_string(outcome);
  return out;
}

/// The message of the Exception of kind Generic that `make` throws (a
/// create refused at a limit), or why there is none.
template <class Make>
std::string generic_refusal(Make&& make) {
  try {
    static_cast<void>(make());
  } catch (const Exception& error) {
    return error.kind() == ErrorKind::Generic ? std::string(error.what())
                                              : "another kind: " + std::string(error.what());
  }
  return "no error: a stream was made";
}

// ------------------------------------------------------------ QueueBackend

/// QueueBackend with every default: its constructor is for subclasses.
class DefaultQueues final : public QueueBackend {};

TEST(QueueBackend, O1_TheDefaultsAreOneSynchronousQueueWhoseEventsAreDoneAtOnce) {
  DefaultQueues backend;
  EXPECT_TRUE(backend.synchronous());
  const StreamHandle first = backend.default_stream();
  const StreamHandle made = backend.create_stream();
  const StreamHandle again = backend.create_stream();
  EXPECT_NE(first, nullptr);
  EXPECT_NE(made, first);
  EXPECT_NE(again, made);
  const EventHandle event = backend.record(made);
  EXPECT_NE(event, nullptr);
  EXPECT_TRUE(backend.done(event));
  EXPECT_NO_THROW(backend.wait(again, event));
  EXPECT_NO_THROW(backend.finish(made));
  backend.release(event);
  backend.destroy_stream(made);
  EXPECT_EQ(backend.default_stream(), first);
}

TEST(StreamId, P3_AStreamPrintsAsItsNumber) {
  const StreamId stream = StreamId::of(3, 5);
  EXPECT_EQ(to_string(stream), "stream 5");
  std::ostringstream out;
  out << stream;
  EXPECT_EQ(out.str(), "stream 5");
}

// ------------------------------------------------------------ DeferredHostBackend

TEST(DeferredHostBackend, O1_QueuedWorkRunsOnlyWhenSteppedAndPendingCountsIt) {
  DeferredHostBackend backend;
  const StreamHandle stream = backend.create_stream();
  std::vector<int> ran;
  backend.enqueue(stream, [&] { ran.push_back(1); });
  backend.enqueue(stream, [&] { ran.push_back(2); });
  backend.enqueue(backend.default_stream(), [&] { ran.push_back(3); });
  EXPECT_EQ(backend.pending(), 3u);
  EXPECT_TRUE(ran.empty());
  EXPECT_TRUE(backend.step());
  EXPECT_EQ(ran.size(), 1u);
  EXPECT_EQ(backend.pending(), 2u);
  EXPECT_EQ(backend.run_all(), 2u);
  EXPECT_EQ(backend.pending(), 0u);
  ASSERT_EQ(ran.size(), 3u);
  // One stream's items in their queue's order, whatever the interleaving.
  EXPECT_LT(std::find(ran.begin(), ran.end(), 1), std::find(ran.begin(), ran.end(), 2));
  EXPECT_FALSE(backend.step()) << "nothing queued";
  EXPECT_EQ(backend.run_all(), 0u);
}

TEST(DeferredHostBackend, O2_AnEventOnAnEmptyQueueIsDoneAtOnceAndAWaitOnItQueuesNothing) {
  DeferredHostBackend backend;
  const StreamHandle a = backend.create_stream();
  const StreamHandle b = backend.create_stream();
  const EventHandle event = backend.record(a);
  EXPECT_TRUE(backend.done(event));
  backend.wait(b, event);
  EXPECT_EQ(backend.pending(), 0u);
  EXPECT_EQ(backend.events_made(), 1u);
  backend.release(event);
  // A released event is reused, not made again.
  const EventHandle reused = backend.record(a);
  EXPECT_EQ(reused, event);
  EXPECT_EQ(backend.events_made(), 1u);
  backend.release(reused);
}

TEST(DeferredHostBackend, O2_AWaitHoldsItsQueueUntilTheEventsRecordRan) {
  DeferredHostBackend backend;
  const StreamHandle a = backend.create_stream();
  const StreamHandle b = backend.create_stream();
  std::vector<int> ran;
  backend.enqueue(a, [&] { ran.push_back(1); });
  const EventHandle event = backend.record(a);
  EXPECT_FALSE(backend.done(event));
  backend.wait(b, event);
  backend.enqueue(b, [&] { ran.push_back(2); });
  EXPECT_EQ(backend.pending(), 4u) << "work, record, wait, work";
  backend.finish(b);
  EXPECT_TRUE(backend.done(event));
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_EQ(backend.pending(), 0u);
  backend.release(event);
}

TEST(DeferredHostBackend, O1_QueuedWorkOfADestroyedStreamStillRunsAndTheHandleIsDead) {
  DeferredHostBackend backend;
  const StreamHandle stream = backend.create_stream();
  int ran = 0;
  backend.enqueue(stream, [&] { ++ran; });
  backend.enqueue(stream, [&] { ++ran; });
  backend.destroy_stream(stream);
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(backend.pending(), 0u);
  try {
    backend.enqueue(stream, [&] { ++ran; });
    ADD_FAILURE() << "a dead stream took work";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("not a live stream"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(static_cast<void>(backend.record(stream)), std::logic_error);
  EXPECT_EQ(ran, 2);
}

/// The order in which four streams (made on a backend seeded with `seed`)
/// run three items each, queued round robin. With `churn`, that many empty
/// streams are made before each of ours (and some after one is destroyed),
/// and destroyed once the work is queued: from the middle of the list.
std::vector<int> interleaving(std::uint64_t seed, int churn) {
  DeferredHostBackend backend;
  backend.set_seed(seed);
  std::vector<StreamHandle> streams;
  std::vector<StreamHandle> doomed;
  for (int made = 0; made < 4; ++made) {
    for (int extra = 0; extra < churn; ++extra) {
      doomed.push_back(backend.create_stream());
    }
    streams.push_back(backend.create_stream());
  }
  std::vector<int> order;
  for (int item = 0; item < 3; ++item) {
    for (int at = 0; at < 4; ++at) {
      backend.enqueue(streams[static_cast<std::size_t>(at)], [&order, at] { order.push_back(at); });
    }
  }
  // Nothing is queued on these: destroying a stream with work runs steps,
  // and each step draws from the seed.
  for (const StreamHandle gone : doomed) {
    backend.destroy_stream(gone);
  }
  static_cast<void>(backend.run_all());
  return order;
}

/// `stream` is live: an item queued on it runs, alone, at the next run_all.
void expect_takes_and_runs_one_item(DeferredHostBackend& backend, StreamHandle stream) {
  int ran = 0;
  backend.enqueue(stream, [&] { ++ran; });
  EXPECT_EQ(backend.run_all(), 1u);
  EXPECT_EQ(ran, 1);
}

TEST(DeferredHostBackend, O1_StreamsMadeAndDestroyedLeaveTheSeedsInterleavingOfTheOthersAsItWas) {
  // A step picks at random among runnable queues by position; a destroyed
  // stream's queue leaves the walk, and must neither shift the others'
  // positions nor be picked: the same seed gives the same order of the
  // live streams' work with any number of streams made and destroyed.
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<int> alone = interleaving(seed, 0);
    ASSERT_EQ(alone.size(), 12u);
    EXPECT_EQ(interleaving(seed, 1), alone) << "seed " << seed;
    EXPECT_EQ(interleaving(seed, 5), alone) << "seed " << seed;
  }
}

TEST(DeferredHostBackend, O1_P3_ADestroyedStreamsHandleIsNeverGivenToALaterStream) {
  DeferredHostBackend backend;
  std::vector<StreamHandle> dead;
  for (int round = 0; round < 256; ++round) {
    const StreamHandle made = backend.create_stream();
    for (const StreamHandle gone : dead) {
      ASSERT_NE(made, gone) << "round " << round << ": a dead handle now names a live stream";
    }
    backend.destroy_stream(made);
    dead.push_back(made);
  }
  for (const StreamHandle gone : dead) {
    EXPECT_THROW(backend.enqueue(gone, [] {}), std::logic_error);
  }
  EXPECT_EQ(backend.pending(), 0u);
  // Destroying a dead stream again changes nothing; the default stream lives on.
  backend.destroy_stream(dead.front());
  expect_takes_and_runs_one_item(backend, backend.default_stream());
}

TEST(DeferredHostBackend, O1_TheDefaultStreamDestroyedThroughTheBackendIsDeadAndStillItsDefault) {
  DeferredHostBackend backend;
  const StreamHandle first = backend.default_stream();
  const StreamHandle other = backend.create_stream();
  backend.destroy_stream(first);
  EXPECT_EQ(backend.default_stream(), first);
  EXPECT_THROW(backend.enqueue(first, [] {}), std::logic_error);
  expect_takes_and_runs_one_item(backend, other);
}

TEST(DeferredHostBackend, O1_AWaitOnARecordThatWasDroppedIsALoudDeadlockNotAHang) {
  DeferredHostBackend backend;
  const StreamHandle a = backend.create_stream();
  const StreamHandle b = backend.create_stream();
  int ran = 0;
  backend.enqueue(a, [] { throw std::runtime_error("the item fails"); });
  const EventHandle event = backend.record(a);
  backend.wait(b, event);
  backend.enqueue(b, [&] { ++ran; });
  // Destroying `a` runs its failing item; the throw drops a's queue, the
  // record with it, so b's wait can never be satisfied.
  backend.destroy_stream(a);
  EXPECT_FALSE(backend.done(event));
  EXPECT_EQ(backend.pending(), 2u);
  try {
    static_cast<void>(backend.step());
    ADD_FAILURE() << "a queue that can never run stepped";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot complete"), std::string::npos) << error.what();
  }
  EXPECT_THROW(static_cast<void>(backend.run_all()), std::logic_error);
  EXPECT_EQ(ran, 0);
  // Destroying the stuck stream gives up on its queue without throwing.
  backend.destroy_stream(b);
  EXPECT_EQ(backend.pending(), 0u);
  EXPECT_EQ(ran, 0);
  backend.release(event);
}

// ------------------------------------------------------------ HappensBefore

TEST(HappensBefore, O1_OnlyALiveStreamOtherThanTheDefaultCanBeRemovedAndItsSlotIsReused) {
  HappensBefore order;
  EXPECT_EQ(order.slots(), 1u);
  EXPECT_THROW(order.remove_stream(0), std::logic_error);
  EXPECT_THROW(order.remove_stream(1), std::logic_error);
  const std::uint32_t slot = order.add_stream();
  EXPECT_EQ(slot, 1u);
  EXPECT_EQ(order.slots(), 2u);
  EXPECT_EQ(order.tail(slot), 0u);
  order.remove_stream(slot);
  try {
    order.remove_stream(slot);
    ADD_FAILURE() << "a free slot was removed twice";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("slot 1 is not a removable stream"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(order.add_stream(), 1u) << "the free slot is reused";
  EXPECT_EQ(order.slots(), 2u);
  EXPECT_THROW(static_cast<void>(order.tail(7)), std::out_of_range);
  order.check_invariants();
}

TEST(HappensBefore, O1_ARecordGoesWhenEveryAccessInItIsKnownCompleteAndNotBefore) {
  HappensBefore order;
  const std::uint32_t other = order.add_stream();
  const AllocationId x = AllocationId::from_raw(1);
  const StreamAccess access{x, ByteRange::of(0, 8), 16, 0};
  // Written on its home stream, then read on another: the read crosses
  // streams, so the allocation gets a record.
  const StreamPoint write = order.commit(0, 1, {}, std::span<const StreamAccess>(&access, 1));
  order.ordered(other, 0, write.seq);
  const StreamPoint read = order.commit(other, 2, std::span<const StreamAccess>(&access, 1), {});
  EXPECT_EQ(read.stream, other);
  EXPECT_EQ(read.seq, 1u);
  ASSERT_TRUE(order.tracked(x));
  EXPECT_TRUE(order.any_record());
  EXPECT_EQ(order.records(), 1u);
  order.check_invariants();
  order.completed(0, write.seq);
  EXPECT_EQ(order.prune_completed(), 0u) << "the read is not known complete";
  EXPECT_TRUE(order.tracked(x));
  order.completed(other, read.seq);
  EXPECT_EQ(order.completed(other), read.seq);
  EXPECT_EQ(order.prune_completed(), 1u);
  EXPECT_FALSE(order.tracked(x));
  EXPECT_FALSE(order.any_record());
  order.check_invariants();
}

TEST(HappensBefore, O1_AForgottenAllocationLeavesNoRecord) {
  HappensBefore order;
  const std::uint32_t other = order.add_stream();
  const AllocationId x = AllocationId::from_raw(9);
  const StreamAccess access{x, ByteRange::of(0, 4), 4, 0};
  static_cast<void>(order.commit(other, 1, {}, std::span<const StreamAccess>(&access, 1)));
  ASSERT_TRUE(order.tracked(x));
  order.forget(x);
  EXPECT_FALSE(order.tracked(x));
  EXPECT_EQ(order.records(), 0u);
  order.check_invariants();
}

TEST(HappensBefore, O1_TwoStreamPointsAreEqualOnlyWhenStreamSeqAndLaunchAllAgree) {
  const StreamPoint point{1, 2, 3};
  EXPECT_EQ(point, (StreamPoint{1, 2, 3}));
  EXPECT_NE(point, (StreamPoint{0, 2, 3}));
  EXPECT_NE(point, (StreamPoint{1, 4, 3}));
  EXPECT_NE(point, (StreamPoint{1, 2, 5}));
}

// ------------------------------------------------------------ StreamTable, through the Device

TEST(Streams, O1_AtMostMaxStreamsAreLiveAndTheNextIsAClearErrorThatChangesNothing) {
  DeferredHostBackend backend;
  Device device(backend);
  std::vector<StreamId> made;
  for (std::uint32_t count = 1; count < StreamTable::max_streams; ++count) {
    made.push_back(device.create_stream());
  }
  EXPECT_EQ(device.stream_stats().streams_created, StreamTable::max_streams - 1);
  const std::string refusal = generic_refusal([&] { return device.create_stream(); });
  EXPECT_NE(refusal.find("64 are live on this device"), std::string::npos) << refusal;
  EXPECT_EQ(device.stream_stats().streams_created, StreamTable::max_streams - 1);
  // One destroyed, one more can be made, in its slot.
  device.destroy_stream(made[5]);
  const StreamId again = device.create_stream();
  EXPECT_NE(again, made[5]);
  EXPECT_EQ(device.stream_stats().streams_created, StreamTable::max_streams);
  Allocation x = device.create_buffer(8, again);
  EXPECT_TRUE(device.launch(again, "fill", {}, {x.whole()}, fill_later(backend, 4)).ran());
  EXPECT_EQ(read_ok(device, x.whole()), bytes_of(8, 4));
}

TEST(Streams, P3_ADestroyedStreamAndANeverMadeOneAreNotFoundWithTheirReason) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId stream = device.create_stream();
  device.destroy_stream(stream);
  auto message_of = [&](StreamId gone) {
    try {
      device.destroy_stream(gone);
    } catch (const Exception& error) {
      EXPECT_EQ(error.kind(), ErrorKind::NotFound);
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of(stream).find("was destroyed"), std::string::npos) << message_of(stream);
  const StreamId never = StreamId::of(stream.device(), 40);
  EXPECT_NE(message_of(never).find("was never created"), std::string::npos) << message_of(never);
  EXPECT_NE(message_of(StreamId{}).find("names no device"), std::string::npos)
      << message_of(StreamId{});
  try {
    device.destroy_stream(device.default_stream());
    ADD_FAILURE() << "the default stream was destroyed";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("default stream cannot be destroyed"),
              std::string::npos);
  }
}

// The number table finds a live stream in one load by its number's low
// bits; a stream whose number shares an entry with an older live one (made
// 2 * max_streams creates later) is found by the scan, and takes the entry
// once the older one goes — both stay usable, each on its own queue.
TEST(Streams, O1_AStreamSharingItsNumberEntryWithAnOlderLiveOneIsFoundAndTakesTheEntryLater) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId old = device.create_stream();
  for (std::uint32_t made = 1; made < 2 * StreamTable::max_streams; ++made) {
    device.destroy_stream(device.create_stream());
  }
  const StreamId young = device.create_stream();
  ASSERT_EQ(young.number(), old.number() + 2 * StreamTable::max_streams);

  Allocation a = device.create_buffer(8, old);
  Allocation b = device.create_buffer(8, young);
  EXPECT_TRUE(device.launch(old, "fill", {}, {a.whole()}, fill_later(backend, 3)).ran());
  EXPECT_TRUE(device.launch(young, "fill", {}, {b.whole()}, fill_later(backend, 4)).ran());
  EXPECT_EQ(read_ok(device, a.whole()), bytes_of(8, 3));
  EXPECT_EQ(read_ok(device, b.whole()), bytes_of(8, 4));

  a = Allocation();
  device.destroy_stream(old);
  EXPECT_THROW(device.destroy_stream(old), Exception) << "the older one is gone";
  EXPECT_TRUE(device.launch(young, "fill", {}, {b.whole()}, fill_later(backend, 5)).ran());
  EXPECT_EQ(read_ok(device, b.whole()), bytes_of(8, 5));
  b = Allocation();
  device.destroy_stream(young);
  EXPECT_THROW(device.destroy_stream(young), Exception);
  device.check_invariants();
}

// Numbers are never reused, so the last one a StreamId can hold ends the
// creates: the next is a clear error that changes nothing, where a wrap
// would hand number 0 — the default stream's — to a new stream.
TEST(Streams, O1_OnceTheLastStreamNumberIsMadeTheNextCreateIsRefusedAndChangesNothing) {
  HostBackend backend;
  constexpr std::uint32_t last_number = std::numeric_limits<std::uint32_t>::max();
  StreamTable table(backend, 7, last_number);
  const StreamId last = table.create();
  EXPECT_EQ(last, StreamId::of(7, last_number));
  const std::string refusal = generic_refusal([&] { return table.create(); });
  EXPECT_NE(refusal.find("made 4294967295 streams"), std::string::npos) << refusal;
  EXPECT_EQ(table.stats().streams_created, 1U);
  EXPECT_EQ(table.slot(last), 1U) << "the live stream keeps working";
  EXPECT_EQ(table.slot(table.default_stream()), 0U);
  table.destroy(last);
  EXPECT_THROW(static_cast<void>(table.create()), Exception) << "still none left";
  EXPECT_THROW(static_cast<void>(table.slot(last)), Exception);
}

TEST(Streams, O2_ManyWaitsOnOneSourceKeepABoundedEventListAndDestroyingItReleasesThem) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId writer = device.create_stream();
  const StreamId reader = device.create_stream();
  Allocation x = device.create_buffer(8, writer);
  Allocation y = device.create_buffer(8, reader);
  constexpr std::uint32_t rounds = 20; // More than the 16 events a stream keeps.
  for (std::uint32_t round = 1; round <= rounds; ++round) {
    ASSERT_TRUE(device
                    .launch(writer, "fill", {}, {x.whole()},
                            fill_later(backend, static_cast<std::uint8_t>(round)))
                    .ran());
    ASSERT_TRUE(device.launch(reader, "copy", {x.whole()}, {y.whole()}, copy_later(backend)).ran());
  }
  const StreamStats stats = device.stream_stats();
  EXPECT_GE(stats.waits_inserted, rounds) << "each read waits for the write before it";
  EXPECT_EQ(stats.events_recorded, stats.waits_inserted);
  device.destroy_stream(writer);
  EXPECT_EQ(read_ok(device, y.whole()), bytes_of(8, rounds));
  EXPECT_EQ(read_ok(device, x.whole()), bytes_of(8, rounds));
  device.destroy_stream(reader);
  EXPECT_EQ(backend.pending(), 0u);
}

// ---- O3, P1: pages go back to storage only after queued work drained ------
//
// Device::cleanup and the out-of-memory retry (release_free_memory) hand
// free pages back to storage without finishing the streams first: they
// rely on the storage's deallocate waiting for queued work, as cudaFree
// does. DeferredHostBackend's storage must keep that promise, or a page
// could be handed to someone else while a queued item still writes it.
// These storages sit under the backend's adaptor and note, at each page's
// return, whether the queued item that writes it has run; they would see
// "not yet" if the adaptor did not drain the queues.

/// Host pages; records, for every page given back, whether `ran` was set.
class WatchingStorage final : public Storage {
 public:
  WatchingStorage(const bool& ran, std::size_t max_pages)
      : ran_(ran)
      , max_pages_(max_pages) {}
  [[nodiscard]] std::uint64_t alignment() const noexcept override { return pages_.alignment(); }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
    if (live_ == max_pages_) {
      throw StorageExhausted("WatchingStorage: no page left");
    }
    const StorageHandle handle = pages_.allocate(size);
    ++live_;
    return handle;
  }
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    returned_after_work.push_back(ran_);
    --live_;
    pages_.deallocate(handle, size);
  }
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return pages_.resolve(handle);
  }
  [[nodiscard]] std::string name() const override { return "watching host"; }

  std::vector<bool> returned_after_work; ///< Per page given back: had the item run?

 private:
  HostStorage pages_;
  const bool& ran_;
  std::size_t max_pages_;
  std::size_t live_ = 0;
};

/// Launches on `stream` a body that queues a write of `buffer` (it runs
/// when the backend drains) and sets `ran` when that write runs.
void queue_late_write(Device& device, DeferredHostBackend& backend, StreamId stream,
                      const Allocation& buffer, bool& ran) {
  const Binding writes[] = {buffer.whole()};
  static_cast<void>(
      device.launch(stream, "late write", {}, writes, [&](const KernelContext& context) {
        const std::span<std::byte> out = context.write(0);
        backend.enqueue(context, [out, &ran] {
          std::fill(out.begin(), out.end(), std::byte{0x5a});
          ran = true;
        });
        return LaunchOutcome::success();
      }));
}

TEST(DeferredHostBackendPages, P1_CleanupGivesAPageBackOnlyAfterTheQueuedWorkWritingItHasRun) {
  bool ran = false;
  WatchingStorage storage(ran, 64);
  DeferredHostBackend backend(storage, MemoryConfig{});
  Device device(backend);
  const StreamId stream = device.create_stream();
  {
    const Allocation buffer = device.create_buffer(4096, stream);
    queue_late_write(device, backend, stream, buffer, ran);
    EXPECT_FALSE(ran); // Queued, not run: nothing blocked yet.
  }                    // Dropped with its write still queued.
  device.cleanup();
  ASSERT_FALSE(storage.returned_after_work.empty()); // The page did go back.
  EXPECT_TRUE(ran);
  for (const bool after : storage.returned_after_work) {
    EXPECT_TRUE(after); // O3, P1: never while the queued write could still touch it.
  }
}

TEST(DeferredHostBackendPages, O3_TheOutOfMemoryRetryGivesPagesBackOnlyAfterQueuedWorkHasRun) {
  bool ran = false;
  WatchingStorage storage(ran, 1); // One page: a second size class cannot get its own.
  DeferredHostBackend backend(storage, MemoryConfig{});
  Device device(backend);
  const StreamId stream = device.create_stream();
  {
    const Allocation buffer = device.create_buffer(4096, stream);
    queue_late_write(device, backend, stream, buffer, ran);
  }
  // A buffer past the sliced pool's largest slice (the arena's) needs a
  // page: the only one is free but held by the sliced pool, so the retry
  // gives it back (release_free_memory) and asks again.
  const std::uint64_t other = MemoryConfig{}.sliced.back().max_slice * 16;
  const Allocation big = device.create_buffer(other, stream);
  EXPECT_TRUE(ran);
  ASSERT_FALSE(storage.returned_after_work.empty());
  for (const bool after : storage.returned_after_work) {
    EXPECT_TRUE(after);
  }
  EXPECT_EQ(big.size(), other);
}

} // namespace
} // namespace taintpool
