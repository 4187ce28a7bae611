// Pins: the never-written mode (issue 15; proposed rules N1-N3) and that the
// default, FreshBytes::Trusted, is D1 as it always was.
//
//   N1  under FreshBytes::NeverWritten every byte of a new allocation is
//       claimed by one per-memory failure of kind NeverWritten, tagged once
//       by every allocation that still carries never-written bytes and gone
//       exactly when the last one lets go (R1-R4 unchanged); size 0 carries
//       nothing; writes release as usual (T2, S1, S6).
//   N2  a launch that reads never-written bytes is skipped (S1), or, under
//       UnwrittenReads::Report, runs and lists them in its result.
//   N3  a read of them fails naming the allocation, the bytes, and the
//       creating site when the caller gave one.
//
// Every test ends with check_invariants(): R1-R3 across every slice.
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool {
namespace {

std::vector<std::byte> bytes_of(std::size_t size, std::uint8_t value) {
  return std::vector<std::byte>(size, static_cast<std::byte>(value));
}

/// Output 0 = input 0 + 1, byte by byte.
LaunchOutcome add_one(const KernelContext& context) {
  const auto in = context.read(0);
  const auto out = context.write(0);
  for (std::size_t at = 0; at < out.size(); ++at) {
    out[at] = static_cast<std::byte>(static_cast<std::uint8_t>(in[at]) + 1);
  }
  return LaunchOutcome::success();
}

/// Fills every output with 7.
LaunchOutcome fill_sevens(const KernelContext& context) {
  for (std::size_t index = 0; index < context.writes(); ++index) {
    std::fill(context.write(index).begin(), context.write(index).end(), std::byte{7});
  }
  return LaunchOutcome::success();
}

DeviceOptions never_written(UnwrittenReads reads = UnwrittenReads::Skip) {
  DeviceOptions options;
  options.memory = MemoryConfig{};
  options.memory->fresh_bytes = FreshBytes::NeverWritten;
  options.unwritten_reads = reads;
  return options;
}

/// N3: a read that met never-written bytes and nothing else: one report,
/// rooted at the NeverWritten failure, naming exactly `stale`.
::testing::AssertionResult only_never_written(const ReadOutcome& outcome, ByteRange stale) {
  if (outcome.reports.size() != 1) {
    return ::testing::AssertionFailure() << outcome.reports.size() << " reports, expected 1";
  }
  const Report& report = outcome.reports[0];
  if (report.root.kind() != ErrorKind::NeverWritten || report.stale != stale) {
    return ::testing::AssertionFailure() << "the report: " << to_string(report);
  }
  return ::testing::AssertionSuccess();
}

/// A device in the never-written mode on the host backend.
struct Fixture {
  explicit Fixture(UnwrittenReads reads = UnwrittenReads::Skip)
      : device(host, never_written(reads)) {}
  HostBackend host;
  Device device;
};

ReadOutcome read_all(Device& device, const Binding& binding) {
  std::vector<std::byte> out(static_cast<std::size_t>(binding.range.size()));
  return device.read(binding, out);
}

TEST(FreshBytes, D1_TrustedIsTheDefaultAndAFreshBufferReadsAsWritten) {
  EXPECT_EQ(MemoryConfig{}.fresh_bytes, FreshBytes::Trusted);
  EXPECT_EQ(DeviceOptions{}.unwritten_reads, UnwrittenReads::Skip);
  HostBackend host;
  Device device(host);
  const Allocation buffer = device.create_buffer(256, "ignored in trusted mode");
  EXPECT_TRUE(device.memory().info(buffer.id())->taint->is_clean());
  EXPECT_FALSE(device.memory().never_written_failure().has_value());
  EXPECT_TRUE(device.graph().empty());
  EXPECT_TRUE(read_all(device, buffer.whole()).ok());
  device.check_invariants();
}

TEST(FreshBytes, N1_EveryFreshBufferIsClaimedWhollyByOneSharedNeverWrittenFailure) {
  Fixture f;
  const Allocation a = f.device.create_buffer(256);
  const Allocation b = f.device.create_buffer(1000);
  const std::optional<FailureId> node = f.device.memory().never_written_failure();
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(f.device.graph().size(), 1u);
  EXPECT_EQ(f.device.graph().tags(*node), 2u); // R1: one tag per carrier.
  ASSERT_NE(f.device.graph().error(*node), nullptr);
  EXPECT_EQ(*f.device.graph().error(*node), Error::never_written());
  for (const Allocation* buffer : {&a, &b}) {
    const Taint& taint = *f.device.memory().info(buffer->id())->taint;
    EXPECT_FALSE(taint.is_spilled()); // T6: the inline claim.
    std::vector<std::pair<FailureId, ByteRange>> claims;
    taint.for_each_claim([&](FailureId id, ByteRange range) { claims.emplace_back(id, range); });
    ASSERT_EQ(claims.size(), 1u);
    EXPECT_EQ(claims[0].first, *node);
    EXPECT_EQ(claims[0].second, ByteRange::of(0, buffer->size()));
  }
  f.device.check_invariants();
}

TEST(FreshBytes, N1_ASizeZeroBufferCarriesNothingAndMintsNothing) {
  Fixture f;
  const Allocation empty = f.device.create_buffer(0);
  EXPECT_TRUE(f.device.graph().empty());
  EXPECT_FALSE(f.device.memory().never_written_failure().has_value());
  EXPECT_TRUE(read_all(f.device, empty.whole()).ok());
  f.device.check_invariants();
}

TEST(FreshBytes, N1_TheNodeDiesWithItsLastCarrierAndTheNextBufferMintsANewOne) {
  Fixture f;
  Allocation a = f.device.create_buffer(64);
  const Allocation b = f.device.create_buffer(64);
  const FailureId first = *f.device.memory().never_written_failure();
  a.reset();
  f.device.sweep(); // P1: a's tag goes with it.
  EXPECT_EQ(f.device.graph().tags(first), 1u);
  EXPECT_TRUE(f.device.write(b.whole(), bytes_of(64, 1)).ran());
  EXPECT_FALSE(f.device.graph().contains(first)); // G3: the last carrier let go.
  EXPECT_TRUE(f.device.graph().empty());
  const Allocation c = f.device.create_buffer(64);
  const FailureId second = *f.device.memory().never_written_failure();
  EXPECT_LT(first, second); // G1: never reused.
  EXPECT_EQ(f.device.graph().tags(second), 1u);
  f.device.check_invariants();
}

TEST(FreshBytes, R4_WithEveryHandleDroppedTheGraphIsEmpty) {
  Fixture f;
  {
    const Allocation a = f.device.create_buffer(64);
    const Allocation b = f.device.create_buffer(4096);
    EXPECT_EQ(f.device.graph().size(), 1u);
  }
  f.device.sweep();
  EXPECT_TRUE(f.device.graph().empty());
  f.device.check_invariants();
}

TEST(FreshBytes, N3_AReadOfNeverWrittenBytesNamesTheAllocationAndTheBytes) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(1024);
  ASSERT_TRUE(f.device.write(buffer.bind(0, 256), bytes_of(256, 1)).ran());
  ASSERT_TRUE(f.device.write(buffer.bind(512, 512), bytes_of(512, 1)).ran());
  EXPECT_TRUE(read_all(f.device, buffer.bind(0, 256)).ok()); // T2: written bytes read.
  const ReadOutcome outcome = read_all(f.device, buffer.whole());
  ASSERT_TRUE(only_never_written(outcome, ByteRange::of(256, 512)));
  EXPECT_EQ(to_string(outcome.reports[0]),
            to_string(buffer.id()) + " bytes [256, 512) were never written since it was created");
  EXPECT_THROW(static_cast<void>(f.device.read_bytes(buffer.whole())), StaleRead);
  f.device.check_invariants();
}

TEST(FreshBytes, N3_AReportNamesTheCreatingSiteTheCallerGave) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(64, "weights.cpp:12");
  const std::vector<Report> reports = f.device.stale_reports(buffer.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(to_string(reports[0]), to_string(buffer.id()) +
                                       " bytes [0, 64) were never written since it was created "
                                       "(created at weights.cpp:12)");
  f.device.check_invariants();
}

TEST(FreshBytes, S1_ALaunchReadingNeverWrittenBytesIsSkippedAndItsOutputCarriesThePath) {
  Fixture f;
  const Allocation input = f.device.create_buffer(64, "input");
  const Allocation output = f.device.create_buffer(64);
  ASSERT_TRUE(f.device.write(output.whole(), bytes_of(64, 9)).ran());
  const LaunchResult result =
      f.device.launch("softmax", {input.whole()}, {output.whole()}, add_one);
  EXPECT_EQ(result.status, LaunchStatus::Skipped);
  EXPECT_EQ(result.failure, f.device.memory().never_written_failure());
  EXPECT_EQ(result.needed, input.id());
  EXPECT_TRUE(result.unwritten.empty());
  const std::vector<Report> reports = f.device.stale_reports(output.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(
      to_string(reports[0]),
      to_string(output.id()) + " bytes [0, 64) cannot be read: " + to_string(*result.failure) +
          " (never written)\n  softmax was skipped: it needed " + to_string(input.id()) + "\n  " +
          to_string(input.id()) + " was never written since it was created (created at input)");
  f.device.check_invariants();
}

TEST(FreshBytes, N2_UnderReportTheLaunchRunsAndItsResultNamesTheBytesItReadUnwritten) {
  Fixture f(UnwrittenReads::Report);
  const Allocation input = f.device.create_buffer(512);
  const Allocation output = f.device.create_buffer(128);
  ASSERT_TRUE(f.device.write(input.bind(0, 256), bytes_of(256, 1)).ran());
  const LaunchResult result =
      f.device.launch("linear", {input.bind(128, 128 + 128)}, {output.whole()}, add_one);
  // Reads [128, 384): [256, 384) was never written.
  ASSERT_TRUE(result.ran());
  ASSERT_EQ(result.unwritten.size(), 1u);
  EXPECT_EQ(result.unwritten[0], (UnwrittenRead{input.id(), ByteRange::of(256, 384)}));
  EXPECT_TRUE(read_all(f.device, output.whole()).ok()); // The launch released its output.
  // A clean read reports nothing and allocates no list.
  const LaunchResult clean =
      f.device.launch("linear", {input.bind(0, 128)}, {output.whole()}, add_one);
  EXPECT_TRUE(clean.ran());
  EXPECT_TRUE(clean.unwritten.empty());
  f.device.check_invariants();
}

TEST(FreshBytes, N2_UnderReportAnInputWithAnotherFailureStillSkips) {
  Fixture f(UnwrittenReads::Report);
  const Allocation input = f.device.create_buffer(128);
  const Allocation output = f.device.create_buffer(64);
  const LaunchResult failed = f.device.launch("load", {}, {input.bind(64, 64)}, [](auto&) {
    return LaunchOutcome::failure(Error::out_of_memory("no room"));
  });
  ASSERT_EQ(failed.status, LaunchStatus::Failed);
  const LaunchResult result = f.device.launch("use", {input.whole()}, {output.whole()}, add_one);
  EXPECT_EQ(result.status, LaunchStatus::Skipped);
  EXPECT_EQ(result.failure, failed.failure); // The real failure, not NeverWritten.
  EXPECT_TRUE(result.unwritten.empty());
  f.device.check_invariants();
}

TEST(FreshBytes, T2_AFullFirstWriteReleasesEveryByteAndAPartialOneOnlyItsOwn) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(256);
  ASSERT_TRUE(f.device.launch("fill", {}, {buffer.bind(0, 100)}, fill_sevens).ran());
  EXPECT_TRUE(read_all(f.device, buffer.bind(0, 100)).ok());
  const ReadOutcome rest = read_all(f.device, buffer.bind(50, 150));
  ASSERT_EQ(rest.reports.size(), 1u);
  EXPECT_EQ(rest.reports[0].stale, ByteRange::of(100, 200));
  ASSERT_TRUE(f.device.launch("fill", {}, {buffer.whole()}, fill_sevens).ran());
  EXPECT_EQ(f.device.read_bytes(buffer.whole()), bytes_of(256, 7));
  EXPECT_TRUE(f.device.graph().empty());
  const Allocation filled = f.device.create_buffer(bytes_of(32, 3)); // Create and host write.
  EXPECT_EQ(f.device.read_bytes(filled.whole()), bytes_of(32, 3));
  f.device.check_invariants();
}

TEST(FreshBytes, N1_AFirstWriteReleasesEveryOutputWhateverShapeItsNeverWrittenClaimHas) {
  Fixture f;
  const Allocation a = f.device.create_buffer(256);
  const Allocation b = f.device.create_buffer(64);
  // a's claim split in two (spilled) by a wrote_only success in its middle.
  ASSERT_TRUE(
      f.device
          .launch("middle", {}, {a.whole()},
                  [](const KernelContext&) {
                    return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(64, 128)}});
                  })
          .ran());
  ASSERT_TRUE(read_all(f.device, a.bind(64, 64)).ok());
  ASSERT_FALSE(read_all(f.device, a.bind(0, 64)).ok());
  ASSERT_FALSE(read_all(f.device, a.bind(128, 128)).ok());
  // One launch writes a (bound twice) and b whole: every claim goes.
  ASSERT_TRUE(f.device.launch("fill", {}, {a.whole(), b.whole(), a.whole()}, fill_sevens).ran());
  EXPECT_EQ(f.device.read_bytes(a.whole()), bytes_of(256, 7));
  EXPECT_EQ(f.device.read_bytes(b.whole()), bytes_of(64, 7));
  EXPECT_FALSE(f.device.memory().never_written_failure().has_value());
  EXPECT_TRUE(f.device.graph().empty());
  f.device.check_invariants();
}

