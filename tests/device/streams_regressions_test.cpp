// Pins: stream bugs the stream model and stream_fuzzer found, each as the
// smallest program that showed it, named by the rule it broke (O1-O4).
//
// Why a file of its own: each test failed on the code before its fix; the
// rule-by-rule tests in streams_test.cpp say what the rules are, these say
// what once went wrong, so a regression names its history.
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>
#include <taintpool/pool/host_storage.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "deferred_work.hpp"

namespace taintpool {
namespace {

constexpr std::uint64_t kSeeds = 64;

using test::add_later;
using test::bytes_of;
using test::fill_later;

TEST(StreamRegressions, O1_WorkQueuedBeforeTheSecondStreamExistedIsOrderedBeforeIt) {
  // With one stream the Device orders nothing, so it counted nothing; the
  // default stream's queued fill was then invisible to the first launch on
  // a new stream, which could read x before the fill landed.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend);
    Allocation x = device.create_buffer(64);
    ASSERT_TRUE(device.launch("fill x", {}, {x.whole()}, fill_later(backend, 5)).ran());
    const StreamId side = device.create_stream();
    Allocation y = device.create_buffer(64, side);
    ASSERT_TRUE(
        device.launch(side, "y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    std::vector<std::byte> out(64);
    ASSERT_TRUE(device.read(side, y.whole(), out).ok());
    EXPECT_EQ(out, bytes_of(64, 6)) << "seed " << seed;
    device.check_invariants();
  }
}

TEST(StreamRegressions, O4_WorkBeforeTheSecondStreamExistedIsNoRace) {
  // Detect mode: accesses made while the Device had one stream are complete
  // once a second exists, so touching their bytes from it is no race — and
  // the bytes read are the ones written.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    Allocation x = device.create_buffer(64);
    ASSERT_TRUE(device.launch("fill x", {}, {x.whole()}, fill_later(backend, 5)).ran());
    const StreamId side = device.create_stream();
    Allocation y = device.create_buffer(64, side);
    const LaunchResult result =
        device.launch(side, "y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1));
    EXPECT_TRUE(result.ran()) << (result.error ? to_string(*result.error) : std::string());
    EXPECT_EQ(device.stream_stats().races_detected, 0u);
    std::vector<std::byte> out(64);
    ASSERT_TRUE(device.read(side, y.whole(), out).ok());
    EXPECT_EQ(out, bytes_of(64, 6)) << "seed " << seed;
  }
}

TEST(StreamRegressions, O4_AnAllocationWhoseAccessesAllCompletedIsNoRaceWithItsHomesLaterWork) {
  // Detect mode keeps a record per allocation from its creation; a
  // synchronize drops the records whose accesses all completed. The next
  // touch from another stream then took the home stream's whole queue as
  // the allocation's writer — and reported its unrelated work as a race.
  DeferredHostBackend backend;
  Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
  const StreamId side = device.create_stream();
  Allocation x = device.create_buffer(32);
  Allocation y = device.create_buffer(32);
  Allocation z = device.create_buffer(32, side);
  ASSERT_TRUE(device.launch("fill x", {}, {x.whole()}, fill_later(backend, 3)).ran());
  device.synchronize();
  ASSERT_TRUE(device.launch("fill y", {}, {y.whole()}, fill_later(backend, 4)).ran());
  const LaunchResult result =
      device.launch(side, "z = x + 1", {x.whole()}, {z.whole()}, add_later(backend, 1));
  EXPECT_TRUE(result.ran()) << (result.error ? to_string(*result.error) : std::string());
  EXPECT_EQ(device.stream_stats().races_detected, 0u);
  std::vector<std::byte> out(32);
  ASSERT_TRUE(device.read(side, z.whole(), out).ok());
  EXPECT_EQ(out, bytes_of(32, 4));
}

TEST(StreamRegressions, O4_AWriteRacesWithEveryUnorderedEarlierReaderNotOnlyTheNewest) {
  // Two reads of x on the default stream, then an unordered write of x on
  // another stream: either read may see the new bytes. Only the newest
  // reader per stream was kept, so the older one's output came back clean
  // with the wrong bytes under some interleavings.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16);
    Allocation y1 = device.create_buffer(16);
    Allocation y2 = device.create_buffer(16);
    device.write(x.whole(), bytes_of(16, 10));
    ASSERT_TRUE(
        device.launch("older reader", {x.whole()}, {y1.whole()}, add_later(backend, 1)).ran());
    ASSERT_TRUE(
        device.launch("newer reader", {x.whole()}, {y2.whole()}, add_later(backend, 2)).ran());
    ASSERT_TRUE(device.launch(side, "writer", {}, {x.whole()}, fill_later(backend, 99)).ran());
    for (const Allocation* output : {&y1, &y2}) {
      std::vector<std::byte> out(16);
      const ReadOutcome read = device.read(output->whole(), out);
      if (read.ok()) {
        const std::uint8_t expected = output == &y1 ? 11 : 12;
        EXPECT_EQ(out, bytes_of(16, expected))
            << "seed " << seed << ": a clean read of wrong bytes";
      } else {
        EXPECT_NE(to_string(read).find("race"), std::string::npos) << to_string(read);
      }
    }
  }
}

TEST(StreamRegressions, O4_AWriteRacesWithAnEarlierRacingWriterNotOnlyTheLastOne) {
  // x is written on the default stream and, racing, on a third stream,
  // whose work the host then learns complete. A write on the side stream is
  // ordered after the last writer but not after the first, which may land
  // later: only the last writer was kept, so the write came back clean.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId third = device.create_stream();
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16);
    Allocation z = device.create_buffer(16, third);
    ASSERT_TRUE(device.launch("first writer", {}, {x.whole()}, fill_later(backend, 1)).ran());
    static_cast<void>(
        device.launch(third, "second writer", {}, {x.whole()}, fill_later(backend, 2)));
    device.write(third, z.whole(), bytes_of(16, 5)); // The third stream is known complete.
    const LaunchResult last =
        device.launch(side, "last writer", {}, {x.whole()}, fill_later(backend, 3));
    EXPECT_EQ(last.status, LaunchStatus::Failed) << "it races with the first writer";
    std::vector<std::byte> out(16);
    const ReadOutcome read = device.read(x.whole(), out);
    if (read.ok()) {
      EXPECT_EQ(out, bytes_of(16, 3)) << "seed " << seed << ": a clean read of wrong bytes";
    }
  }
}

