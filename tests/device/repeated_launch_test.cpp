// Pins: what a plain launch must answer when its bindings equal an earlier
// launch's (issue 11, item 7; launch10). A Device may keep what resolving
// a launch's bindings produced and reuse it for the next launch of the same
// bindings (bench/RESULTS.md, launch10, tried such a cache). Whatever it
// keeps, a plain launch must answer exactly as if it had resolved every
// binding afresh: a binding whose allocation ended is NotFound even when a
// new allocation took its memory and its record (P3); a binding of the same
// allocation with another range is checked as any other (P3); keeping a
// resolution never keeps a buffer (P1: it ends at the sweep after its last
// handle goes, when the observer hears of it); a destroyed stream is
// NotFound (O1); and a taint that arrived between two launches of the same
// bindings is seen by the second (S1). Each test repeats the same bindings
// first, so a cache would be warm on exactly the launch the rule is about.
// These hold on main without a cache too: they are the contract a cache
// must keep, and a planted bug in launch10's cache (the owner check
// skipped) failed the first, the third and the differential (seed 3).
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/allocation_observer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

LaunchOutcome succeed(const KernelContext&) {
  return LaunchOutcome::success();
}

LaunchOutcome copy_first(const KernelContext& context) {
  std::copy(context.read(0).begin(), context.read(0).end(), context.write(0).begin());
  return LaunchOutcome::success();
}

/// Records every allocation the manager ends, in order.
class EndWatcher final : public AllocationObserver {
 public:
  void on_page_added(const std::byte*, std::uint64_t) override {}
  void on_page_removed(const std::byte*, std::uint64_t) noexcept override {}
  void on_bound(AllocationId, const std::byte*, std::uint64_t) noexcept override {}
  void on_released(AllocationId allocation, const std::byte*, std::uint64_t) noexcept override {
    ended.push_back(allocation);
  }
  std::vector<AllocationId> ended;
};

ErrorKind kind_thrown_by_launch(Device& device, StreamId stream, const Binding& read,
                                const Binding& write) {
  const Binding reads[] = {read};
  const Binding writes[] = {write};
  try {
    static_cast<void>(device.launch(stream, "k", reads, writes, copy_first));
  } catch (const Exception& error) {
    return error.kind();
  }
  ADD_FAILURE() << "the launch did not throw";
  return ErrorKind::Generic;
}

TEST(RepeatedLaunch, P3_ARepeatedBindingWhoseBufferEndedIsNotFoundEvenWhenANewBufferTookItsMemory) {
  HostBackend backend;
  Device device(backend);
  Allocation in = device.create_buffer(std::vector<std::byte>(64, std::byte{1}));
  const Allocation out = device.create_buffer(64);
  const Binding in_whole = in.whole();
  const Binding reads[] = {in_whole};
  const Binding writes[] = {out.whole()};
  for (int round = 0; round < 3; ++round) { // Warm: the same bindings again and again.
    ASSERT_EQ(device.launch("k", reads, writes, copy_first).status, LaunchStatus::Ran);
  }
  const std::byte* old_bytes = device.memory().info(in.id())->data;
  in = Allocation(); // Ends at the next sweep; its slice and record go back to the pool.
  device.sweep();
  // A new buffer of the same size on the same stream reuses the memory
  // (and the slice record) at once: the old id must not resolve to it.
  const Allocation reuse = device.create_buffer(std::vector<std::byte>(64, std::byte{9}));
  ASSERT_EQ(device.memory().info(reuse.id())->data, old_bytes);
  ASSERT_NE(reuse.id(), in_whole.allocation); // P3: ids are never given twice.
  EXPECT_EQ(kind_thrown_by_launch(device, device.default_stream(), in_whole, out.whole()),
            ErrorKind::NotFound);
  // Nothing ran: the output still holds what the last good launch copied.
  EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(64, std::byte{1}));
  // And the new buffer's own binding resolves to its own bytes.
  const Binding fresh_reads[] = {reuse.whole()};
  ASSERT_EQ(device.launch("k", fresh_reads, writes, copy_first).status, LaunchStatus::Ran);
  EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(64, std::byte{9}));
}