TEST(FreshBytes, S6_AWroteOnlySuccessReleasesOnlyTheRangesItNames) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(256);
  const LaunchResult result =
      f.device.launch("tile", {}, {buffer.whole()}, [](const KernelContext& context) {
        std::fill(context.write(0).begin(), context.write(0).begin() + 64, std::byte{5});
        return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(0, 64)}});
      });
  ASSERT_TRUE(result.ran());
  EXPECT_TRUE(read_all(f.device, buffer.bind(0, 64)).ok());
  const ReadOutcome rest = read_all(f.device, buffer.bind(64, 192));
  ASSERT_TRUE(only_never_written(rest, ByteRange::of(64, 256)));
  f.device.check_invariants();
}

// The boundary of the same rule: a named range may end exactly where its
// output ends, and then releases its last byte too. Bound whole and bound
// at an offset, so the range's end meets the output's end and not the
// allocation's. A range ending one byte short was the only shape tested;
// a one-line slip (`<` for `<=`) that ignored a range ending at the end of
// its output passed every test and every committed fuzz seed.
TEST(FreshBytes, S6_ANamedRangeEndingAtItsOutputsEndReleasesItsLastByte) {
  Fixture f;
  const Allocation whole = f.device.create_buffer(128);
  ASSERT_TRUE(
      f.device
          .launch("tail", {}, {whole.whole()},
                  [](const KernelContext& context) {
                    std::fill(context.write(0).begin() + 64, context.write(0).end(), std::byte{9});
                    return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(64, 128)}});
                  })
          .ran());
  EXPECT_EQ(f.device.read_bytes(whole.bind(64, 64)), bytes_of(64, 9));
  const ReadOutcome head = read_all(f.device, whole.bind(0, 64));
  ASSERT_TRUE(only_never_written(head, ByteRange::of(0, 64)));

  const Allocation inner = f.device.create_buffer(128);
  ASSERT_TRUE(
      f.device
          .launch("middle_tail", {}, {inner.bind(32, 64)},
                  [](const KernelContext& context) {
                    std::fill(context.write(0).begin() + 32, context.write(0).end(), std::byte{4});
                    return LaunchOutcome::wrote_only({WrittenRange{0, ByteRange::of(32, 64)}});
                  })
          .ran());
  EXPECT_EQ(f.device.read_bytes(inner.bind(64, 32)), bytes_of(32, 4));
  ASSERT_TRUE(only_never_written(read_all(f.device, inner.bind(32, 32)), ByteRange::of(32, 64)));
  const ReadOutcome after = read_all(f.device, inner.bind(96, 32));
  ASSERT_TRUE(only_never_written(after, ByteRange::of(96, 128)));
  f.device.check_invariants();
}

