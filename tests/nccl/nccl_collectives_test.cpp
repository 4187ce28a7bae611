// Collectives over NCCL on real GPUs, one process per GPU (labels gpu,
// nccl): the rules of C1-C6 where the verdict always lands late (C5), on
// device memory, with the collective on a stream of its own.
//
// A plain main rather than GoogleTest: the GPU machine has only the CUDA
// toolkit and NCCL, and everything GPU must build there from this tree in
// one script (bench/gpu/run_collectives.sh). Each check prints what failed,
// prefixed with its rank, and the rank exits nonzero; run_nccl_ranks makes
// the program fail when any rank did, and kills ranks that hang.
//
// On every rank, for each kind of collective with the last rank's input
// made stale just before it (a producer that ran out of memory halfway):
// every output element is checked — stale ones by their report (the last
// rank's own failure there; on the others a Remote failure naming the last
// rank and its root), clean ones by value. Then: both places the summaries
// can live (mapped host memory, device memory), a launch that consumed fed
// bytes before the verdict landed (C5), the collective stream ordered after
// the default stream's writer (O1), and a rank that never calls (C6: the
// others' reads report a communicator error after the timeout; nothing
// hangs). With one GPU the cross-rank checks are skipped and the rest run
// with one rank.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/nccl_communicator.hpp>
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/exception.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl_ranks.hpp"

