// Streams on a real GPU (issue 11; O1-O5, S1): several cudaStream_t, the
// Device's event waits between them, stream-ordered reuse, detect mode, many
// host threads, and the launch path that hands the backend each launch's
// status (cuda::launch). Every test uses at least three streams or checks
// something only one GPU stream can show, and every test checks bytes.
//
// Determinism. A producer that must not have written yet is a gated kernel
// (stream_kernels.hpp): its blocks wait for the host to open a gate in
// mapped host memory. So "the consumer's stream is still waiting" is a
// state the test holds and asserts (cudaStreamQuery says not ready), not a
// race it hopes to win. The host never blocks on GPU progress while a gate
// is closed — compute-sanitizer serialises kernels, and a test that waited
// for one stream behind a closed gate would hang under it — except in the
// control test, which polls with a deadline and skips when the GPU ran the
// kernels one after another.
//
// Label gpu; skipped without a device.
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/cuda/kernel_launch.hpp>
#include <taintpool/cuda/nvtx_regions.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>
#include <taintpool/host/host_backend.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpu_kernels.hpp"
#include "gpu_support.hpp"
#include "stream_kernels.hpp"

namespace taintpool::cuda::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kWords = std::uint64_t{1} << 16; // 256 KiB per buffer.
constexpr std::uint64_t kBytes = kWords * sizeof(std::uint32_t);

