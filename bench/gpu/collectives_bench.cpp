// nccl_collectives_bench: what taint across ranks costs on top of NCCL —
// taintpool's collectives against the same NCCL calls made directly, in one
// run, on every GPU of the machine (one process per GPU, forked: see
// tests/nccl/nccl_ranks.hpp).
//
// For each operation (all-reduce, all-gather, reduce-scatter, broadcast, a
// send/recv ring) and each size (64 KiB and 64 MiB: the larger buffer of the
// operation, as nccl-tests counts it), four variants, timed in interleaved
// rounds so drift hits them alike:
//   plain      the NCCL call alone, on the communicator taintpool uses
//              (nonblocking, ncclConfig_t blocking = 0);
//   +summary   the NCCL call and the 1 KiB-per-rank summary exchange in one
//              group: what the summary itself costs the device;
//   taintpool  Collectives on a Device on a CollectiveBackend around a
//              CudaBackend: the exchange's scope, the summary, the group,
//              the event, and the verdicts applied at the end;
//   device     taintpool with its summaries in device memory (an upload and
//              a download around the group) instead of mapped host memory;
//   blocking   the NCCL call alone on a default (blocking) communicator, for
//              reference.
// A round: a barrier (a tiny all-reduce, synchronized), then N calls back to
// back on one stream, then a wait for all of them (plain: the stream;
// taintpool: Device::synchronize, which also applies every verdict). Time
// per call = the round's wall time / N; each variant's figure is the median
// over the rounds. Overhead = taintpool / plain - 1. Also the host's issue
// time per call (the loop alone, before the wait).
//
// Usage: nccl_collectives_bench [--quick] [--out FILE.md]. Prints the
// table on rank 0 (and writes it to FILE.md); exit 77 without a GPU.
#include <taintpool/collective/collectives.hpp>
#include <taintpool/collective/nccl_communicator.hpp>
#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "nccl_ranks.hpp"

namespace taintpool {
namespace {

bool quick = false;
std::string out_path;

enum class Op { all_reduce, all_gather, reduce_scatter, broadcast, send_recv };

const char* op_name(Op op) {
  switch (op) {
  case Op::all_reduce:
    return "all_reduce";
  case Op::all_gather:
    return "all_gather";
  case Op::reduce_scatter:
    return "reduce_scatter";
  case Op::broadcast:
    return "broadcast";
  case Op::send_recv:
    return "send_recv";
  }
  return "?";
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void must(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(error));
    std::exit(3);
  }
}

void must(ncclResult_t result, const char* what) {
  if (result != ncclSuccess && result != ncclInProgress) {
    std::printf("%s: %s\n", what, ncclGetErrorString(result));
    std::exit(3);
  }
}

/// Waits for a nonblocking communicator's last call to be enqueued.
void settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    must(ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
  }
  must(state, "async");
}

struct Row {
  std::string op;
  std::uint64_t bytes;
  double plain, summary, taint, taint_device, blocking, issue_plain, issue_taint;
};