TEST(RepeatedLaunch, P3_TheSameBufferUnderAnotherRangeIsCheckedAsAnyBindingIs) {
  HostBackend backend;
  Device device(backend);
  const Allocation in = device.create_buffer(std::vector<std::byte>(32, std::byte{3}));
  const Allocation out = device.create_buffer(32);
  const Binding half{in.id(), ByteRange::of(0, 16)};
  const Binding out_half{out.id(), ByteRange::of(16, 32)};
  const Binding reads[] = {half};
  const Binding writes[] = {out_half};
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(device.submit("k", reads, writes, copy_first).ran());
  }
  // One byte past the end: InvalidBinding, though id and offset are the
  // warm launch's.
  EXPECT_EQ(kind_thrown_by_launch(device, device.default_stream(),
                                  Binding{in.id(), ByteRange::of(0, 33)}, out_half),
            ErrorKind::InvalidBinding);
  // Another valid range of the same buffers: the body sees that range.
  std::uint64_t seen_size = 0;
  std::uint64_t seen_offset = 0;
  const Binding other_reads[] = {Binding{in.id(), ByteRange::of(8, 12)}};
  const Binding other_writes[] = {Binding{out.id(), ByteRange::of(0, 4)}};
  ASSERT_EQ(device
                .launch("k", other_reads, other_writes,
                        [&](const KernelContext& context) {
                          seen_size = context.read(0).size();
                          seen_offset = static_cast<std::uint64_t>(context.write(0).data() -
                                                                   context.read(0).data());
                          return copy_first(context);
                        })
                .status,
            LaunchStatus::Ran);
  EXPECT_EQ(seen_size, 4u);
  const std::byte* in_data = device.memory().info(in.id())->data;
  const std::byte* out_data = device.memory().info(out.id())->data;
  EXPECT_EQ(seen_offset, static_cast<std::uint64_t>(out_data - (in_data + 8)));
  std::vector<std::byte> expected(32, std::byte{0});
  std::fill(expected.begin(), expected.begin() + 4, std::byte{3});
  std::fill(expected.begin() + 16, expected.end(), std::byte{3});
  EXPECT_EQ(device.read_bytes(out.whole()), expected);
}

TEST(RepeatedLaunch, P1_RepeatedLaunchesNeverKeepABufferItEndsAtTheSweepAfterItsLastHandle) {
  HostBackend backend;
  EndWatcher watcher;
  MemoryConfig config = backend.memory_config();
  config.observer = &watcher;
  Device device(backend, config);
  Allocation in = device.create_buffer(std::vector<std::byte>(16, std::byte{4}));
  Allocation out = device.create_buffer(16);
  const AllocationId in_id = in.id();
  const AllocationId out_id = out.id();
  const Binding reads[] = {in.whole()};
  const Binding writes[] = {out.whole()};
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(device.launch("k", reads, writes, copy_first).status, LaunchStatus::Ran);
  }
  in = Allocation();
  out = Allocation();
  EXPECT_TRUE(watcher.ended.empty()); // Not yet discovered.
  device.sweep();
  ASSERT_EQ(watcher.ended.size(), 2u); // Both end at this sweep, warm or not.
  EXPECT_TRUE((watcher.ended[0] == in_id && watcher.ended[1] == out_id) ||
              (watcher.ended[0] == out_id && watcher.ended[1] == in_id));
  EXPECT_EQ(device.memory().stats().allocations, 0u);
  EXPECT_EQ(kind_thrown_by_launch(device, device.default_stream(), reads[0], writes[0]),
            ErrorKind::NotFound);
}

TEST(RepeatedLaunch, O1_P3_ARepeatedLaunchOnADestroyedStreamIsNotFoundAndOneOnItsSuccessorRuns) {
  DeferredHostBackend backend;
  Device device(backend);
  const StreamId stream = device.create_stream();
  const Allocation in = device.create_buffer(std::vector<std::byte>(16, std::byte{6}), stream);
  const Allocation out = device.create_buffer(16, stream);
  const Binding reads[] = {in.whole()};
  const Binding writes[] = {out.whole()};
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(device.launch(stream, "k", reads, writes, copy_first).status, LaunchStatus::Ran);
  }
  device.destroy_stream(stream);
  EXPECT_EQ(kind_thrown_by_launch(device, stream, reads[0], writes[0]), ErrorKind::NotFound);
  // A new stream may take the old one's slot: the same bindings run there
  // (the buffers live on), ordered as any launch on it is.
  const StreamId next = device.create_stream();
  EXPECT_EQ(device.launch(next, "k", reads, writes, copy_first).status, LaunchStatus::Ran);
  EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(16, std::byte{6}));
}