TEST(FreshBytes, S1_AFailedFirstWriteLeavesTheLaunchFailureWhereTheBytesWereNeverWritten) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(128);
  const LaunchResult result = f.device.launch("load", {}, {buffer.whole()}, [](auto&) {
    return LaunchOutcome::partial(Error::launch("bad config"),
                                  {WrittenRange{0, ByteRange::of(0, 32)}});
  });
  ASSERT_EQ(result.status, LaunchStatus::Failed);
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_TRUE(read_all(f.device, buffer.bind(0, 32)).ok()); // S2.
  const std::vector<Report> reports = f.device.stale_reports(buffer.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].failure, *result.failure);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Launch);
  EXPECT_FALSE(f.device.memory().never_written_failure().has_value()); // Its only carrier let go.
  f.device.check_invariants();
}

TEST(FreshBytes, S3_AFirstWriteThatThrowsLeavesTornDownOnTheWholeWriteSet) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(128);
  const Allocation other = f.device.create_buffer(16);
  EXPECT_THROW(f.device.launch("boom", {}, {buffer.bind(0, 64), buffer.bind(64, 64)},
                               [](auto&) -> LaunchOutcome { throw std::runtime_error("boom"); }),
               std::runtime_error);
  const std::vector<Report> reports = f.device.stale_reports(buffer.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::TornDown);
  EXPECT_EQ(reports[0].stale, ByteRange::of(0, 128));
  EXPECT_EQ(f.device.graph().tags(*f.device.memory().never_written_failure()), 1u); // `other`.
  f.device.check_invariants();
}