/// A word in mapped, pinned host memory that gated kernels poll. Opened on
/// destruction too, then the device is synchronised before the memory goes,
/// so a failing test neither hangs nor frees memory a kernel still reads.
class Gate {
 public:
  Gate() {
    void* host = nullptr;
    if (cudaHostAlloc(&host, sizeof(std::uint32_t), cudaHostAllocMapped) != cudaSuccess) {
      throw std::runtime_error("cudaHostAlloc of the gate failed");
    }
    word_ = static_cast<std::uint32_t*>(host);
    *static_cast<volatile std::uint32_t*>(word_) = 0;
    void* device = nullptr;
    if (cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess) {
      throw std::runtime_error("cudaHostGetDevicePointer of the gate failed");
    }
    device_ = static_cast<const volatile std::uint32_t*>(device);
  }
  ~Gate() {
    open();
    static_cast<void>(cudaDeviceSynchronize());
    static_cast<void>(cudaFreeHost(word_));
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void open() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *static_cast<volatile std::uint32_t*>(word_) = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  [[nodiscard]] const volatile std::uint32_t* device() const { return device_; }

 private:
  std::uint32_t* word_ = nullptr;
  const volatile std::uint32_t* device_ = nullptr;
};

LaunchShape shape(std::uint32_t blocks, std::uint32_t threads = 256) {
  return LaunchShape{dim3(blocks), dim3(threads), 0};
}

std::uint32_t* out_words(const KernelContext& context, std::size_t index) {
  return reinterpret_cast<std::uint32_t*>(context.write_binding(index).data);
}

const std::uint32_t* in_words(const KernelContext& context, std::size_t index) {
  return reinterpret_cast<const std::uint32_t*>(context.read_binding(index).data);
}

std::vector<std::uint32_t> words(Device& device, const Allocation& buffer) {
  const std::vector<std::byte> bytes = device.read_bytes(buffer.whole());
  std::vector<std::uint32_t> values(bytes.size() / sizeof(std::uint32_t));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// The index of the first word that differs from `expected(i)`, or n.
template <class Expected>
std::uint64_t first_wrong(const std::vector<std::uint32_t>& seen, Expected expected) {
  for (std::uint64_t i = 0; i < seen.size(); ++i) {
    if (seen[i] != expected(i)) {
      return i;
    }
  }
  return seen.size();
}

std::uint32_t transformed(std::uint32_t in, std::uint64_t i, std::uint32_t multiply,
                          std::uint32_t add) {
  return in * multiply + add + static_cast<std::uint32_t>(i);
}

// ---- launches, each through cuda::launch (the backend learns the status)

LaunchResult gate_fill(Device& device, StreamId stream, const Gate& gate, const Allocation& out,
                       std::uint32_t value, cudaStream_t* seen = nullptr) {
  return device.launch(stream, "gate fill", {}, {out.whole()}, [&](const KernelContext& context) {
    if (seen != nullptr) {
      *seen = stream_of(context);
    }
    // Four blocks: the gated kernel must leave the GPU's other SMs free
    // for the streams that do not wait for it.
    static_cast<void>(launch(context, gate_fill_kernel(), shape(4), gate.device(),
                             out_words(context, 0), kWords, value));
    return LaunchOutcome::success();
  });
}

LaunchResult transform(Device& device, StreamId stream, const Allocation& in, const Allocation& out,
                       std::uint32_t multiply, std::uint32_t add, cudaStream_t* seen = nullptr) {
  return device.launch(stream, "transform", {in.whole()}, {out.whole()},
                       [&](const KernelContext& context) {
                         if (seen != nullptr) {
                           *seen = stream_of(context);
                         }
                         static_cast<void>(launch(context, transform_kernel(),
                                                  shape(blocks_for(kWords)), in_words(context, 0),
                                                  out_words(context, 0), kWords, multiply, add));
                         return LaunchOutcome::success();
                       });
}

LaunchResult combine(Device& device, StreamId stream, const Allocation& a, const Allocation& b,
                     const Allocation& out, cudaStream_t* seen = nullptr) {
  return device.launch(
      stream, "combine", {a.whole(), b.whole()}, {out.whole()}, [&](const KernelContext& context) {
        if (seen != nullptr) {
          *seen = stream_of(context);
        }
        static_cast<void>(launch(context, combine_kernel(), shape(blocks_for(kWords)),
                                 in_words(context, 0), in_words(context, 1), out_words(context, 0),
                                 kWords));
        return LaunchOutcome::success();
      });
}

LaunchResult fill_words(Device& device, StreamId stream, const Allocation& out,
                        std::uint32_t value) {
  return device.launch(stream, "fill words", {}, {out.whole()}, [&](const KernelContext& context) {
    static_cast<void>(launch(context, fill_words_kernel(), shape(blocks_for(kWords)),
                             out_words(context, 0), kWords, value));
    return LaunchOutcome::success();
  });
}

LaunchResult slow_fill(Device& device, StreamId stream, const Allocation& out, std::uint32_t value,
                       std::uint64_t spin_ns) {
  return device.launch(stream, "slow fill", {}, {out.whole()}, [&](const KernelContext& context) {
    static_cast<void>(launch(context, slow_fill_kernel(), shape(blocks_for(kWords)),
                             out_words(context, 0), kWords, value, spin_ns));
    return LaunchOutcome::success();
  });
}

/// Polls `stream` until it has finished or `seconds` passed.
bool finishes_within(cudaStream_t stream, double seconds) {
  const Clock::time_point deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                        std::chrono::duration<double>(seconds));
  while (Clock::now() < deadline) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) {
      return true;
    }
    if (state != cudaErrorNotReady) {
      ADD_FAILURE() << "cudaStreamQuery: " << cudaGetErrorName(state);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// ------------------------------------------------------------ O1, O2

TEST(CudaStreams, O1_O2_ConsumersOnTwoStreamsWaitForAGatedProducerOnceEachAndReadItsBytes) {
  TAINTPOOL_REQUIRE_GPU();
  if (cuda::running_under_sanitizer()) {
    // compute-sanitizer runs kernels one after another: the gated producer
    // gives up waiting before the host can open its gate.
    GTEST_SKIP() << "a gated producer cannot be held open under compute-sanitizer";
  }
  CudaBackend backend;
  Device device(backend);
  const StreamId s1 = device.create_stream();
  const StreamId s2 = device.create_stream();
  const StreamId s3 = device.create_stream();
  const Allocation x = device.create_buffer(kBytes, s1);
  const Allocation y = device.create_buffer(kBytes, s2);
  const Allocation z = device.create_buffer(kBytes, s3);
  Gate gate;
  cudaStream_t second = nullptr;
  cudaStream_t third = nullptr;
  ASSERT_TRUE(gate_fill(device, s1, gate, x, 0xA1u).ran());
  ASSERT_TRUE(transform(device, s2, x, y, 3, 7, &second).ran());
  ASSERT_TRUE(combine(device, s3, y, x, z, &third).ran());
  // O1: both consumers' streams wait behind the producer's event.
  const cudaError_t second_state = cudaStreamQuery(second);
  const cudaError_t third_state = cudaStreamQuery(third);
  // O2: s2 waits for s1; s3 waits for s2 only — s1's write is already
  // ordered before s3 through s2's wait (vector clocks).
  EXPECT_EQ(device.stream_stats().waits_inserted, 2u);
  gate.open();
  const std::vector<std::uint32_t> got = words(device, z);
  const auto expected = [](std::uint64_t i) { return transformed(0xA1u, i, 3, 7) ^ (0xA1u * 3u); };
  EXPECT_EQ(first_wrong(got, expected), got.size()) << "word " << first_wrong(got, expected);
  device.check_invariants();
  if (second_state == cudaSuccess && third_state == cudaSuccess) {
    // Only possible when the producer had finished with the gate closed:
    // compute-sanitizer runs kernels one after another, so the gate kernel
    // gave up waiting before the consumers were launched. The bytes above
    // still prove the order; the held state cannot be seen.
    GTEST_SKIP() << "the consumers finished while the gate was closed (a sanitizer serialised "
                    "the kernels): ordering checked by the bytes only";
  }
  EXPECT_EQ(second_state, cudaErrorNotReady);
  EXPECT_EQ(third_state, cudaErrorNotReady);
}

TEST(CudaStreams, O1_WithoutTheDevicesWaitsTheSameKernelsOnTwoStreamsReadStaleBytes) {
  // The control for the test above: the same producer and consumer on two
  // raw streams, no event between them. The consumer runs while the
  // producer is gated and reads the bytes from before — the hazard the
  // Device's waits remove is real on this GPU.
  TAINTPOOL_REQUIRE_GPU();
  if (cuda::running_under_sanitizer()) {
    // compute-sanitizer runs kernels one after another: the gated producer
    // gives up waiting and writes before the consumer runs, which then
    // "finishes early" with the new bytes (seen under memcheck on the
    // H200: overlapped, yet word 0 already written). No hazard to show.
    GTEST_SKIP() << "a gated producer cannot be held open under compute-sanitizer";
  }
  cudaStream_t producer = nullptr;
  cudaStream_t consumer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  void* x = nullptr;
  void* y = nullptr;
  ASSERT_EQ(cudaMalloc(&x, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(x, 0, kBytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); // Non-blocking streams do not wait for it.
  bool overlapped = false;
  {
    Gate gate;
    const volatile std::uint32_t* gate_word = gate.device();
    auto* x_words = static_cast<std::uint32_t*>(x);
    auto* y_words = static_cast<std::uint32_t*>(y);
    std::uint32_t value = 0xA1u;
    std::uint64_t n = kWords;
    void* fill_args[] = {&gate_word, &x_words, &n, &value};
    ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(gate_fill_kernel()), dim3(4),
                               dim3(256), fill_args, 0, producer),
              cudaSuccess);
    const std::uint32_t* in = x_words;
    std::uint32_t multiply = 3;
    std::uint32_t add = 7;
    void* transform_args[] = {&in, &y_words, &n, &multiply, &add};
    ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(transform_kernel()),
                               dim3(blocks_for(kWords)), dim3(256), transform_args, 0, consumer),
              cudaSuccess);
    overlapped = finishes_within(consumer, 5.0);
    gate.open();
  }
  std::vector<std::uint32_t> got(kWords);
  ASSERT_EQ(cudaMemcpy(got.data(), y, kBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  static_cast<void>(cudaFree(x));
  static_cast<void>(cudaFree(y));
  static_cast<void>(cudaStreamDestroy(producer));
  static_cast<void>(cudaStreamDestroy(consumer));
  if (!overlapped) {
    GTEST_SKIP() << "the GPU ran the two streams' kernels one after the other (a sanitizer "
                    "serialises them): no overlap to show";
  }
  const auto stale = [](std::uint64_t i) { return transformed(0, i, 3, 7); };
  EXPECT_EQ(first_wrong(got, stale), got.size())
      << "the unordered consumer did not read the bytes from before the producer";
}

TEST(CudaStreams, O1_AThreeStreamPipelineOfSlowProducersGivesTheSequentialBytes) {
  // Each round: a slow producer on s1 (it spins before writing), a
  // transform on s2, a combine on s3 that reads both; the intermediate
  // buffers are dropped every round, so their memory is reused while other
  // streams may still use it (O3). Only the Device's waits order the three.
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const StreamId s1 = device.create_stream();
  const StreamId s2 = device.create_stream();
  const StreamId s3 = device.create_stream();
  constexpr std::uint32_t kRounds = 6;
  std::vector<Allocation> results;
  for (std::uint32_t round = 0; round < kRounds; ++round) {
    const Allocation x = device.create_buffer(kBytes, s1);
    const Allocation y = device.create_buffer(kBytes, s2);
    Allocation z = device.create_buffer(kBytes, s3);
    ASSERT_TRUE(slow_fill(device, s1, x, 1000u * round, 2'000'000).ran());
    ASSERT_TRUE(transform(device, s2, x, y, round + 2, round).ran());
    ASSERT_TRUE(combine(device, s3, y, x, z).ran());
    results.push_back(std::move(z));
  }
  for (std::uint32_t round = 0; round < kRounds; ++round) {
    const std::vector<std::uint32_t> got = words(device, results[round]);
    const auto expected = [&](std::uint64_t i) {
      const std::uint32_t x = 1000u * round + static_cast<std::uint32_t>(i);
      return transformed(x, i, round + 2, round) ^ (x * 3u);
    };
    EXPECT_EQ(first_wrong(got, expected), got.size()) << "round " << round;
  }
  EXPECT_GE(device.stream_stats().waits_inserted, 2u * kRounds);
  device.check_invariants();
}

// ------------------------------------------------------------ O3

TEST(CudaStreams, O3_Pytorch188655_ABufferASideStreamStillWritesIsNotReusedByTheMainStream) {
  // pytorch#188655: a collective writes its output on a side stream, the
  // program drops the buffer, and the main stream's next allocation gets the
  // same memory while the side stream is still writing it. Here the side
  // stream's write is gated until after the main stream has filled its new
  // buffer; with the memory reused, the late write would land in it.
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const StreamId main_stream = device.default_stream();
  const StreamId side = device.create_stream();
  const StreamId copy = device.create_stream();
  const Allocation source = device.create_buffer(kBytes, main_stream);
  ASSERT_TRUE(fill_words(device, main_stream, source, 0x11u).ran());
  Gate gate;
  Allocation output = device.create_buffer(kBytes, main_stream);
  // The side stream writes the main stream's buffer, late; a copy stream
  // reads the main stream's source meanwhile.
  ASSERT_TRUE(gate_fill(device, side, gate, output, 0xAAu).ran());
  const Allocation copied = device.create_buffer(kBytes, copy);
  ASSERT_TRUE(transform(device, copy, source, copied, 1, 0).ran());
  EXPECT_GE(device.stream_stats().pins_held, 1u) << "the side stream holds the buffer (O3)";
  output.reset(); // Dropped while the side stream may still write it.

  const Allocation fresh = device.create_buffer(kBytes, main_stream);
  cudaStream_t main_handle = nullptr;
  ASSERT_TRUE(device
                  .launch(main_stream, "fill fresh", {}, {fresh.whole()},
                          [&](const KernelContext& context) {
                            main_handle = stream_of(context);
                            static_cast<void>(launch(context, fill_words_kernel(),
                                                     shape(blocks_for(kWords)),
                                                     out_words(context, 0), kWords, 0x55u));
                            return LaunchOutcome::success();
                          })
                  .ran());
  // Let the main stream's fill finish before the side stream writes (where
  // the GPU runs them side by side; under a sanitizer they run in order and
  // this just waits out the deadline).
  static_cast<void>(finishes_within(main_handle, 2.0));
  gate.open();
  const std::vector<std::uint32_t> got = words(device, fresh);
  EXPECT_EQ(first_wrong(got, [](std::uint64_t) { return 0x55u; }), got.size())
      << "the side stream's late write landed in the main stream's new buffer";
  const std::vector<std::uint32_t> copy_bytes = words(device, copied);
  EXPECT_EQ(first_wrong(copy_bytes, [](std::uint64_t i) { return transformed(0x11u, i, 1, 0); }),
            copy_bytes.size());
  EXPECT_EQ(device.stream_stats().pins_held, 0u) << "synchronised: every pin let go";
  device.check_invariants();
}

// ------------------------------------------------------------ O4

TEST(CudaStreams, O4_DetectModeQueuesNoWaitAndTaintsTheReaderWithARaceNamingBothLaunches) {
  TAINTPOOL_REQUIRE_GPU();
  if (cuda::running_under_sanitizer()) {
    // compute-sanitizer runs kernels one after another: the gated producer
    // gives up waiting before the host can open its gate.
    GTEST_SKIP() << "a gated producer cannot be held open under compute-sanitizer";
  }
  CudaBackend backend;
  Device device(backend, DeviceOptions{std::nullopt, StreamOrdering::Detect});
  const StreamId s1 = device.create_stream();
  const StreamId s2 = device.create_stream();
  const StreamId s3 = device.create_stream();
  const Allocation x = device.create_buffer(kBytes, s1);
  const Allocation y = device.create_buffer(kBytes, s2);
  const Allocation unrelated = device.create_buffer(kBytes, s3);
  Gate gate;
  ASSERT_TRUE(gate_fill(device, s1, gate, x, 0xA1u).ran());
  cudaStream_t reader = nullptr;
  const LaunchResult raced = transform(device, s2, x, y, 3, 7, &reader);
  EXPECT_EQ(raced.status, LaunchStatus::Failed);
  ASSERT_TRUE(raced.error.has_value());
  EXPECT_EQ(raced.error->kind(), ErrorKind::Race);
  // Work on bytes no other stream touches is not affected (D2).
  EXPECT_TRUE(fill_words(device, s3, unrelated, 5u).ran());
  // No wait was queued: the reader runs while the producer is gated
  // (where the GPU overlaps streams at all).
  const bool overlapped = finishes_within(reader, 5.0);
  gate.open();
  const StreamStats stats = device.stream_stats();
  EXPECT_EQ(stats.waits_inserted, 0u);
  EXPECT_GE(stats.races_detected, 1u);
  const std::vector<Report> reports = device.stale_reports(y.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::Race);
  const std::string& message = reports[0].root.message();
  EXPECT_NE(message.find("transform"), std::string::npos) << message;
  EXPECT_NE(message.find("gate fill"), std::string::npos) << message;
  EXPECT_NE(message.find(to_string(s1)), std::string::npos) << message;
  EXPECT_NE(message.find(to_string(s2)), std::string::npos) << message;
  EXPECT_THROW(static_cast<void>(device.read_bytes(y.whole())), StaleRead);
  EXPECT_EQ(words(device, unrelated), std::vector<std::uint32_t>(kWords, 5u));
  if (!overlapped) {
    // Kernels run one after another (a sanitizer): the gated writer gave up
    // waiting for the gate before it could be opened, so x holds no fill.
    GTEST_SKIP() << "the GPU ran the kernels one after the other (a sanitizer): the race was "
                    "reported, but the reader could not be seen running early";
  }
  // The writer's bytes are good.
  const std::vector<std::uint32_t> xs = words(device, x);
  EXPECT_EQ(first_wrong(xs, [](std::uint64_t) { return 0xA1u; }), xs.size());
}

// ------------------------------------------------------------ O5

TEST(CudaStreams, O5_EightHostThreadsLaunchOnTheirOwnStreamsAndEachReadsItsOwnBytes) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const Allocation shared = device.create_buffer(kBytes);
  ASSERT_TRUE(fill_words(device, device.default_stream(), shared, 0x5EEDu).ran());
  constexpr std::uint32_t kThreads = 8;
  constexpr std::uint32_t kRounds = 48;
  std::vector<std::string> problems(kThreads);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        if (cudaSetDevice(backend.device()) != cudaSuccess) {
          problems[t] = "cudaSetDevice failed";
          return;
        }
        const StreamId mine = device.create_stream();
        const Allocation a = device.create_buffer(kBytes, mine);
        const Allocation b = device.create_buffer(kBytes, mine);
        for (std::uint32_t round = 0; round < kRounds; ++round) {
          // Reads the shared buffer (another stream's), writes its own.
          if (!transform(device, mine, shared, a, t + 1, round).ran() ||
              !combine(device, mine, a, shared, b).ran()) {
            problems[t] = "a launch did not run in round " + std::to_string(round);
            return;
          }
          if (round % 16 == 15) {
            const std::vector<std::uint32_t> got = words(device, b);
            const std::uint64_t wrong = first_wrong(got, [&](std::uint64_t i) {
              return transformed(0x5EEDu, i, t + 1, round) ^ (0x5EEDu * 3u);
            });
            if (wrong != got.size()) {
              problems[t] = "round " + std::to_string(round) + ": word " + std::to_string(wrong);
              return;
            }
          }
        }
        device.destroy_stream(mine);
      } catch (const std::exception& error) {
        problems[t] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    EXPECT_EQ(problems[t], "") << "thread " << t;
  }
  const StreamStats stats = device.stream_stats();
  EXPECT_EQ(stats.streams_created, kThreads);
  // Each stream waits for the shared buffer's writer at most once (O2).
  EXPECT_LE(stats.waits_inserted, kThreads);
  device.check_invariants();
}