namespace taintpool {
namespace {

int me = 0;
int ranks = 1;
int failures = 0;
std::string current_test;

void check(bool ok, const std::string& what, const char* file, int line) {
  if (!ok) {
    ++failures;
    std::printf("[rank %d] FAIL %s (%s:%d): %s\n", me, current_test.c_str(), file, line,
                what.c_str());
  }
}
#define CHECK(condition, what) check((condition), (what), __FILE__, __LINE__)

constexpr std::uint64_t kBlock = 64; // i32 elements per block.

std::int32_t value(int rank, std::uint64_t element) {
  return (rank + 1) * 1000 + static_cast<std::int32_t>(element);
}

std::vector<std::byte> as_bytes(const std::vector<std::int32_t>& values) {
  std::vector<std::byte> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Binding elements(const Allocation& allocation, std::uint64_t first, std::uint64_t last) {
  return Binding{allocation.id(), ByteRange::of(first * 4, last * 4)};
}

/// One rank's Device for one test: a CudaBackend under a CollectiveBackend,
/// a stream for the collectives.
struct Rank {
  explicit Rank(Communicator& communicator)
      : backend(options()) {
    collectives = std::make_unique<Collectives>(device, communicator);
    comm = device.create_stream();
  }
  static cuda::CudaBackendOptions options() {
    cuda::CudaBackendOptions options;
    options.device = me;
    return options;
  }
  cuda::CudaBackend backend;
  CollectiveBackend adaptor{backend};
  Device device{adaptor};
  std::unique_ptr<Collectives> collectives;
  StreamId comm;
};

enum class Kind { all_reduce, all_gather, reduce_scatter, broadcast, send_recv };

const char* kind_name(Kind kind) {
  switch (kind) {
  case Kind::all_reduce:
    return "all_reduce";
  case Kind::all_gather:
    return "all_gather";
  case Kind::reduce_scatter:
    return "reduce_scatter";
  case Kind::broadcast:
    return "broadcast";
  case Kind::send_recv:
    return "send_recv";
  }
  return "?";
}

/// C3/C4 for one kind: the last rank's elements [8, 12) (reduce-scatter:
/// [kBlock - 2, kBlock + 2), across two blocks) go stale just before.
void stale_input(Communicator& communicator, Kind kind, bool inject) {
  Rank rank(communicator);
  const int stale = ranks - 1;
  const auto n = static_cast<std::uint64_t>(ranks);
  const std::uint64_t contribution = kind == Kind::reduce_scatter ? kBlock * n : kBlock;
  const std::uint64_t output = kind == Kind::all_gather ? kBlock * n : kBlock;
  std::vector<std::int32_t> mine(contribution);
  for (std::uint64_t element = 0; element < contribution; ++element) {
    mine[element] = value(me, element);
  }
  const Allocation send = rank.device.create_buffer(as_bytes(mine));
  const Allocation recv = rank.device.create_buffer(output * 4);
  const bool across = kind == Kind::reduce_scatter && ranks >= 2;
  const std::uint64_t first = across ? kBlock - 2 : 8;
  const std::uint64_t last = across ? kBlock + 2 : 12;
  if (inject && me == stale) {
    std::vector<WrittenRange> written{WrittenRange{0, ByteRange::of(0, first * 4)},
                                      WrittenRange{0, ByteRange::of(last * 4, contribution * 4)}};
    static_cast<void>(rank.device.launch("producer", {}, {send.whole()}, [&](const KernelContext&) {
      return LaunchOutcome::partial(Error::out_of_memory("no room"), written);
    }));
  }
  Collectives& collectives = *rank.collectives;
  const int next = (me + 1) % ranks;
  const int previous = (me + ranks - 1) % ranks;
  std::string op = kind_name(kind);
  switch (kind) {
  case Kind::all_reduce:
    collectives.all_reduce(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32,
                           ReduceOp::sum);
    break;
  case Kind::all_gather:
    collectives.all_gather(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32);
    break;
  case Kind::reduce_scatter:
    collectives.reduce_scatter(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32,
                               ReduceOp::sum);
    break;
  case Kind::broadcast:
    collectives.broadcast(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32, stale);
    break;
  case Kind::send_recv:
    op = "recv";
    // A ring, each call its own group on one stream: even ranks send first,
    // odd ranks receive first, so every send meets its receive.
    if (me % 2 == 0) {
      collectives.send(rank.comm, "grads", send.whole(), DataType::i32, next);
      collectives.recv(rank.comm, "grads", recv.whole(), DataType::i32, previous);
    } else {
      collectives.recv(rank.comm, "grads", recv.whole(), DataType::i32, previous);
      collectives.send(rank.comm, "grads", send.whole(), DataType::i32, next);
    }
    break;
  }
  const auto total = static_cast<std::int32_t>(ranks);
  const std::int32_t base = 1000 * total * (total + 1) / 2;
  const std::string kernel = op + "(grads) on rank " + std::to_string(me);
  for (std::uint64_t element = 0; element < output; ++element) {
    std::int32_t expect = 0;
    bool hit = false;
    switch (kind) {
    case Kind::all_reduce:
      expect = base + total * static_cast<std::int32_t>(element);
      hit = element >= first && element < last;
      break;
    case Kind::all_gather: {
      const auto block = static_cast<int>(element / kBlock);
      expect = value(block, element % kBlock);
      hit = block == stale && element % kBlock >= first && element % kBlock < last;
      break;
    }
    case Kind::reduce_scatter: {
      const std::uint64_t source = static_cast<std::uint64_t>(me) * kBlock + element;
      expect = base + total * static_cast<std::int32_t>(source);
      hit = source / n >= first / n && source / n < (last + n - 1) / n;
      break;
    }
    case Kind::broadcast:
      expect = value(stale, element);
      hit = element >= first && element < last;
      break;
    case Kind::send_recv:
      expect = value(previous, element);
      hit = previous == stale && element >= first && element < last;
      break;
    }
    const Binding one = elements(recv, element, element + 1);
    const std::string where = std::string(kind_name(kind)) + " element " + std::to_string(element);
    if (!(inject && hit)) {
      try {
        const std::vector<std::byte> bytes = rank.device.read_bytes(one);
        std::int32_t got = 0;
        std::memcpy(&got, bytes.data(), 4);
        CHECK(got == expect,
              where + ": " + std::to_string(got) + ", expected " + std::to_string(expect));
      } catch (const std::exception& error) {
        CHECK(false, where + " should be readable: " + error.what());
      }
      continue;
    }
    const std::vector<Report> reports = rank.device.stale_reports(one);
    CHECK(reports.size() == 1, where + ": " + std::to_string(reports.size()) + " reports");
    if (reports.empty()) {
      continue;
    }
    const Report& report = reports[0];
    if (me == stale) {
      CHECK(report.root.kind() == ErrorKind::OutOfMemory && !report.path.empty() &&
                report.path[0].took_part && report.path[0].kernel == kernel,
            where + ": not the rank's own root: " + to_string(report));
    } else {
      // Usually late (C5); at once if the call had landed when it returned.
      const std::string expected =
          kernel + ": fed stale bytes from rank " + std::to_string(stale) + ": allocation ";
      CHECK(report.root.kind() == ErrorKind::Remote &&
                report.root.message().rfind(expected, 0) == 0 &&
                report.root.message().find("(out of memory: producer: no room)") !=
                    std::string::npos,
            where + ": " + report.root.message());
    }
  }
  rank.device.check_invariants();
}

/// C5: a launch on another stream that read fed bytes before the verdict
/// landed is attributed when the device synchronizes.
void late_verdict(Communicator& communicator) {
  Rank rank(communicator);
  const Allocation send = rank.device.create_buffer(as_bytes(std::vector<std::int32_t>(kBlock, 1)));
  const Allocation recv = rank.device.create_buffer(kBlock * 4);
  const Allocation copy = rank.device.create_buffer(kBlock * 4);
  if (me == ranks - 1) {
    static_cast<void>(rank.device.launch("producer", {}, {send.whole()}, [](const KernelContext&) {
      return LaunchOutcome::failure(Error::out_of_memory("no room"));
    }));
  }
  const CollectiveResult result = rank.collectives->all_reduce(
      rank.comm, "grads", send.whole(), recv.whole(), DataType::i32, ReduceOp::sum);
  const LaunchResult copied =
      rank.device.launch("copy", {recv.whole()}, {copy.whole()}, [](const KernelContext& context) {
        cudaMemcpyAsync(context.write(0).data(), context.read(0).data(), context.read(0).size(),
                        cudaMemcpyDeviceToDevice, cuda::stream_of(context));
        return LaunchOutcome::success();
      });
  const std::vector<Report> reports = rank.device.stale_reports(copy.whole());
  CHECK(reports.size() == 1, std::to_string(reports.size()) + " reports on the copy");
  if (me == ranks - 1) {
    // Its own stale input was known at once: the copy was skipped (S1).
    CHECK(copied.status == LaunchStatus::Skipped, "the copy of own stale bytes was skipped");
  } else if (result.verdict_pending) {
    // The usual NCCL case: the copy ran before the verdict landed, on the
    // collective's stream's heels (O1), and is attributed now.
    CHECK(copied.ran(), "the copy ran before the verdict landed");
    CHECK(rank.device.stream_stats().waits_inserted >= 1,
          "the copy waited for the collective's stream (O1)");
    CHECK(!reports.empty() && reports[0].root.kind() == ErrorKind::Remote &&
              reports[0].path.size() == 1 && reports[0].path[0].ran &&
              reports[0].path[0].kernel == "copy",
          reports.empty() ? std::string("no report") : to_string(reports[0]));
  } else {
    // The call had landed when it returned: the verdict came at once.
    CHECK(copied.status == LaunchStatus::Skipped, "the copy of fed bytes was skipped");
    CHECK(!reports.empty() && reports[0].root.kind() == ErrorKind::Remote,
          reports.empty() ? std::string("no report") : to_string(reports[0]));
  }
  rank.device.check_invariants();
}

/// O1: the collective's stream waits for a copy queued on the default
/// stream that wrote its input.
void ordered_after_writer(Communicator& communicator) {
  Rank rank(communicator);
  const std::vector<std::int32_t> values(kBlock, me + 1);
  const Allocation source = rank.device.create_buffer(as_bytes(values));
  const Allocation send = rank.device.create_buffer(kBlock * 4);
  const Allocation recv = rank.device.create_buffer(kBlock * 4);
  static_cast<void>(rank.device.launch(
      "stage", {source.whole()}, {send.whole()}, [](const KernelContext& context) {
        cudaMemcpyAsync(context.write(0).data(), context.read(0).data(), context.read(0).size(),
                        cudaMemcpyDeviceToDevice, cuda::stream_of(context));
        return LaunchOutcome::success();
      }));
  rank.collectives->all_reduce(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32,
                               ReduceOp::max);
  CHECK(rank.device.stream_stats().waits_inserted >= 1, "no wait was queued");
  const std::vector<std::byte> bytes = rank.device.read_bytes(recv.whole());
  std::int32_t got = 0;
  std::memcpy(&got, bytes.data() + 4 * (kBlock - 1), 4);
  CHECK(got == ranks, "max over ranks: " + std::to_string(got));
}

/// C6: the last rank never calls; every other rank's read reports a
/// communicator error once the timeout passed, and the communicator refuses
/// further calls. Nothing hangs.
void never_called(const testing::NcclId& id) {
  cuda::NcclOptions options;
  options.timeout = std::chrono::milliseconds(3000);
  cuda::NcclCommunicator communicator(id, ranks, me, me, options);
  {
    Rank rank(communicator);
    const Allocation send =
        rank.device.create_buffer(as_bytes(std::vector<std::int32_t>(kBlock, 1)));
    const Allocation recv = rank.device.create_buffer(kBlock * 4);
    if (me != ranks - 1) {
      rank.collectives->all_reduce(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32,
                                   ReduceOp::sum);
      const auto start = std::chrono::steady_clock::now();
      const std::vector<Report> reports = rank.device.stale_reports(recv.whole());
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30),
            "the wait was bounded by the timeout");
      CHECK(reports.size() == 1 && reports[0].root.kind() == ErrorKind::Communicator,
            reports.empty() ? std::string("no report") : to_string(reports[0]));
      CHECK(communicator.broken().has_value(), "the communicator is broken");
      bool refused = false;
      try {
        rank.collectives->all_reduce(rank.comm, "grads", send.whole(), recv.whole(), DataType::i32,
                                     ReduceOp::sum);
      } catch (const Exception& error) {
        refused = error.kind() == ErrorKind::Communicator;
      }
      CHECK(refused, "a broken communicator refuses further calls");
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5000));
    }
  }
}