TEST(FreshBytes, N1_AnOutputWhoseNeverWrittenBytesReachPastItsBindingKeepsTheRest) {
  Fixture f;
  const Allocation buffer = f.device.create_buffer(128);
  // Fails: the general path claims [0, 64) over the never-written claim.
  const LaunchResult result = f.device.launch("half", {}, {buffer.bind(0, 64)}, [](auto&) {
    return LaunchOutcome::failure(Error::launch("no"));
  });
  ASSERT_EQ(result.status, LaunchStatus::Failed);
  const std::vector<Report> reports = f.device.stale_reports(buffer.whole());
  ASSERT_EQ(reports.size(), 2u);
  f.device.check_invariants();
}

/// What one launch of the mixes below left: its answer, then each
/// buffer's readability and stale reports, then the graph's size.
std::vector<std::uint64_t> mix_transcript(Fixture& f, const LaunchResult& result,
                                          const std::vector<Allocation>& buffers) {
  std::vector<std::uint64_t> seen{static_cast<std::uint64_t>(result.status),
                                  result.failure ? result.failure->raw() : 0,
                                  result.needed ? result.needed->raw() : 0};
  for (const Allocation& buffer : buffers) {
    seen.push_back(read_all(f.device, buffer.whole()).ok() ? 1 : 0);
    seen.push_back(f.device.stale_reports(buffer.whole()).size());
  }
  seen.push_back(f.device.graph().size());
  return seen;
}

