// Pins: G10 and T6 as numbers — the success-path cycle of a write scope
// (insert a TornDown failure, taint each written buffer whole, release each,
// prune) performs zero heap allocations once warmed up, with or without a few
// long-lived failures in the graph and with failures coming and going; one
// failure over one range never touches the heap; a split or a second failure
// does (so the zero is not the counter being blind). And G8's report:
// its path is allocated once at its length, not regrown per step.
//
// Why: every launch runs that cycle once per written buffer, so an
// allocation there is paid on every launch of every program (DESIGN.md §5).
// A timing would be noisy; an allocation count is exact. This executable
// replaces the global operator new with a counting one (testing/src/replace_new.cpp),
// which is why it is its own test binary. No assertion macro runs inside a
// measured region: the region holds only engine calls.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/report.hpp>
#include <taintpool/taint.hpp>
#include <taintpool/testing/alloc_faults.hpp>
#include <taintpool/testing/heap_allocations.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

using testing::allocations_during;
using testing::allocations_refusing;
using testing::frees_during;

constexpr std::uint64_t kBinding = 1 << 20; // each buffer's whole binding

/// Buffers a scope writes, and the graph they carry failures of.
struct Device {
  ErrorGraph graph;
  std::array<Taint, 8> buffers;

  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device() {
    for (Taint& buffer : buffers) {
      buffer.clear(graph);
    }
  }

  /// One successful write scope over the first `written` buffers (S1).
  void scope(std::size_t written) {
    const FailureId provisional = graph.insert(Error::torn_down());
    for (std::size_t at = 0; at < written; ++at) {
      buffers[at].taint(ByteRange::sized(0, kBinding), provisional, graph);
    }
    for (std::size_t at = 0; at < written; ++at) {
      buffers[at].written(ByteRange::sized(0, kBinding), graph);
    }
    graph.prune(provisional);
  }
};

/// Keeps the optimiser from eliding an allocation the test makes on purpose.
void escape(const void* pointer) {
  asm volatile("" : : "g"(pointer) : "memory");
}

TEST(SteadyState, CountingNewSeesEveryHeapAllocation) {
  // The zero below means something only if the counter counts.
  const std::uint64_t seen = allocations_during([] {
    auto boxed = std::make_unique<std::uint64_t>(7);
    std::vector<int> grown(100);
    std::string long_text(64, 'x');
    escape(boxed.get());
    escape(grown.data());
    escape(long_text.data());
  });
  EXPECT_EQ(seen, 3u);
}

TEST(SteadyState, G10_ASuccessfulWriteScopeAllocatesNothingAfterWarmUp) {
  for (const std::size_t written : {1u, 2u, 4u, 8u}) {
    Device device;
    device.scope(written); // warm-up
    const std::uint64_t allocations = allocations_during([&] {
      for (int round = 0; round < 1000; ++round) {
        device.scope(written);
      }
    });
    EXPECT_EQ(allocations, 0u) << written << " buffers per scope";
    EXPECT_TRUE(device.graph.empty());
    EXPECT_EQ(device.graph.next_id().raw(), 1002u) << "one node minted per scope";
  }
}

TEST(SteadyState, G10_TheProvisionalFailureIsMintedAndDroppedWithoutAllocating) {
  ErrorGraph graph;
  graph.prune(graph.insert(Error::torn_down())); // warm-up
  const std::uint64_t allocations = allocations_during([&] {
    for (int round = 0; round < 1000; ++round) {
      graph.prune(graph.insert(Error::torn_down()));
    }
  });
  EXPECT_EQ(allocations, 0u);
}