int run(const testing::NcclRank& rank_info) {
  me = rank_info.rank;
  ranks = rank_info.ranks;
  const auto run_test = [](const std::string& name, const auto& test) {
    current_test = name;
    const int before = failures;
    const auto start = std::chrono::steady_clock::now();
    try {
      test();
    } catch (const std::exception& error) {
      check(false, std::string("threw: ") + error.what(), __FILE__, __LINE__);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[rank %d] %s %s (%.2f s)\n", me, failures == before ? "ok  " : "FAIL",
                name.c_str(), seconds);
    std::fflush(stdout);
  };
  for (const auto mode :
       {cuda::NcclOptions::Summaries::host_mapped, cuda::NcclOptions::Summaries::device}) {
    const std::string where = mode == cuda::NcclOptions::Summaries::host_mapped
                                  ? "summaries in mapped host memory"
                                  : "summaries in device memory";
    cuda::NcclOptions options;
    options.timeout = std::chrono::seconds(60);
    options.summaries = mode;
    cuda::NcclCommunicator communicator(
        rank_info.ids[mode == cuda::NcclOptions::Summaries::host_mapped ? 0 : 1], ranks, me, me,
        options);
    for (const Kind kind : {Kind::all_reduce, Kind::all_gather, Kind::reduce_scatter,
                            Kind::broadcast, Kind::send_recv}) {
      if (kind == Kind::send_recv && ranks < 2) {
        continue;
      }
      run_test(std::string("C3 clean ") + kind_name(kind) + ", " + where,
               [&] { stale_input(communicator, kind, false); });
      run_test(std::string("C4 stale input on the last rank, ") + kind_name(kind) + ", " + where,
               [&] { stale_input(communicator, kind, true); });
    }
    run_test("C5 a late verdict reaches what ran on the fed bytes, " + where,
             [&] { late_verdict(communicator); });
    run_test("O1 the collective's stream waits for its input's writer, " + where,
             [&] { ordered_after_writer(communicator); });
  }
  if (ranks >= 2) {
    run_test("C6 a rank that never calls breaks the communicator without a hang",
             [&] { never_called(rank_info.ids[2]); });
  }
  std::printf("[rank %d] %s: %d failure(s)\n", me, failures == 0 ? "PASSED" : "FAILED", failures);
  return failures == 0 ? 0 : 1;
}

} // namespace
} // namespace taintpool

int main() {
  return taintpool::testing::run_nccl_ranks(3, 300, taintpool::run);
}
