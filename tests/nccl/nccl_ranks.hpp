// run_nccl_ranks: one process per GPU, forked from a parent that never
// touches CUDA — how the NCCL tests and benchmark run their ranks without
// mpirun (the GPU machine needs nothing but the CUDA driver and NCCL).
//
// The parent first forks a probe that counts the GPUs (CUDA must not be
// initialized before a fork, so the parent asks a child and reads its exit
// code), then forks one rank per GPU (TAINTPOOL_NCCL_RANKS, at most the
// GPUs there are). Rank 0 makes the NCCL unique ids and writes them into a
// pipe once per other rank; each other rank reads them (one write of at
// most PIPE_BUF bytes is atomic). Each rank runs `body` on its own GPU and
// exits with its result. The parent waits for all of them, for at most
// `timeout_s`; past it, it kills them (a hang is a failure, never a hung
// job). Returns 0 when every rank returned 0, 77 when there is no GPU,
// else the first nonzero status.
#pragma once

#include <taintpool/collective/nccl_communicator.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace taintpool::testing {

using NcclId = std::array<char, NCCL_UNIQUE_ID_BYTES>;

/// What one rank is given.
struct NcclRank {
  int rank = 0;
  int ranks = 1;
  std::vector<NcclId> ids; ///< Unique ids, the same on every rank.
};

inline int run_nccl_ranks(int ids, int timeout_s, const std::function<int(const NcclRank&)>& body) {
  std::fflush(stdout);
  const pid_t probe = fork();
  if (probe == 0) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      count = 0;
    }
    _exit(count > 100 ? 100 : count);
  }
  int status = 0;
  waitpid(probe, &status, 0);
  const int gpus = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  if (gpus == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  int ranks = gpus;
  if (const char* wanted = std::getenv("TAINTPOOL_NCCL_RANKS")) {
    ranks = std::max(1, std::min(gpus, std::atoi(wanted)));
  }
  std::printf("%d GPU(s); running %d rank(s)\n", gpus, ranks);
  std::fflush(stdout);
  if (static_cast<std::size_t>(ids) * NCCL_UNIQUE_ID_BYTES > PIPE_BUF) {
    return 2;
  }
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) {
    return 2;
  }
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t child = fork();
    if (child == 0) {
      NcclRank me;
      me.rank = rank;
      me.ranks = ranks;
      me.ids.resize(static_cast<std::size_t>(ids));
      const std::size_t bytes = me.ids.size() * NCCL_UNIQUE_ID_BYTES;
      std::vector<char> block(bytes);
      if (rank == 0) {
        close(pipe_ends[0]);
        for (int id = 0; id < ids; ++id) {
          me.ids[static_cast<std::size_t>(id)] = cuda::NcclCommunicator::unique_id();
          std::memcpy(block.data() + id * NCCL_UNIQUE_ID_BYTES,
                      me.ids[static_cast<std::size_t>(id)].data(), NCCL_UNIQUE_ID_BYTES);
        }
        for (int other = 1; other < ranks; ++other) {
          if (write(pipe_ends[1], block.data(), bytes) != static_cast<ssize_t>(bytes)) {
            _exit(3);
          }
        }
        close(pipe_ends[1]);
      } else {
        close(pipe_ends[1]);
        if (read(pipe_ends[0], block.data(), bytes) != static_cast<ssize_t>(bytes)) {
          _exit(3);
        }
        close(pipe_ends[0]);
        for (int id = 0; id < ids; ++id) {
          std::memcpy(me.ids[static_cast<std::size_t>(id)].data(),
                      block.data() + id * NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
        }
      }
      if (cudaSetDevice(rank) != cudaSuccess) {
        _exit(4);
      }
      int result = 1;
      try {
        result = body(me);
      } catch (const std::exception& error) {
        std::printf("[rank %d] uncaught: %s\n", rank, error.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(result);
    }
    children.push_back(child);
  }
  close(pipe_ends[0]);
  close(pipe_ends[1]);
  int first = 0;
  std::size_t left = children.size();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (left > 0) {
    for (pid_t& child : children) {
      if (child == 0) {
        continue;
      }
      int child_status = 0;
      if (waitpid(child, &child_status, WNOHANG) == child) {
        const int code = WIFEXITED(child_status) ? WEXITSTATUS(child_status) : 128;
        if (code != 0 && first == 0) {
          first = code;
        }
        child = 0;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      std::printf("timeout after %d s: killing the ranks\n", timeout_s);
      for (const pid_t child : children) {
        if (child != 0) {
          kill(child, SIGKILL);
          waitpid(child, nullptr, 0);
        }
      }
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return first;
}

} // namespace taintpool::testing