// ------------------------------------------------------------ events, launch path

TEST(CudaStreams, O2_AWarmDeviceCreatesNoEventWhileThreeStreamsHandBuffersBackAndForth) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const StreamId s1 = device.create_stream();
  const StreamId s2 = device.create_stream();
  const StreamId s3 = device.create_stream();
  const Allocation x = device.create_buffer(kBytes, s1);
  const Allocation y = device.create_buffer(kBytes, s2);
  const Allocation z = device.create_buffer(kBytes, s3);
  const auto round = [&](std::uint32_t value) {
    // s1 writes x (after s2 read it: write after read); s2 reads x and
    // writes y (read after write); s3 reads y and writes z.
    return fill_words(device, s1, x, value).ran() && transform(device, s2, x, y, 2, 1).ran() &&
           transform(device, s3, y, z, 3, 0).ran();
  };
  for (std::uint32_t warm = 0; warm < 64; ++warm) {
    ASSERT_TRUE(round(warm));
  }
  const std::size_t events = backend.events_created();
  const std::uint64_t waits = device.stream_stats().waits_inserted;
  constexpr std::uint32_t kRounds = 500;
  for (std::uint32_t at = 0; at < kRounds; ++at) {
    ASSERT_TRUE(round(at + 100));
  }
  EXPECT_EQ(backend.events_created(), events) << "a warm Device created events";
  // Per round, one wait per conflicting source stream and none more (O2):
  // s1's write of x after s2's read (1); s2's read of x after s1's write
  // and its write of y after s3's read (2); s3's read of y after s2's
  // write (1).
  EXPECT_EQ(device.stream_stats().waits_inserted - waits, 4u * kRounds);
  const std::vector<std::uint32_t> got = words(device, z);
  const std::uint32_t last = kRounds - 1 + 100;
  EXPECT_EQ(
      first_wrong(
          got, [&](std::uint64_t i) { return transformed(transformed(last, i, 2, 1), i, 3, 0); }),
      got.size());
}