TEST(RepeatedLaunch, S1_ATaintThatArrivedBetweenTwoLaunchesOfTheSameBindingsIsSeenByTheSecond) {
  HostBackend backend;
  Device device(backend);
  const Allocation in = device.create_buffer(std::vector<std::byte>(16, std::byte{2}));
  const Allocation out = device.create_buffer(16);
  const Binding reads[] = {in.whole()};
  const Binding writes[] = {out.whole()};
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(device.launch("k", reads, writes, copy_first).status, LaunchStatus::Ran);
  }
  // The input's producer fails: its bytes now carry that failure.
  const Binding in_writes[] = {in.whole()};
  const LaunchResult failed = device.launch("producer", {}, in_writes, [](const KernelContext&) {
    return LaunchOutcome::failure(Error::launch("bad config"));
  });
  ASSERT_EQ(failed.status, LaunchStatus::Failed);
  bool ran = false;
  const LaunchResult skipped = device.launch("k", reads, writes, [&ran](const KernelContext&) {
    ran = true;
    return LaunchOutcome::success();
  });
  EXPECT_EQ(skipped.status, LaunchStatus::Skipped);
  EXPECT_FALSE(ran);
  EXPECT_EQ(skipped.failure, failed.failure); // S4: the root.
  EXPECT_FALSE(device.stale_reports(out.whole()).empty());
  // Repaired (S5), the same bindings run again and the output is clean.
  static_cast<void>(device.write(in.whole(), std::vector<std::byte>(16, std::byte{8})));
  EXPECT_TRUE(device.submit("k", reads, writes, copy_first).ran());
  EXPECT_EQ(device.read_bytes(out.whole()), std::vector<std::byte>(16, std::byte{8}));
  static_cast<void>(succeed);
}