TEST(StreamRegressions, O4_AWriteRacesWithAnInPlaceLaunchsReadNotOnlyItsWrite) {
  // A launch reads x and writes x in place and writes y from it; an
  // unordered write of x on another stream may land before that read. Its
  // write hid its read, so only the bytes both wrote were reported, and y
  // came back clean with bytes computed from the other write.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16);
    Allocation y = device.create_buffer(16);
    device.write(x.whole(), bytes_of(16, 10));
    ASSERT_TRUE(device
                    .launch("x and y = x + 1", {x.whole()}, {y.whole(), x.whole()},
                            [&backend](const KernelContext& context) {
                              const std::span<const std::byte> in = context.read(0);
                              const std::span<std::byte> out = context.write(0);
                              const std::span<std::byte> again = context.write(1);
                              backend.enqueue(context, [in, out, again] {
                                for (std::size_t at = 0; at < out.size(); ++at) {
                                  out[at] =
                                      static_cast<std::byte>(static_cast<std::uint8_t>(in[at]) + 1);
                                }
                                std::copy(out.begin(), out.end(), again.begin());
                              });
                              return LaunchOutcome::success();
                            })
                    .ran());
    static_cast<void>(device.launch(side, "refill x", {}, {x.whole()}, fill_later(backend, 99)));
    std::vector<std::byte> out(16);
    const ReadOutcome read = device.read(y.whole(), out);
    if (read.ok()) {
      EXPECT_EQ(out, bytes_of(16, 11)) << "seed " << seed << ": a clean read of wrong bytes";
    }
  }
}