TEST(CudaStreams, S1_ALaunchThroughTheBackendThatTheRuntimeRefusesFailsWhateverTheBodyReturns) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  const Allocation out = device.create_buffer(kBytes, side);
  cudaError_t status = cudaSuccess;
  const LaunchResult refused =
      device.launch(side, "too wide", {}, {out.whole()}, [&](const KernelContext& context) {
        status =
            launch(context, fill_words_kernel(), shape(1, 2048), out_words(context, 0), kWords, 1u);
        return LaunchOutcome::success(); // Ignores the status: the backend does not.
      });
  EXPECT_NE(status, cudaSuccess);
  EXPECT_EQ(refused.status, LaunchStatus::Failed);
  ASSERT_TRUE(refused.error.has_value());
  EXPECT_EQ(refused.error->kind(), ErrorKind::Launch);
  EXPECT_NE(refused.error->message().find(cudaGetErrorName(status)), std::string::npos)
      << refused.error->message();
  EXPECT_NE(refused.error->message().find("too wide"), std::string::npos);
  EXPECT_FALSE(backend.poisoned());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed launch's error was left pending";
  EXPECT_THROW(static_cast<void>(device.read_bytes(out.whole())), StaleRead);
  // The next launch through the backend repairs the buffer (S5).
  ASSERT_TRUE(fill_words(device, side, out, 9u).ran());
  EXPECT_EQ(words(device, out), std::vector<std::uint32_t>(kWords, 9u));
}