TEST(FreshBytes, N1_S1_S6_EveryMixOfCleanStaleAndFreshBindingsIsNotedAsAPlanNotesIt) {
  // A plain launch resolves and notes its bindings' taints through the id
  // table (resolve_side); a launch through a plan notes the taints its plan
  // resolved once (planned_side): two paths that must agree. Every mix of
  // two reads —
  // written, never written (stale: skipped, S1), never written only outside
  // its binding (runs) — and two outputs — written, fresh (N1), fresh past
  // its binding (not N1's case: the general path), claimed by a failed
  // launch (S6) — must answer and leave every byte alike both ways.
  const auto prepare_read = [](Fixture& f, const Allocation& buffer, int state) {
    if (state == 0) {
      EXPECT_TRUE(f.device.write(buffer.whole(), bytes_of(64, 1)).ran());
    } else if (state == 2) {
      EXPECT_TRUE(f.device.write(buffer.bind(0, 32), bytes_of(32, 1)).ran());
    }
    return state == 2 ? buffer.bind(0, 32) : buffer.whole();
  };
  const auto prepare_output = [](Fixture& f, const Allocation& buffer, int state) {
    if (state == 0) {
      EXPECT_TRUE(f.device.write(buffer.whole(), bytes_of(64, 2)).ran());
    } else if (state == 3) {
      EXPECT_EQ(f.device
                    .launch("spoil", {}, {buffer.whole()},
                            [](auto&) { return LaunchOutcome::failure(Error::launch("no")); })
                    .status,
                LaunchStatus::Failed);
    }
    return state == 2 ? buffer.bind(0, 32) : buffer.whole();
  };
  int cases = 0;
  for (int mix = 0; mix < 3 * 3 * 4 * 4; ++mix) {
    const int states[4] = {mix % 3, mix / 3 % 3, mix / 9 % 4, mix / 36 % 4};
    std::vector<std::uint64_t> transcripts[2];
    for (const bool planned : {false, true}) {
      Fixture f;
      std::vector<Allocation> buffers;
      for (int index = 0; index < 4; ++index) {
        buffers.push_back(f.device.create_buffer(64));
      }
      const std::vector<Binding> reads{prepare_read(f, buffers[0], states[0]),
                                       prepare_read(f, buffers[1], states[1])};
      const std::vector<Binding> writes{prepare_output(f, buffers[2], states[2]),
                                        prepare_output(f, buffers[3], states[3])};
      const LaunchResult result =
          planned ? f.device.launch(f.device.plan(reads, writes), "mix", fill_sevens)
                  : f.device.launch("mix", reads, writes, fill_sevens);
      const bool stale = states[0] == 1 || states[1] == 1;
      EXPECT_EQ(result.status, stale ? LaunchStatus::Skipped : LaunchStatus::Ran) << "mix " << mix;
      if (!stale) {
        for (const Binding& output : writes) {
          EXPECT_TRUE(read_all(f.device, output).ok()) << "mix " << mix;
        }
      }
      transcripts[planned ? 1 : 0] = mix_transcript(f, result, buffers);
      f.device.check_invariants();
    }
    EXPECT_EQ(transcripts[0], transcripts[1]) << "mix " << mix;
    ++cases;
  }
  EXPECT_EQ(cases, 144);
}