TEST(SteadyState, G10_AFewLongLivedFailuresDoNotMakeTheCycleAllocate) {
  Device device;
  // Three stale buffers, each carrying a real failure that outlives every
  // scope below; their nodes leave the newest slot for the table as soon as
  // the next scope inserts.
  std::array<Taint, 3> stale;
  for (std::size_t at = 0; at < stale.size(); ++at) {
    const FailureId failure = device.graph.insert(
        Error::launch("kernel " + std::to_string(at) + " failed: an illegal memory access"));
    stale[at].taint(ByteRange::sized(0, kBinding), failure, device.graph);
  }
  device.scope(8); // warm-up: the table grows here, once
  const std::uint64_t allocations = allocations_during([&] {
    for (int round = 0; round < 1000; ++round) {
      device.scope(8);
    }
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(device.graph.size(), 3u) << "the long-lived failures are still there";
  for (Taint& taint : stale) {
    taint.clear(device.graph);
  }
  EXPECT_TRUE(device.graph.empty());
}

TEST(SteadyState, G10_FailuresComingAndGoingBetweenScopesAllocateNothingOnceWarm) {
  // A failing launch leaves a buffer stale for a while, then a later write
  // repairs it: the failure's node is inserted, retired to the table, and
  // erased — over and over. Once the table has grown, none of it allocates.
  Device device;
  Taint stale;
  // Short messages: the Error's own text must not be what allocates.
  const auto churn = [&](int rounds) {
    for (int round = 0; round < rounds; ++round) {
      const FailureId failure = device.graph.insert(Error::launch("oom"));
      stale.taint(ByteRange::sized(0, kBinding), failure, device.graph);
      device.scope(4);
      device.scope(4);
      stale.written(ByteRange::sized(0, kBinding), device.graph);
    }
  };
  churn(4); // warm-up
  const std::uint64_t allocations = allocations_during([&] { churn(500); });
  EXPECT_EQ(allocations, 0u);
  EXPECT_TRUE(device.graph.empty());
}

TEST(SteadyState, T6_OneFailureOverOneRangeNeverTouchesTheHeap) {
  ErrorGraph graph;
  const FailureId failure = graph.insert(Error::launch("f"));
  Taint taint;
  const std::uint64_t allocations = allocations_during([&] {
    taint.taint(ByteRange::of(0, 100), failure, graph);
    taint.taint(ByteRange::of(100, 200), failure, graph); // fuses
    taint.written(ByteRange::of(0, 50), graph);           // trims an edge
    taint.written(ByteRange::of(0, 200), graph);          // releases
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_TRUE(graph.empty());
}

TEST(SteadyState, T6_ASplitOrASecondFailureSpillsToTheHeap) {
  ErrorGraph graph;
  const FailureId first = graph.insert(Error::launch("first"));
  const FailureId second = graph.insert(Error::launch("second"));
  Taint split;
  Taint shared;
  split.taint(ByteRange::of(0, 100), first, graph);
  shared.taint(ByteRange::of(0, 100), first, graph);
  const std::uint64_t for_split =
      allocations_during([&] { split.written(ByteRange::of(40, 60), graph); });
  const std::uint64_t for_second =
      allocations_during([&] { shared.taint(ByteRange::of(50, 60), second, graph); });
  EXPECT_EQ(for_split, 1u);
  EXPECT_TRUE(split.is_spilled());
  EXPECT_EQ(for_second, 1u);
  EXPECT_TRUE(shared.is_spilled());
  split.clear(graph);
  shared.clear(graph);
  EXPECT_TRUE(graph.empty());
}

/// A graph whose one failure kept a chain of `length` skips: launch k needed
/// allocation k and produced k + 1, so a report on `length + 1` walks the
/// whole chain (G8). Short kernel names, so a record's copy allocates only
/// its `produced` list.
FailureId chain_of_skips(ErrorGraph& graph, std::uint64_t length) {
  const FailureId root = graph.insert(Error::launch("f"));
  for (std::uint64_t at = 1; at <= length; ++at) {
    graph.skipped(
        root, SkipRecord{
                  "k", AllocationId::from_raw(at), {AllocationId::from_raw(at + 1)}, false, false});
  }
  return root;
}

TEST(SteadyState, CountingDeleteSeesEveryHeapFree) {
  // The counts of one below mean something only if frees are counted.
  auto boxed = std::make_unique<std::uint64_t>(7);
  std::string long_text(64, 'x');
  escape(boxed.get());
  escape(long_text.data());
  const std::uint64_t freed = frees_during([&] {
    boxed.reset();
    std::string().swap(long_text); // Assigning "" could keep the buffer.
  });
  EXPECT_EQ(freed, 2u);
}

TEST(SteadyState, ARefusedAllocationIsCountedAsACallAndARefusalButGivesNoBlock) {
  // replay_main.cpp's -balance compares the blocks handed out (calls less
  // refusals) with the frees, as libFuzzer's malloc hooks do: an input whose
  // injected fault fires must not read as one that keeps a block.
  const std::uint64_t calls = testing::heap_allocations();
  const std::uint64_t refused = testing::heap_refusals();
  const std::uint64_t frees = testing::heap_frees();
  bool threw = false;
  testing::arm_allocation_fault(0);
  try {
    escape(std::make_unique<std::uint64_t>(7).get());
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  static_cast<void>(testing::disarm_allocation_fault());
  EXPECT_TRUE(threw);
  EXPECT_EQ(testing::heap_allocations() - calls, 1u);
  EXPECT_EQ(testing::heap_refusals() - refused, 1u);
  EXPECT_EQ(testing::heap_frees() - frees, 0u);
}

TEST(SteadyState, R4_APrunedFailureFreesItsMessageThenNotWhenItsSlotIsNextUsed) {
  // A failure's state lives as long as something carries it (R4): its
  // message too. Three failures: the newest sits in the graph's inline
  // slot, the older ones move to the table (IdTable erase's backward shift
  // moves nodes too). Each prune frees exactly its message; a vacated slot
  // that kept the buffer (std::string keeps capacity when an empty message
  // is assigned over it) would free nothing here and free it later, in
  // whatever operation next filled the slot.
  const std::string long_message(80, 'm');
  ErrorGraph graph;
  std::vector<FailureId> failures;
  for (int at = 0; at < 3; ++at) {
    failures.push_back(graph.insert(Error::launch(long_message)));
  }
  for (const std::size_t at : {1u, 2u, 0u}) {
    const std::uint64_t freed = frees_during([&] { graph.prune(failures[at]); });
    EXPECT_EQ(freed, 1u) << "failure " << at << "'s message goes with its node";
  }
  EXPECT_EQ(graph.size(), 0u);
  // The slots hold no old buffer: a new failure moved into one frees
  // nothing (a kept buffer would be handed to the moved-from argument by
  // std::string's move-assignment, and freed with it here).
  Error next = Error::launch(long_message);
  const std::uint64_t later = frees_during([&] {
    failures[0] = graph.insert(std::move(next));
    next = Error::torn_down();
  });
  EXPECT_EQ(later, 0u) << "the new failure's slot was empty";
  graph.prune(failures[0]);
}

TEST(SteadyState, R4_GrowingTheTableMovesEveryMessageWithoutCopyingOrFreeingIt) {
  // The table moves every live node when it grows (and the inline slots
  // move theirs into it): each message changes hands, never copied, never
  // freed, so a growth is the new slots' one allocation and the old slots'
  // one free, and every failure still reads its own words (issue 13,
  // forty-third round: FailureNode's moves rebuild the error in place).
  ErrorGraph graph;
  std::vector<FailureId> failures;
  std::vector<std::string> words;
  failures.reserve(40); // Only the graph's allocations are counted below.
  std::size_t growths = 0;
  for (int at = 0; at < 40; ++at) {
    words.push_back("failure " + std::to_string(at) + " with a message past the inline buffer");
    Error error = Error::launch(words.back());
    const std::size_t capacity = graph.table_capacity();
    std::uint64_t freed = 0;
    const std::uint64_t made = allocations_during(
        [&] { freed = frees_during([&] { failures.push_back(graph.insert(std::move(error))); }); });
    const bool grew = graph.table_capacity() != capacity;
    growths += grew ? 1 : 0;
    EXPECT_EQ(made, grew ? 1u : 0u) << "insert " << at;
    EXPECT_EQ(freed, grew && capacity != 0 ? 1u : 0u) << "insert " << at;
  }
  EXPECT_GE(growths, 3u);
  for (std::size_t at = 0; at < failures.size(); ++at) {
    ASSERT_NE(graph.error(failures[at]), nullptr) << at;
    EXPECT_EQ(graph.error(failures[at])->message(), words[at]) << at;
    EXPECT_EQ(graph.error(failures[at])->kind(), ErrorKind::Launch) << at;
  }
  for (const FailureId failure : failures) {
    EXPECT_EQ(frees_during([&] { graph.prune(failure); }), 1u) << "its message goes with it";
  }
  EXPECT_TRUE(graph.empty());
}

TEST(SteadyState, G8_AReportAllocatesItsPathOnceWhateverItsLength) {
  // The path is reserved once, at the first step, for every record older
  // than it; the rest is one copy per record of its `produced` list. A
  // path regrown step by step would allocate 1, 2, 3, 4 times for lengths
  // 1, 2, 4, 8, beyond the copies.
  for (const std::uint64_t length : {1u, 2u, 3u, 5u, 8u, 16u}) {
    ErrorGraph graph;
    const FailureId root = chain_of_skips(graph, length);
    std::size_t path = 0;
    const std::uint64_t allocations = allocations_during([&] {
      const Report report = graph.report(root, AllocationId::from_raw(length + 1));
      path = report.path.size();
    });
    ASSERT_EQ(path, length) << "the walk reaches the chain's first launch";
    EXPECT_EQ(allocations, 1 + length) << "a path of " << length;
    const Report report = graph.report(root, AllocationId::from_raw(length + 1));
    EXPECT_EQ(report.origin, AllocationId::from_raw(1)) << "the chain's first input";
    EXPECT_EQ(report.path.front().needed, AllocationId::from_raw(length)) << "newest first";
  }
}

TEST(SteadyState, G8_AReportWithoutAPathAllocatesNoPath) {
  ErrorGraph graph;
  const FailureId root = chain_of_skips(graph, 4);
  const std::uint64_t allocations =
      allocations_during([&] { (void)graph.report(root, AllocationId::from_raw(99)); });
  EXPECT_EQ(allocations, 0u) << "nothing produced 99: the read is the origin";
}

TEST(SteadyState, G8_N3_APrintedReportIsOneAllocationHoweverWideItsWords) {
  // The widest words there are: 16 steps of every kind with the largest
  // allocation numbers of the last id space, a long root message, stale
  // bytes at the top of the address space and the cap's note. The printer
  // appends into one string sized once (report.cpp's room_for); a chain of
  // temporaries allocated a dozen times and more per step.
  const AllocationId widest = AllocationId::from_raw(UINT64_MAX);
  std::vector<SkipRecord> path;
  for (std::size_t at = 0; at < ErrorGraph::kept_skip_records; ++at) {
    path.push_back(SkipRecord{std::string(40, 'k'), widest, {widest}, at % 3 != 0, at % 3 == 2});
  }
  for (const ErrorKind kind : {ErrorKind::Communicator, ErrorKind::NeverWritten}) {
    Report report{FailureId::from_raw(UINT64_MAX),
                  Error(kind, std::string(200, 'm')),
                  widest,
                  ByteRange::of(UINT64_MAX - 1, UINT64_MAX),
                  path,
                  widest,
                  UINT64_MAX,
                  true};
    for (const bool with_path : {true, false}) {
      if (!with_path) {
        report.path.clear();
      }
      std::string text;
      const std::uint64_t allocations = allocations_during([&] { text = to_string(report); });
      EXPECT_EQ(allocations, 1u) << text;
      EXPECT_NE(text.find("allocation 4503599627370495 (memory 4095)"), std::string::npos)
          << "the widest words were printed: " << text;
    }
  }
}

TEST(SteadyState, R1_ARefcountCheckWithAKeptScratchAllocatesNothingOnceWarm) {
  // check_refcounts with the caller's scratch: the first check sizes its
  // list, every later one over as many claims allocates nothing (the
  // fuzzers check every few ops). Without a scratch it allocates (so the
  // zero is not the counter being blind).
  Device device;
  const FailureId a = device.graph.insert(Error::launch("a"));
  const FailureId b = device.graph.insert(Error::launch("b"));
  for (std::size_t at = 0; at < device.buffers.size(); ++at) {
    device.buffers[at].taint(ByteRange::of(0, 8), a, device.graph);
    if (at % 2 == 0) {
      device.buffers[at].taint(ByteRange::of(16, 24), b, device.graph);
    }
  }
  std::vector<const Taint*> carriers;
  for (const Taint& buffer : device.buffers) {
    carriers.push_back(&buffer);
  }
  RefcountScratch scratch;
  check_refcounts(device.graph, carriers, {}, scratch);
  const std::uint64_t warm =
      allocations_during([&] { check_refcounts(device.graph, carriers, {}, scratch); });
  EXPECT_EQ(warm, 0u);
  const std::uint64_t fresh =
      allocations_during([&] { check_refcounts(device.graph, carriers, {}); });
  EXPECT_GT(fresh, 0u);
}

// Each violation and bad range is its text in one string sized once and
// the exception's own copy of it; nothing else. The operator+ chains before
// built a temporary per piece, and taint_fuzzer provokes these on purpose
// (issue 13, twenty-ninth round). refusal_text_test.cpp pins the words.
TEST(SteadyState, G2_G3_G8_T1_EachRefusalAllocatesItsTextAndTheExceptionsCopyOnly) {
  ErrorGraph graph;
  const FailureId gone = FailureId::from_raw(99);
  const FailureId held = graph.insert(Error::generic("held"));
  EXPECT_EQ(allocations_refusing<std::logic_error>([&] { graph.tag(gone); }), 2u) << "tag";
  EXPECT_EQ(allocations_refusing<std::logic_error>([&] { graph.untag(gone); }), 2u) << "untag";
  EXPECT_EQ(allocations_refusing<std::logic_error>([&] { graph.untag(held); }), 2u)
      << "untag below zero";
  EXPECT_EQ(allocations_refusing<std::logic_error>(
                [&] { static_cast<void>(graph.report(gone, AllocationId::from_raw(1))); }),
            2u)
      << "report";
  EXPECT_EQ(
      allocations_refusing<std::invalid_argument>([] { static_cast<void>(ByteRange::of(9, 3)); }),
      2u)
      << "an inverted range";
  EXPECT_EQ(allocations_refusing<std::overflow_error>(
                [] { static_cast<void>(ByteRange::sized(UINT64_MAX, 2)); }),
            2u)
      << "an overflowing range";
  graph.prune(held);
}

/// A record with `kernel` that needed allocation `needed` and produced
/// `produced` more, from needed + 1 on.
SkipRecord wide_record(const char* kernel, std::uint64_t needed, std::uint64_t produced) {
  SkipRecord record{kernel, AllocationId::from_raw(needed), {}, false, false};
  for (std::uint64_t at = 1; at <= produced; ++at) {
    record.produced.push_back(AllocationId::from_raw(needed + at));
  }
  return record;
}

constexpr const char* kHeapKernel = "a_kernel_name_long_enough_for_the_heap";

// A record the caller keeps, copied in once the ring is full, goes into the
// buffers of the record it drops: no allocation when those are as wide.
// Before (skipped took its record by value), the copy was the kernel's
// string and the produced list: 2 a skip, and a fuzzer recording bursts
// past the cap paid them for every record (issue 13, thirtieth round).
TEST(SteadyState, G7_ASkipCopiedIntoAFullRingAllocatesNothingWhenTheDroppedRecordIsAsWide) {
  ErrorGraph graph;
  const FailureId root = graph.insert(Error::launch("f"));
  for (std::uint64_t at = 1; at <= ErrorGraph::kept_skip_records; ++at) {
    graph.skipped(root, wide_record(kHeapKernel, at, 3));
  }
  const SkipRecord kept = wide_record(kHeapKernel, 100, 3);
  EXPECT_EQ(allocations_during([&] { graph.skipped(root, kept); }), 0u) << "full ring";
  const SkipRecord narrower = wide_record("k", 200, 1);
  EXPECT_EQ(allocations_during([&] { graph.skipped(root, narrower); }), 0u) << "narrower";
  EXPECT_EQ(graph.skips_recorded(root), ErrorGraph::kept_skip_records + 2);
  const std::vector<SkipRecord> records = graph.skip_records(root);
  ASSERT_EQ(records.size(), ErrorGraph::kept_skip_records);
  EXPECT_EQ(records[records.size() - 2], kept);
  EXPECT_EQ(records.back(), narrower) << "a narrower record is itself, not its slot's leftovers";
  graph.prune(root);
}

// G7 either way: records copied in and records moved in keep the same
// newest sixteen, oldest first, whatever widths meet in a slot.
TEST(SteadyState, G7_SkipsCopiedInKeepWhatSkipsMovedInKeep) {
  ErrorGraph copied;
  ErrorGraph moved;
  const FailureId a = copied.insert(Error::launch("f"));
  const FailureId b = moved.insert(Error::launch("f"));
  ASSERT_EQ(a, b);
  for (std::uint64_t at = 1; at <= 3 * ErrorGraph::kept_skip_records + 5; ++at) {
    const SkipRecord record =
        wide_record(at % 3 == 0 ? kHeapKernel : (at % 3 == 1 ? "" : "linear"), at, at % 4);
    copied.skipped(a, record);
    moved.skipped(b, SkipRecord(record));
    ASSERT_EQ(copied.skip_records(a), moved.skip_records(b)) << "after record " << at;
  }
  EXPECT_EQ(copied.skips_recorded(a), moved.skips_recorded(b));
  copied.prune(a);
  moved.prune(b);
}

// The copy's room is made before the log changes: a std::bad_alloc on any
// of its allocations — a new slot's record, or a full ring's slot too
// narrow for the record — leaves the records and the count as they were
// (taint.hpp "Contract", G10).
TEST(SteadyState, G7_G10_ASkipCopiedInThatRunsOutOfMemoryChangesNothing) {
  for (const std::uint64_t before :
       {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{ErrorGraph::kept_skip_records + 2}}) {
    for (std::uint64_t fault = 0;; ++fault) {
      ErrorGraph graph;
      const FailureId root = graph.insert(Error::launch("f"));
      for (std::uint64_t at = 1; at <= before; ++at) {
        graph.skipped(root, wide_record("k", at, 1)); // narrow: a wide copy needs room
      }
      const std::vector<SkipRecord> records = graph.skip_records(root);
      const SkipRecord wide = wide_record(kHeapKernel, 500, 3);
      bool threw = false;
      testing::arm_allocation_fault(fault);
      try {
        graph.skipped(root, wide);
      } catch (const std::bad_alloc&) {
        threw = true;
      }
      const bool fired = testing::disarm_allocation_fault() < 0;
      EXPECT_EQ(threw, fired) << "before " << before << ", fault " << fault;
      if (!threw) {
        EXPECT_EQ(graph.skips_recorded(root), before + 1);
        EXPECT_EQ(graph.skip_records(root).back(), wide);
        EXPECT_GT(fault, 0u) << "the copy allocates";
        graph.prune(root);
        break;
      }
      EXPECT_EQ(graph.skips_recorded(root), before) << "before " << before << ", fault " << fault;
      EXPECT_EQ(graph.skip_records(root), records) << "before " << before << ", fault " << fault;
      graph.prune(root);
    }
  }
}

} // namespace
} // namespace taintpool