// A plain launch on the clean path need not point the Device at what it
// resolved (launch9 does so for plans; launch11 tried it for plain
// launches: bench/RESULTS.md): only a launch that leaves that path reads
// them. So every way off it must see its own bindings, never an earlier
// launch's — even when clean launches of other shapes came between and grew
// the scratch the bindings are resolved into (freeing the old one). Each
// case below follows a clean launch of 12 reads and 12 writes (and one of
// 1 and 1), whose outputs are the bytes a stale view would claim.
TEST(
    RepeatedLaunch,
    S1_S2_S3_S6_N1_ALaunchLeavingTheCleanPathClaimsOnlyItsOwnOutputsAfterCleanLaunchesOfOtherShapes) {
  for (const bool never_written : {false, true}) {
    SCOPED_TRACE(never_written ? "FreshBytes::NeverWritten" : "FreshBytes::Trusted");
    HostBackend backend;
    DeviceOptions options;
    options.memory = backend.memory_config();
    if (never_written) {
      options.memory->fresh_bytes = FreshBytes::NeverWritten;
    }
    Device device(backend, options);
    constexpr std::size_t kSide = 12; // Past every scratch's first capacity (8).
    std::vector<Allocation> buffers;
    for (std::size_t index = 0; index < 2 * kSide + 4; ++index) {
      buffers.push_back(
          device.create_buffer(std::vector<std::byte>(32, static_cast<std::byte>(index))));
    }
    const auto whole = [&buffers](std::size_t index) { return buffers[index].whole(); };
    std::vector<Binding> many_reads;
    std::vector<Binding> many_writes;
    for (std::size_t index = 0; index < kSide; ++index) {
      many_reads.push_back(whole(index));
      many_writes.push_back(whole(kSide + index));
    }
    const std::size_t first = 2 * kSide; // The four buffers the cases write.
    const auto clean_launches = [&] {
      const Binding one_read[] = {whole(0)};
      const Binding one_write[] = {whole(1)};
      ASSERT_TRUE(device.launch("one", one_read, one_write, copy_first).ran());
      ASSERT_TRUE(device.submit("many", many_reads, many_writes, copy_first).ran());
    };
    // The clean launches' outputs are clean, whatever a case did.
    const auto others_clean = [&] {
      for (std::size_t index = 0; index < 2 * kSide; ++index) {
        EXPECT_TRUE(device.stale_reports(whole(index)).empty()) << "buffer " << index;
      }
      device.check_invariants();
    };

    // S1: a failed body's failure claims its outputs, and only them.
    clean_launches();
    const Binding failing_reads[] = {whole(first + 3)};
    const Binding failing_writes[] = {whole(first), whole(first + 1)};
    const LaunchResult failed =
        device.launch("fails", failing_reads, failing_writes, [](const KernelContext&) {
          return LaunchOutcome::failure(Error::launch("bad config"));
        });
    ASSERT_EQ(failed.status, LaunchStatus::Failed);
    for (const Binding& output : failing_writes) {
      const std::vector<Report> reports = device.stale_reports(output);
      ASSERT_EQ(reports.size(), 1u);
      EXPECT_EQ(reports[0].failure, failed.failure);
      EXPECT_EQ(reports[0].stale, ByteRange::of(0, 32));
    }
    others_clean();

    // S2: a partial failure releases the bytes it names, of its own output.
    clean_launches();
    const Binding partial_writes[] = {whole(first + 2)};
    const LaunchResult partial =
        device.launch("partial", failing_reads, partial_writes, [](const KernelContext&) {
          return LaunchOutcome::partial(Error::launch("half"),
                                        {WrittenRange{0, ByteRange::of(0, 16)}});
        });
    ASSERT_EQ(partial.status, LaunchStatus::Failed);
    EXPECT_TRUE(device.stale_reports(buffers[first + 2].bind(0, 16)).empty());
    const std::vector<Report> half = device.stale_reports(buffers[first + 2].bind(16, 16));
    ASSERT_EQ(half.size(), 1u);
    EXPECT_EQ(half[0].failure, partial.failure);
    others_clean();

    // S3: a body that throws leaves its own outputs claimed by TornDown.
    clean_launches();
    const Binding thrown_writes[] = {whole(first + 3)};
    EXPECT_THROW(static_cast<void>(device.submit("throws", {}, thrown_writes,
                                                 [](const KernelContext&) -> LaunchOutcome {
                                                   throw std::runtime_error("body threw");
                                                 })),
                 std::runtime_error);
    const std::vector<Report> torn = device.stale_reports(whole(first + 3));
    ASSERT_EQ(torn.size(), 1u);
    EXPECT_EQ(torn[0].root.kind(), ErrorKind::TornDown);
    others_clean();

    // S6: a success naming what it wrote releases that, of its own output;
    // the rest keeps the failure it had (S1's above).
    clean_launches();
    const Binding named_writes[] = {whole(first)};
    ASSERT_TRUE(
        device
            .launch("named", {}, named_writes,
                    [](const KernelContext&) {
                      return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(8, 16)}});
                    })
            .ran());
    EXPECT_TRUE(device.stale_reports(buffers[first].bind(8, 8)).empty());
    const std::vector<Report> kept = device.stale_reports(buffers[first].bind(0, 8));
    ASSERT_EQ(kept.size(), 1u);
    EXPECT_EQ(kept[0].failure, failed.failure);
    others_clean();

    // N1: a fresh buffer's first write releases its never-written bytes, and
    // a failed first write claims them; neither touches another buffer.
    const Allocation fresh = device.create_buffer(32);
    const Allocation fresh_failed = device.create_buffer(32);
    clean_launches();
    const Binding fresh_writes[] = {fresh.whole()};
    ASSERT_TRUE(device.launch("first write", {}, fresh_writes, succeed).ran());
    EXPECT_TRUE(device.stale_reports(fresh.whole()).empty());
    others_clean();
    clean_launches();
    const Binding fresh_failed_writes[] = {fresh_failed.whole()};
    const LaunchResult first_failed =
        device.launch("first write fails", {}, fresh_failed_writes, [](const KernelContext&) {
          return LaunchOutcome::failure(Error::launch("no"));
        });
    ASSERT_EQ(first_failed.status, LaunchStatus::Failed);
    const std::vector<Report> unwritten = device.stale_reports(fresh_failed.whole());
    ASSERT_EQ(unwritten.size(), 1u);
    EXPECT_EQ(unwritten[0].failure, first_failed.failure);
    others_clean();
  }
}

// ------------------------------------------------------------ differential