int run(const testing::NcclRank& info) {
  const int me = info.rank;
  const int ranks = info.ranks;
  cuda::NcclOptions options;
  options.timeout = std::chrono::seconds(120);
  cuda::NcclCommunicator communicator(info.ids[0], ranks, me, me, options);
  ncclComm_t comm = communicator.handle();
  ncclComm_t blocking = nullptr;
  ncclUniqueId second;
  std::memcpy(second.internal, info.ids[1].data(), NCCL_UNIQUE_ID_BYTES);
  must(ncclCommInitRank(&blocking, ranks, second, me), "ncclCommInitRank");

  cuda::NcclOptions device_options = options;
  device_options.summaries = cuda::NcclOptions::Summaries::device;
  cuda::NcclCommunicator device_communicator(info.ids[2], ranks, me, me, device_options);

  cuda::CudaBackendOptions backend_options;
  backend_options.device = me;
  cuda::CudaBackend backend(backend_options);
  CollectiveBackend adaptor(backend);
  Device device(adaptor);
  Collectives collectives(device, communicator);
  Collectives device_collectives(device, device_communicator);
  const StreamId stream_id = device.create_stream();
  cudaStream_t stream = nullptr;
  must(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // The summary's own scratch for the +summary variant (device memory).
  void* summary = nullptr;
  must(cudaMalloc(&summary, (static_cast<std::size_t>(ranks) + 1) * TaintSummary::bytes),
       "cudaMalloc");
  void* token = nullptr;
  must(cudaMalloc(&token, 4), "cudaMalloc");
  const auto barrier = [&] {
    must(ncclAllReduce(token, token, 1, ncclInt32, ncclSum, blocking, stream), "barrier");
    must(cudaStreamSynchronize(stream), "barrier sync");
  };

  std::vector<Row> rows;
  const std::vector<std::uint64_t> sizes = {64ull << 10, 64ull << 20};
  for (const Op op :
       {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::broadcast, Op::send_recv}) {
    if (op == Op::send_recv && ranks < 2) {
      continue;
    }
    for (const std::uint64_t bytes : sizes) {
      const auto n = static_cast<std::uint64_t>(ranks);
      const std::uint64_t big = bytes - bytes % (4 * n);
      const std::uint64_t send_bytes =
          op == Op::all_gather ? big / n : big; // reduce-scatter sends the big one
      const std::uint64_t recv_bytes = op == Op::reduce_scatter ? big / n : big;
      const std::uint64_t count = (op == Op::reduce_scatter ? recv_bytes : send_bytes) / 4;
      const Allocation send = device.create_buffer(send_bytes, stream_id);
      const Allocation recv = device.create_buffer(recv_bytes, stream_id);
      const Allocation send_raw = device.create_buffer(send_bytes, stream_id);
      const Allocation recv_raw = device.create_buffer(recv_bytes, stream_id);
      // Raw pointers for the plain variants, through a launch's context.
      void* raw_send = nullptr;
      void* raw_recv = nullptr;
      static_cast<void>(device.launch(
          "address", {send_raw.whole()}, {recv_raw.whole()}, [&](const KernelContext& context) {
            raw_send = const_cast<std::byte*>(context.read(0).data());
            raw_recv = context.write(0).data();
            cudaMemsetAsync(raw_recv, 0, recv_bytes, cuda::stream_of(context));
            return LaunchOutcome::success();
          }));
      static_cast<void>(device.launch("fill", {}, {send.whole()}, [&](const KernelContext& c) {
        cudaMemsetAsync(c.write(0).data(), 1, send_bytes, cuda::stream_of(c));
        return LaunchOutcome::success();
      }));
      device.synchronize();
      const int next = (me + 1) % ranks;
      const int previous = (me + ranks - 1) % ranks;

      const auto nccl_op = [&](ncclComm_t on) {
        switch (op) {
        case Op::all_reduce:
          must(ncclAllReduce(raw_send, raw_recv, count, ncclFloat32, ncclSum, on, stream), "op");
          break;
        case Op::all_gather:
          must(ncclAllGather(raw_send, raw_recv, count, ncclFloat32, on, stream), "op");
          break;
        case Op::reduce_scatter:
          must(ncclReduceScatter(raw_send, raw_recv, count, ncclFloat32, ncclSum, on, stream),
               "op");
          break;
        case Op::broadcast:
          must(ncclBroadcast(raw_send, raw_recv, count, ncclFloat32, 0, on, stream), "op");
          break;
        case Op::send_recv:
          must(ncclGroupStart(), "group");
          must(ncclSend(raw_send, count, ncclFloat32, next, on, stream), "send");
          must(ncclRecv(raw_recv, count, ncclFloat32, previous, on, stream), "recv");
          must(ncclGroupEnd(), "group");
          break;
        }
      };
      const auto plain = [&] {
        nccl_op(comm);
        settle(comm);
      };
      const auto with_summary = [&] {
        auto* all = static_cast<std::byte*>(summary);
        auto* mine = all + static_cast<std::size_t>(ranks) * TaintSummary::bytes;
        must(ncclGroupStart(), "group");
        nccl_op(comm);
        if (op == Op::broadcast) {
          must(ncclBroadcast(mine, all, TaintSummary::bytes, ncclUint8, 0, comm, stream), "s");
        } else if (op == Op::send_recv) {
          must(ncclSend(mine, TaintSummary::bytes, ncclUint8, next, comm, stream), "s");
          must(ncclRecv(all, TaintSummary::bytes, ncclUint8, previous, comm, stream), "s");
        } else {
          must(ncclAllGather(mine, all, TaintSummary::bytes, ncclUint8, comm, stream), "s");
        }
        must(ncclGroupEnd(), "group");
        settle(comm);
      };
      const auto taint_on = [&](Collectives& on) {
        switch (op) {
        case Op::all_reduce:
          on.all_reduce(stream_id, "x", send.whole(), recv.whole(), DataType::f32,
                                 ReduceOp::sum);
          break;
        case Op::all_gather:
          on.all_gather(stream_id, "x", send.whole(), recv.whole(), DataType::f32);
          break;
        case Op::reduce_scatter:
          on.reduce_scatter(stream_id, "x", send.whole(), recv.whole(), DataType::f32,
                                     ReduceOp::sum);
          break;
        case Op::broadcast:
          on.broadcast(stream_id, "x", send.whole(), recv.whole(), DataType::f32, 0);
          break;
        case Op::send_recv:
          // Separate groups on one stream: even ranks send first (a ring).
          if (me % 2 == 0) {
            on.send(stream_id, "x", send.whole(), DataType::f32, next);
            on.recv(stream_id, "x", recv.whole(), DataType::f32, previous);
          } else {
            on.recv(stream_id, "x", recv.whole(), DataType::f32, previous);
            on.send(stream_id, "x", send.whole(), DataType::f32, next);
          }
          break;
        }
      };
      const auto taint = [&] { taint_on(collectives); };
      const auto taint_device = [&] { taint_on(device_collectives); };
      const auto blocking_op = [&] { nccl_op(blocking); };

      const bool small = bytes < (1u << 20);
      const int calls = quick ? 5 : small ? 200 : 20;
      const int rounds = quick ? 3 : 7;
      struct Variant {
        std::function<void()> call;
        std::function<void()> wait;
        std::vector<double> per_call;
        std::vector<double> issue;
      };
      const auto stream_wait = [&] { must(cudaStreamSynchronize(stream), "sync"); };
      const auto device_wait = [&] { device.synchronize(); };
      std::vector<Variant> variants = {{plain, stream_wait, {}, {}},
                                       {with_summary, stream_wait, {}, {}},
                                       {taint, device_wait, {}, {}},
                                       {taint_device, device_wait, {}, {}},
                                       {blocking_op, stream_wait, {}, {}}};
      for (Variant& variant : variants) { // Warm up: connections, slots, events.
        for (int call = 0; call < 3; ++call) {
          variant.call();
        }
        variant.wait();
      }
      for (int round = 0; round < rounds; ++round) {
        for (Variant& variant : variants) {
          barrier();
          const auto start = std::chrono::steady_clock::now();
          for (int call = 0; call < calls; ++call) {
            variant.call();
          }
          const auto issued = std::chrono::steady_clock::now();
          variant.wait();
          const auto done = std::chrono::steady_clock::now();
          variant.per_call.push_back(
              std::chrono::duration<double, std::micro>(done - start).count() / calls);
          variant.issue.push_back(
              std::chrono::duration<double, std::micro>(issued - start).count() / calls);
        }
      }
      rows.push_back(Row{op_name(op), big, median(variants[0].per_call),
                         median(variants[1].per_call), median(variants[2].per_call),
                         median(variants[3].per_call), median(variants[4].per_call),
                         median(variants[0].issue), median(variants[2].issue)});
      if (me == 0) {
        const Row& row = rows.back();
        std::printf("  %-15s %9llu B  plain %9.2f us  +summary %9.2f us  taintpool %9.2f us  "
                    "(%+.1f%%)  device summaries %9.2f us  blocking %9.2f us\n",
                    row.op.c_str(), static_cast<unsigned long long>(row.bytes), row.plain,
                    row.summary, row.taint, 100.0 * (row.taint / row.plain - 1.0), row.taint_device,
                    row.blocking);
        std::fflush(stdout);
      }
    }
  }
  device.synchronize();
  must(cudaStreamSynchronize(stream), "sync");
  ncclCommDestroy(blocking);
  cudaFree(summary);
  cudaFree(token);
  cudaStreamDestroy(stream);

  if (me == 0) {
    std::string table = "| op | bytes | plain NCCL (us) | + summary in the group (us) | "
                        "taintpool (us) | overhead | taintpool, summaries in device memory "
                        "(us) | blocking comm (us) | issue plain / taintpool (us/call) |\n"
                        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    char line[512];
    for (const Row& row : rows) {
      std::snprintf(line, sizeof(line),
                    "| %s | %llu | %.2f | %.2f | %.2f | %+.1f%% | %.2f | %.2f | %.2f / %.2f |\n",
                    row.op.c_str(), static_cast<unsigned long long>(row.bytes), row.plain,
                    row.summary, row.taint, 100.0 * (row.taint / row.plain - 1.0), row.taint_device,
                    row.blocking, row.issue_plain, row.issue_taint);
      table += line;
    }
    std::printf("\nnccl_collectives_bench: %d ranks, medians of %d rounds\n%s", ranks,
                quick ? 3 : 7, table.c_str());
    if (!out_path.empty()) {
      std::ofstream(out_path) << table;
    }
  }
  return 0;
}

} // namespace
} // namespace taintpool

int main(int argc, char** argv) {
  for (int arg = 1; arg < argc; ++arg) {
    const std::string flag = argv[arg];
    if (flag == "--quick") {
      taintpool::quick = true;
    } else if (flag == "--out" && arg + 1 < argc) {
      taintpool::out_path = argv[++arg];
    }
  }
  return taintpool::testing::run_nccl_ranks(3, 600, taintpool::run);
}