TEST(StreamRegressions, O4_AWriteRacesWithAReaderALaterWriteOnItsStreamOverwrote) {
  // x is read, then rewritten, on the default stream; an unordered write of
  // x on another stream may land before that read. The default stream's
  // rewrite cleared the reader, so the reader's output came back clean.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16);
    Allocation y = device.create_buffer(16);
    device.write(x.whole(), bytes_of(16, 10));
    ASSERT_TRUE(device.launch("y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    ASSERT_TRUE(device.launch("rewrite x", {}, {x.whole()}, fill_later(backend, 20)).ran());
    static_cast<void>(device.launch(side, "refill x", {}, {x.whole()}, fill_later(backend, 99)));
    std::vector<std::byte> out(16);
    const ReadOutcome read = device.read(y.whole(), out);
    if (read.ok()) {
      EXPECT_EQ(out, bytes_of(16, 11)) << "seed " << seed << ": a clean read of wrong bytes";
    }
  }
}

TEST(StreamRegressions, O4_AWriteOfReusedMemoryCannotReachAPendingReaderOfItsPreviousAllocation) {
  // stream_fuzzer's detect-war-on-reused-memory: x, homed on `side`, is
  // read there by a queued launch; x's handle goes and its memory went at
  // once to z on `side` (the home stream orders its own reuse); a write of
  // z on the default stream is ordered after nothing on `side`, so it
  // could land before the read. Only z carried the Race; y, computed from
  // z's bytes in that schedule, read back clean and wrong. Detect mode now
  // holds x until the read completes, so z gets other memory.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16, side);
    Allocation y = device.create_buffer(16, side);
    device.write(side, x.whole(), bytes_of(16, 10));
    ASSERT_TRUE(
        device.launch(side, "y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    x = Allocation();
    EXPECT_EQ(device.stream_stats().pins_held, 2u)
        << "seed " << seed << ": x and y are not both held while the launch binding them is queued";
    Allocation z = device.create_buffer(16, side);
    static_cast<void>(device.launch("fill z", {}, {z.whole()}, fill_later(backend, 99)));
    std::vector<std::byte> out(16);
    const ReadOutcome read = device.read(side, y.whole(), out);
    ASSERT_TRUE(read.ok()) << "seed " << seed << ": y's read has no race to report";
    EXPECT_EQ(out, bytes_of(16, 11)) << "seed " << seed << ": a clean read of wrong bytes";
    device.check_invariants();
  }
}

TEST(StreamRegressions, O4_AWriteAfterAFailedReadersPartialOutputTaintsWhatItReportedWritten) {
  // A launch reads x, writes y and fails having written all of y (S2: y is
  // released). An unordered write of x on another stream may land before
  // the read. The race reached the reader as a late failure, which was
  // dropped because the reader had failed already — but y was released and
  // computed from the other write's bytes.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16);
    Allocation y = device.create_buffer(16);
    device.write(x.whole(), bytes_of(16, 10));
    const LaunchResult reader = device.launch(
        "y = x + 1, then fail", {x.whole()}, {y.whole()}, [&backend](const KernelContext& context) {
          static_cast<void>(add_later(backend, 1)(context));
          return LaunchOutcome::partial(Error::launch("late trouble"),
                                        {WrittenRange{0, ByteRange::of(0, 16)}});
        });
    ASSERT_EQ(reader.status, LaunchStatus::Failed);
    static_cast<void>(device.launch(side, "refill x", {}, {x.whole()}, fill_later(backend, 99)));
    std::vector<std::byte> out(16);
    const ReadOutcome read = device.read(y.whole(), out);
    if (read.ok()) {
      EXPECT_EQ(out, bytes_of(16, 11)) << "seed " << seed << ": a clean read of wrong bytes";
    }
  }
}

/// Host pages that are never given back to the system: a page the pool
/// returns is filled with a poison byte and kept, so a write into it after
/// its return shows up as the poison gone.
class PoisoningStorage final : public Storage {
 public:
  static constexpr std::byte poison{0xDD};

  [[nodiscard]] std::uint64_t alignment() const noexcept override { return 256; }
  [[nodiscard]] StorageHandle allocate(std::uint64_t size) override {
    pages_.push_back(std::make_unique<Page>(size));
    return StorageHandle{reinterpret_cast<std::uint64_t>(pages_.back()->base())};
  }
  void deallocate(StorageHandle handle, std::uint64_t size) noexcept override {
    std::byte* base = reinterpret_cast<std::byte*>(handle.value);
    std::fill(base, base + size, poison);
    returned_.emplace_back(base, size);
  }
  [[nodiscard]] void* resolve(StorageHandle handle) const noexcept override {
    return reinterpret_cast<void*>(handle.value);
  }
  [[nodiscard]] std::string name() const override { return "poisoning host"; }

  /// Whether every byte of every returned page still holds the poison.
  [[nodiscard]] bool returned_pages_untouched() const {
    return std::all_of(returned_.begin(), returned_.end(), [](const auto& page) {
      return std::all_of(page.first, page.first + page.second,
                         [](std::byte byte) { return byte == poison; });
    });
  }
  [[nodiscard]] std::size_t returned() const noexcept { return returned_.size(); }

 private:
  struct Page {
    explicit Page(std::uint64_t size)
        : bytes(static_cast<std::size_t>(size) + 256) {}
    [[nodiscard]] std::byte* base() {
      const auto address = reinterpret_cast<std::uintptr_t>(bytes.data());
      return bytes.data() + ((256 - address % 256) % 256);
    }
    std::vector<std::byte> bytes;
  };
  std::vector<std::unique_ptr<Page>> pages_;
  std::vector<std::pair<std::byte*, std::uint64_t>> returned_;
};

TEST(StreamRegressions, O3_APageGoesBackToStorageOnlyAfterTheQueuedWorkOnItRan) {
  // A buffer's fill is still queued when the buffer is dropped and its page
  // given back (cleanup): the storage may hand that memory to anyone, so the
  // fill must have run first — as cudaFree waits for the device.
  PoisoningStorage storage;
  MemoryConfig config;
  config.alignment = 256;
  config.sliced = {};
  config.max_allocation = 1 << 20;
  DeferredHostBackend backend(storage, config);
  Device device(backend);
  {
    Allocation x = device.create_buffer(4096);
    ASSERT_TRUE(device.launch("fill x", {}, {x.whole()}, fill_later(backend, 7)).ran());
  }
  device.cleanup();
  ASSERT_EQ(storage.returned(), 1u) << "the page went back";
  backend.run_all();
  EXPECT_TRUE(storage.returned_pages_untouched())
      << "queued work wrote into a page after it went back to storage";
}

TEST(StreamRegressions, O4_AReaderFailedByAWriteRaceStillTaintsItsOtherOutputsWhenItsReadIsRaced) {
  // B reads x[29, 37) and writes all of x on a side stream. It races with
  // A's write of x[41, 42) (write after write): only that byte is claimed,
  // the rest of B's output is released. Then C overwrites x[16, 30) on the
  // default stream, unordered with B's read of byte 29: everything B
  // released was computed from a byte C may have changed, so it is stale
  // too — although B already stood as failed.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(64);
    device.synchronize();
    ASSERT_TRUE(device.launch("A", {}, {x.bind(41, 1)}, fill_later(backend, 1)).ran());
    const LaunchResult b =
        device.launch(side, "B", {x.bind(29, 8)}, {x.whole()}, fill_later(backend, 7));
    ASSERT_EQ(b.status, LaunchStatus::Failed);
    static_cast<void>(device.launch("C", {}, {x.bind(16, 14)}, fill_later(backend, 2)));
    const std::vector<Report> after = device.stale_reports(x.bind(0, 16));
    ASSERT_EQ(after.size(), 1u) << "seed " << seed << ": B's released bytes stayed clean";
    EXPECT_EQ(after.front().root.kind(), ErrorKind::Race);
    device.check_invariants();
  }
}