TEST(CudaStreams, S1_ARawLaunchErrorIsStillCaughtAfterBodiesThatLaunchedThroughTheBackend) {
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  const Allocation words_out = device.create_buffer(kBytes, side);
  const Allocation floats_out = device.create_buffer(4096 * sizeof(float), side);
  for (int at = 0; at < 4; ++at) {
    ASSERT_TRUE(fill_words(device, side, words_out, 3u).ran());
  }
  // A <<<>>> body with an invalid block: judged by the runtime's last error.
  const LaunchResult raw = device.launch(
      side, "raw too wide", {}, {floats_out.whole()}, [&](const KernelContext& context) {
        fill_with_block(stream_of(context), reinterpret_cast<float*>(context.write_binding(0).data),
                        4096, 1.0f, 2048);
        return LaunchOutcome::success();
      });
  EXPECT_EQ(raw.status, LaunchStatus::Failed);
  ASSERT_TRUE(raw.error.has_value());
  EXPECT_EQ(raw.error->kind(), ErrorKind::Launch);
  // And a good raw body after it runs: nothing stale is blamed on it.
  const LaunchResult good =
      device.launch(side, "raw fill", {}, {floats_out.whole()}, [&](const KernelContext& context) {
        fill(stream_of(context), reinterpret_cast<float*>(context.write_binding(0).data), 4096,
             2.0f);
        return LaunchOutcome::success();
      });
  EXPECT_TRUE(good.ran());
  EXPECT_EQ(words(device, words_out), std::vector<std::uint32_t>(kWords, 3u));
  EXPECT_TRUE(device.stale_reports(floats_out.whole()).empty());
}