TEST(FreshBytes, N1_AManagerClaimsAFreshAllocationInlineAndPrunesWithItsLastCarrier) {
  HostStorage storage;
  ErrorGraph graph;
  MemoryConfig config;
  config.fresh_bytes = FreshBytes::NeverWritten;
  {
    MemoryManager memory(storage, graph, config);
    Allocation a = memory.allocate(300);
    const FailureId node = *memory.never_written_failure();
    EXPECT_EQ(memory.failure(a.whole()), node);
    EXPECT_EQ(memory.failure(a.bind(299, 1)), node);
    memory.written(a.bind(0, 300));
    EXPECT_FALSE(memory.failure(a.whole()).has_value());
    EXPECT_TRUE(graph.empty());
    const Allocation b = memory.allocate(10);
    EXPECT_EQ(graph.size(), 1u);
    memory.check_invariants();
  }
  EXPECT_TRUE(graph.empty()); // P1: the manager's end clears every claim (R4).
}

TEST(CreationSites, N3_AnEmptySiteIsNotStoredAndEndedBuffersArePrunedWhenTheMapGrows) {
  CreationSites sites;
  auto all_live = [](AllocationId) { return true; };
  sites.note(AllocationId::from_raw(1), "", all_live);
  EXPECT_EQ(sites.size(), 0u);
  EXPECT_EQ(sites.find(AllocationId::from_raw(1)), nullptr);
  for (std::uint64_t raw = 1; raw <= 64; ++raw) {
    sites.note(AllocationId::from_raw(raw), "site " + std::to_string(raw), all_live);
  }
  EXPECT_EQ(sites.size(), 64u);
  // The 65th note prunes first: only the odd ids are still live.
  auto odd_live = [](AllocationId allocation) { return allocation.raw() % 2 == 1; };
  sites.note(AllocationId::from_raw(65), "site 65", odd_live);
  EXPECT_EQ(sites.size(), 33u);
  EXPECT_EQ(sites.find(AllocationId::from_raw(2)), nullptr);
  ASSERT_NE(sites.find(AllocationId::from_raw(3)), nullptr);
  EXPECT_EQ(*sites.find(AllocationId::from_raw(3)), "site 3");
  ASSERT_NE(sites.find(AllocationId::from_raw(65)), nullptr);
  EXPECT_EQ(*sites.find(AllocationId::from_raw(65)), "site 65");
  // Next prune at 2 * 32 + 64 = 128 entries: none before then.
  sites.note(AllocationId::from_raw(66), "site 66", odd_live);
  EXPECT_EQ(sites.size(), 34u);
}

TEST(CreationSites, N2_TwoUnwrittenReadsAreEqualOnlyForTheSameAllocationAndBytes) {
  const UnwrittenRead read{AllocationId::from_raw(4), ByteRange::of(0, 8)};
  EXPECT_EQ(read, (UnwrittenRead{AllocationId::from_raw(4), ByteRange::of(0, 8)}));
  EXPECT_NE(read, (UnwrittenRead{AllocationId::from_raw(5), ByteRange::of(0, 8)}));
  EXPECT_NE(read, (UnwrittenRead{AllocationId::from_raw(4), ByteRange::of(0, 4)}));
}

} // namespace
} // namespace taintpool