/// One random program (seeded): buffers made on a few streams and dropped,
/// memory reused by the next buffer, kernels launched again and again on
/// bindings remembered past their buffers' ends, bodies that fail, host
/// repairs, streams destroyed and made; every answer and every remembered
/// binding's bytes or reports go into the transcript. `planned`: each
/// launch goes through a plan made for it and dropped after it, so it
/// resolves every binding afresh, whatever the plain launch may keep.
std::string run_program(std::uint32_t seed, bool planned) {
  std::mt19937 random(seed);
  const auto pick = [&random](std::size_t count) {
    return std::uniform_int_distribution<std::size_t>(0, count - 1)(random);
  };
  DeferredHostBackend backend;
  Device device(backend);
  std::vector<StreamId> streams{device.default_stream()};
  std::vector<std::optional<Allocation>> buffers;
  std::vector<Binding> remembered; // Outlive their buffers on purpose.
  std::string transcript;
  const auto kind_of = [](const Exception& error) { return std::string(name(error.kind())); };
  for (int step = 0; step < 60; ++step) {
    const std::size_t op = pick(10);
    if (op <= 1 || remembered.size() < 3) { // A buffer, remembered whole and as its first half.
      const StreamId stream = streams[pick(streams.size())];
      const std::uint64_t size = pick(2) == 0 ? 16 : 32;
      buffers.emplace_back(
          device.create_buffer(std::vector<std::byte>(size, static_cast<std::byte>(step)), stream));
      remembered.push_back(buffers.back()->whole());
      remembered.push_back(Binding{buffers.back()->id(), ByteRange::of(0, size / 2)});
      continue;
    }
    if (op == 2 && !buffers.empty()) { // P1: dropped; its memory goes to the next buffer.
      buffers[pick(buffers.size())].reset();
      device.sweep();
      continue;
    }
    if (op == 3) { // Streams come and go (O1): the default stays.
      if (streams.size() > 1 && pick(2) == 0) {
        const std::size_t at = 1 + pick(streams.size() - 1);
        device.destroy_stream(streams[at]);
        streams.erase(streams.begin() + static_cast<std::ptrdiff_t>(at));
      } else if (streams.size() < 3) {
        streams.push_back(device.create_stream());
      }
      continue;
    }
    if (op == 4) { // S5: a host write repairs (or is refused).
      const Binding& into = remembered[pick(remembered.size())];
      try {
        static_cast<void>(
            device.write(into, std::vector<std::byte>(into.range.size(), std::byte{0x5a})));
        transcript += "write ok\n";
      } catch (const Exception& error) {
        transcript += "write threw " + kind_of(error) + "\n";
      }
      continue;
    }
    // A launch of one of three fixed binding shapes: the same remembered
    // bindings again and again, so a kept resolution would be reused.
    const std::size_t shape = pick(3);
    const Binding read = remembered[(shape * 2) % remembered.size()];
    const Binding write = remembered[(shape * 2 + 3) % remembered.size()];
    const Binding reads[] = {read};
    const Binding writes[] = {write};
    const StreamId stream = streams[pick(streams.size())];
    const bool fail = pick(6) == 0;
    const auto body = [fail](const KernelContext& context) {
      if (fail) {
        return LaunchOutcome::failure(Error::launch("planted"));
      }
      for (std::size_t index = 0; index < context.write(0).size(); ++index) {
        context.write(0)[index] = context.read(0)[index % context.read(0).size()];
      }
      return LaunchOutcome::success();
    };
    try {
      const LaunchResult result = planned
                                      ? device.launch(device.plan(stream, reads, writes), "k", body)
                                      : device.launch(stream, "k", reads, writes, body);
      transcript += "launch " + std::to_string(static_cast<int>(result.status)) + " " +
                    (result.failure ? std::to_string(result.failure->raw()) : "-") + "\n";
    } catch (const Exception& error) {
      transcript += "launch threw " + kind_of(error) + "\n";
    }
  }
  device.synchronize();
  for (const Binding& binding : remembered) {
    try {
      std::vector<std::byte> into(binding.range.size());
      const ReadOutcome outcome = device.read(binding, into);
      transcript += outcome.ok() ? "bytes " + std::to_string(static_cast<int>(into.front()))
                                 : "stale " + std::to_string(outcome.reports.size());
    } catch (const Exception& error) {
      transcript += "read threw " + kind_of(error);
    }
    transcript += "\n";
  }
  const MemoryStats stats = device.memory().stats();
  transcript += "allocations " + std::to_string(stats.allocations) + " in use " +
                std::to_string(stats.in_use) + " failures " +
                std::to_string(device.graph().size()) + "\n";
  device.check_invariants();
  return transcript;
}

TEST(RepeatedLaunch,
     P1_P3_S1_O1_PlainLaunchesAnswerAsLaunchesThatResolveAfreshOnRandomProgramsWithReusedMemory) {
  // Each program runs twice, one Device after the other (so both mint the
  // same ids): plainly, and with every launch resolved afresh through its
  // own plan. A resolution kept across launches must not change a word.
  for (std::uint32_t seed = 1; seed <= 300; ++seed) {
    const std::string plain = run_program(seed, false);
    const std::string fresh = run_program(seed, true);
    ASSERT_EQ(plain, fresh) << "seed " << seed;
  }
}

} // namespace
} // namespace taintpool