TEST(StreamRegressions,
     O4_S6_ARacedReadersOutputStaysStaleUnderALaterWroteOnlyLaunchThatDidNotWriteIt) {
  // R reads x and writes y on a side stream; W, after it there, binds y as
  // output but its body names nothing written (S6: y keeps its writer, R).
  // A write of x on the default stream is unordered with R's read, so R's
  // output is suspect (O4). The race's replay took W as having overwritten
  // all of y, and y came back clean holding what R computed from x as the
  // other write may have left it.
  for (std::uint64_t seed = 0; seed < kSeeds; ++seed) {
    DeferredHostBackend backend;
    backend.set_seed(seed);
    Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
    const StreamId side = device.create_stream();
    Allocation x = device.create_buffer(16);
    Allocation y = device.create_buffer(16);
    device.write(x.whole(), bytes_of(16, 10));
    device.synchronize();
    ASSERT_TRUE(
        device.launch(side, "R: y = x + 1", {x.whole()}, {y.whole()}, add_later(backend, 1)).ran());
    ASSERT_TRUE(device
                    .launch(side, "W: names nothing", {}, {y.whole()},
                            [](const KernelContext&) { return LaunchOutcome::wrote_only({}); })
                    .ran());
    static_cast<void>(device.launch("refill x", {}, {x.whole()}, fill_later(backend, 99)));
    const std::vector<Report> after = device.stale_reports(y.whole());
    ASSERT_EQ(after.size(), 1u) << "seed " << seed << ": R's output came back clean";
    EXPECT_EQ(after.front().root.kind(), ErrorKind::Race);
    EXPECT_EQ(after.front().stale, ByteRange::of(0, 16));
    device.check_invariants();
  }
}

} // namespace
} // namespace taintpool