TEST(CudaStreams, S3_CudaLaunchInABodyOnTheHostBackendThrowsAndLeavesTheOutputsTornDown) {
  // No GPU needed: cuda::launch refuses before it calls the runtime.
  HostBackend host;
  Device device(host);
  const Allocation out = device.create_buffer(64);
  EXPECT_THROW(device.launch("misplaced", {}, {out.whole()},
                             [](const KernelContext& context) {
                               static_cast<void>(launch(context, nothing_kernel(), shape(1, 1)));
                               return LaunchOutcome::success();
                             }),
               std::logic_error);
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].root.kind(), ErrorKind::TornDown);
  EXPECT_NE(reports[0].root.message().find("misplaced"), std::string::npos);
  EXPECT_NE(reports[0].root.message().find("CudaBackend"), std::string::npos);
  device.check_invariants();
}

TEST(CudaStreams, S6_AZeroBlockLaunchOnASideStreamLeavesItsStaleOutputStale) {
  // CubeCL's a_zero_cube_count_launch_does_not_untaint_its_outputs, on a GPU
  // stream: a launch of no blocks queues no kernel (CUDA refuses a zero
  // grid) and says it wrote nothing.
  TAINTPOOL_REQUIRE_GPU();
  CudaBackend backend;
  Device device(backend);
  const StreamId side = device.create_stream();
  const Allocation out = device.create_buffer(kBytes, side);
  ASSERT_EQ(device
                .launch(side, "failing", {}, {out.whole()},
                        [](const KernelContext&) {
                          return LaunchOutcome::failure(Error::launch("injected"));
                        })
                .status,
            LaunchStatus::Failed);
  const LaunchResult empty =
      device.launch(side, "zero blocks", {}, {out.whole()},
                    [](const KernelContext&) { return LaunchOutcome::wrote_only({}); });
  EXPECT_TRUE(empty.ran());
  const std::vector<Report> reports = device.stale_reports(out.whole());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].root.message().find("injected"), std::string::npos);
  EXPECT_EQ(reports[0].stale, ByteRange::sized(0, kBytes));
}

} // namespace
} // namespace taintpool::cuda::testing
