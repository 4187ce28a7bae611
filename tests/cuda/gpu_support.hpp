// Shared by the GPU tests: skipping without a GPU, and one dataflow that runs
// on the CUDA backend with real kernels and on the host backend with C++
// loops, so the two can be compared observable by observable.
//
// Why a dataflow rather than per-test expectations only: the host backend
// (with DeferredHostBackend for checked kernels) is the tested reference for
// the scope rules; if the CUDA backend produces the same launch statuses, the
// same bytes and the same reports (root kind, origin, path, stale range) for
// every injected fault, it implements the same S1–S5/D1–D2 behaviour, and
// the per-fault tests only need to pin what is CUDA-specific (which runtime
// error, which message).
#pragma once

#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/device.hpp>
#include <taintpool/host/deferred_host_backend.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "gpu_kernels.hpp"

namespace taintpool::cuda::testing {

/// GTEST_SKIP with the runtime's reason when this machine has no usable GPU.
#define TAINTPOOL_REQUIRE_GPU()                                                                    \
  do {                                                                                             \
    std::string why_no_gpu;                                                                        \
    if (::taintpool::cuda::device_count(&why_no_gpu) == 0) {                                       \
      GTEST_SKIP() << "no CUDA GPU on this machine (" << why_no_gpu                                \
                   << "); the GPU tests run on a machine with one";                                \
    }                                                                                              \
  } while (false)

/// Faults a step of the dataflow can be given.
enum class Fault {
  None,
  InvalidConfiguration, ///< Launched with 2048 threads per block.
  TooManyResources,     ///< A 122-register kernel launched with 1024 threads.
  NoKernelImage,        ///< A kernel built for sm_100 only.
  StagingAllocation,    ///< The body's scratch cudaMallocAsync fails.
  CheckedFailure,       ///< Checked: tile 1 reports failure and is not written.
  UnmarkedTiles,        ///< Checked: the kernel marks each tile's successor (fill steps only).
};

inline const char* name(Fault fault) {
  switch (fault) {
  case Fault::None:
    return "none";
  case Fault::InvalidConfiguration:
    return "invalid configuration";
  case Fault::TooManyResources:
    return "too many resources";
  case Fault::NoKernelImage:
    return "no kernel image";
  case Fault::StagingAllocation:
    return "staging allocation";
  case Fault::CheckedFailure:
    return "checked failure";
  case Fault::UnmarkedTiles:
    return "unmarked tiles";
  }
  return "?";
}

/// The runtime error each launch-time fault produces on the GPU, as a name
/// the failure's message must contain.
inline const char* cuda_error_of(Fault fault) {
  switch (fault) {
  case Fault::InvalidConfiguration:
    return "cudaErrorInvalid"; // See names_cuda_error_of.
  case Fault::TooManyResources:
    return "cudaErrorLaunchOutOfResources";
  case Fault::NoKernelImage:
    return "cudaErrorNoKernelImageForDevice";
  case Fault::StagingAllocation:
    return "cudaErrorMemoryAllocation";
  default:
    return "";
  }
}

/// Whether `message` names the runtime error `fault` produces. A block of
/// 2048 threads was cudaErrorInvalidConfiguration in older runtimes; CUDA
/// 13.0 on an H200 (driver 580.159.04, seen 2026-11-29) reports
/// cudaErrorInvalidValue, so either is the invalid configuration.
inline bool names_cuda_error_of(const std::string& message, Fault fault) {
  if (fault == Fault::InvalidConfiguration) {
    return message.find("cudaErrorInvalidConfiguration") != std::string::npos ||
           message.find("cudaErrorInvalidValue") != std::string::npos;
  }
  return message.find(cuda_error_of(fault)) != std::string::npos;
}

inline bool is_launch_time(Fault fault) {
  return fault != Fault::None && fault != Fault::CheckedFailure && fault != Fault::UnmarkedTiles;
}

/// Elements per tile of fill and axpy (1 KiB of floats).
inline constexpr std::uint32_t kTile = 256;

/// The operations of the dataflow, on one backend.
class Ops {
 public:
  virtual ~Ops() = default;
  Ops(const Ops&) = delete;
  Ops& operator=(const Ops&) = delete;

  [[nodiscard]] virtual Device& device() = 0;
  virtual LaunchResult fill(std::string_view kernel, const Allocation& out, float value,
                            Fault fault) = 0;
  virtual LaunchResult axpy(std::string_view kernel, const Allocation& a, const Allocation& b,
                            const Allocation& out, float scale, Fault fault) = 0;
  virtual LaunchResult matmul(std::string_view kernel, const Allocation& a, const Allocation& b,
                              const Allocation& c, std::uint32_t n, Fault fault) = 0;

 protected:
  explicit Ops(bool checked)
      : checked_(checked) {}
  bool checked_;
};

/// Tiles of `bytes` in tiles of `tile_bytes`, with `skip` left out.
inline std::vector<WrittenRange> tiles_except(std::uint64_t bytes, std::uint64_t tile_bytes,
                                              std::uint64_t skip) {
  std::vector<WrittenRange> written;
  for (std::uint64_t at = 0, tile = 0; at < bytes; at += tile_bytes, ++tile) {
    if (tile != skip) {
      written.push_back(WrittenRange{0, ByteRange::of(at, std::min(at + tile_bytes, bytes))});
    }
  }
  return written;
}

/// The reference: C++ loops on the host, checked launches deferred.
class HostOps final : public Ops {
 public:
  explicit HostOps(bool checked)
      : Ops(checked)
      , device_(backend_) {}

  Device& device() override { return device_; }

  LaunchResult fill(std::string_view kernel, const Allocation& out, float value,
                    Fault fault) override {
    return device_.launch(kernel, {}, {out.whole()}, [&](const KernelContext& context) {
      const std::span<float> y = context.write_as<float>(0);
      return finish(
          context, fault, kTile * sizeof(float), [&](std::size_t i) { y[i] = value; }, y.size(),
          kTile);
    });
  }

  LaunchResult axpy(std::string_view kernel, const Allocation& a, const Allocation& b,
                    const Allocation& out, float scale, Fault fault) override {
    return device_.launch(
        kernel, {a.whole(), b.whole()}, {out.whole()}, [&](const KernelContext& context) {
          const std::span<const float> x = context.read_as<float>(0);
          const std::span<const float> y = context.read_as<float>(1);
          const std::span<float> z = context.write_as<float>(0);
          return finish(
              context, fault, kTile * sizeof(float),
              [&](std::size_t i) { z[i] = std::fma(x[i], scale, y[i]); }, z.size(), kTile);
        });
  }

  LaunchResult matmul(std::string_view kernel, const Allocation& a, const Allocation& b,
                      const Allocation& c, std::uint32_t n, Fault fault) override {
    return device_.launch(kernel, {a.whole(), b.whole()}, {c.whole()},
                          [&](const KernelContext& context) {
                            const std::span<const float> x = context.read_as<float>(0);
                            const std::span<const float> y = context.read_as<float>(1);
                            const std::span<float> z = context.write_as<float>(0);
                            // One "element" per row, as the GPU's tiles are rows.
                            return finish(
                                context, fault, std::uint64_t{n} * sizeof(float),
                                [&](std::size_t row) {
                                  for (std::uint32_t column = 0; column < n; ++column) {
                                    float sum = 0.0f;
                                    for (std::uint32_t k = 0; k < n; ++k) {
                                      sum = std::fma(x[row * n + k], y[k * n + column], sum);
                                    }
                                    z[row * n + column] = sum;
                                  }
                                },
                                n, 1);
                          });
  }

 private:
  /// Runs `element` over [0, count) in tiles of `per_tile`, as the GPU would
  /// under `fault`, and says what the GPU's backend would say.
  template <class Element>
  LaunchOutcome finish(const KernelContext& context, Fault fault, std::uint64_t tile_bytes,
                       Element element, std::size_t count, std::size_t per_tile) {
    if (is_launch_time(fault)) {
      return LaunchOutcome::failure(Error::launch(std::string("injected: ") + name(fault)));
    }
    const std::size_t tiles = (count + per_tile - 1) / per_tile;
    for (std::size_t tile = 0; tile < tiles; ++tile) {
      if (fault == Fault::CheckedFailure && tile == 1) {
        continue;
      }
      for (std::size_t i = tile * per_tile; i < std::min(count, (tile + 1) * per_tile); ++i) {
        element(i);
      }
    }
    const std::uint64_t bytes = context.write_binding(0).range.size();
    if (fault == Fault::CheckedFailure) {
      backend_.fail_later(context, Error::launch("injected: checked failure"),
                          tiles_except(bytes, tile_bytes, 1));
    } else if (fault == Fault::UnmarkedTiles) {
      backend_.fail_later(context, Error::launch("injected: unmarked tiles"),
                          tiles_except(bytes, tile_bytes, 0));
    } else if (checked_) {
      backend_.check(context);
    }
    return LaunchOutcome::success();
  }

  DeferredHostBackend backend_;
  Device device_;
};

/// The same operations as real kernels on the GPU.
class CudaOps final : public Ops {
 public:
  explicit CudaOps(bool checked, CudaBackendOptions options = {})
      : Ops(checked)
      , backend_(std::move(options))
      , device_(backend_) {}

  Device& device() override { return device_; }
  [[nodiscard]] CudaBackend& backend() { return backend_; }

  LaunchResult fill(std::string_view kernel, const Allocation& out, float value,
                    Fault fault) override {
    return device_.launch(kernel, {}, {out.whole()}, [&](const KernelContext& context) {
      auto* y = reinterpret_cast<float*>(context.write_binding(0).data);
      const std::size_t n = context.write_binding(0).range.size() / sizeof(float);
      const KernelStatus status = status_for(context, kTile * sizeof(float));
      launch_faulty(context, fault, y, n, value, status, kTile);
      return LaunchOutcome::success();
    });
  }

  LaunchResult axpy(std::string_view kernel, const Allocation& a, const Allocation& b,
                    const Allocation& out, float scale, Fault fault) override {
    return device_.launch(
        kernel, {a.whole(), b.whole()}, {out.whole()}, [&](const KernelContext& context) {
          auto* z = reinterpret_cast<float*>(context.write_binding(0).data);
          const std::size_t n = context.write_binding(0).range.size() / sizeof(float);
          const KernelStatus status = status_for(context, kTile * sizeof(float));
          if (fault == Fault::None || fault == Fault::CheckedFailure) {
            testing::axpy(stream_of(context),
                          reinterpret_cast<const float*>(context.read_binding(0).data),
                          reinterpret_cast<const float*>(context.read_binding(1).data), z, n, scale,
                          status, kTile, fault == Fault::CheckedFailure ? 1 : kNoFailure);
          } else {
            launch_faulty(context, fault, z, n, 0.0f, status, kTile);
          }
          return LaunchOutcome::success();
        });
  }

  LaunchResult matmul(std::string_view kernel, const Allocation& a, const Allocation& b,
                      const Allocation& c, std::uint32_t n, Fault fault) override {
    return device_.launch(
        kernel, {a.whole(), b.whole()}, {c.whole()}, [&](const KernelContext& context) {
          auto* z = reinterpret_cast<float*>(context.write_binding(0).data);
          const KernelStatus status = status_for(context, std::uint64_t{n} * sizeof(float));
          if (fault == Fault::None || fault == Fault::CheckedFailure) {
            testing::matmul(stream_of(context),
                            reinterpret_cast<const float*>(context.read_binding(0).data),
                            reinterpret_cast<const float*>(context.read_binding(1).data), z, n,
                            status, fault == Fault::CheckedFailure ? 1 : kNoFailure);
          } else {
            launch_faulty(context, fault, z, std::size_t{n} * n, 0.0f, status, n);
          }
          return LaunchOutcome::success();
        });
  }

 private:
  KernelStatus status_for(const KernelContext& context, std::uint64_t tile_bytes) {
    return checked_ ? backend_.checked(context, {tile_bytes}) : KernelStatus{};
  }

  /// The faults every op shares; fill's own kernel stands in for the op
  /// (only the failure matters, and it happens before or instead of writing).
  void launch_faulty(const KernelContext& context, Fault fault, float* out, std::size_t n,
                     float value, const KernelStatus& status, std::uint32_t tile) {
    const Stream stream = stream_of(context);
    switch (fault) {
    case Fault::None:
      testing::fill(stream, out, n, value, status, tile);
      break;
    case Fault::InvalidConfiguration:
      fill_with_block(stream, out, n, value, 2048);
      break;
    case Fault::TooManyResources:
      register_hungry(stream, out, out);
      break;
    case Fault::NoKernelImage:
      sm100_only(stream, out);
      break;
    case Fault::StagingAllocation:
      fill_with_staging(stream, out, n, value, std::size_t{1} << 50);
      break;
    case Fault::CheckedFailure:
      testing::fill(stream, out, n, value, status, tile, 1);
      break;
    case Fault::UnmarkedTiles:
      fill_marking_out_of_range(stream, out, n, value, status, tile);
      break;
    }
  }

  CudaBackend backend_;
  Device device_;
};

/// What a reader can see of one slice of one buffer.
struct Seen {
  std::vector<std::byte> bytes; ///< When the read succeeded.
  struct Failure {
    ErrorKind kind;
    AllocationId origin;
    std::optional<ByteRange> stale;
    std::vector<SkipRecord> path;
    friend bool operator==(const Failure&, const Failure&) = default;
  };
  std::vector<Failure> failures; ///< When it did not (one per report).
  friend bool operator==(const Seen&, const Seen&) = default;
};

inline std::ostream& operator<<(std::ostream& out, const Seen& seen) {
  if (seen.failures.empty()) {
    return out << "bytes(" << seen.bytes.size() << ")";
  }
  for (const Seen::Failure& failure : seen.failures) {
    out << "[" << name(failure.kind) << " from " << to_string(failure.origin);
    if (failure.stale) {
      out << " stale " << to_string(*failure.stale);
    }
    for (const SkipRecord& record : failure.path) {
      out << " <- " << record.kernel << (record.ran ? " (ran)" : " (skipped)") << " needed "
          << to_string(record.needed);
    }
    out << "]";
  }
  return out;
}

inline Seen look(Device& device, const Binding& binding) {
  Seen seen;
  std::vector<std::byte> bytes(static_cast<std::size_t>(binding.range.size()));
  const ReadOutcome outcome = device.read(binding, bytes);
  if (outcome) {
    seen.bytes = std::move(bytes);
    return seen;
  }
  // Ids by their number alone: the two devices compared live side by side,
  // so each mints in an id space of its own (failure_id.hpp).
  const auto local = [](AllocationId id) { return AllocationId::from_raw(allocation_number(id)); };
  for (const Report& report : outcome.reports) {
    std::vector<SkipRecord> path = report.path;
    for (SkipRecord& record : path) {
      record.needed = local(record.needed);
      for (AllocationId& produced : record.produced) {
        produced = local(produced);
      }
    }
    seen.failures.push_back(
        Seen::Failure{report.root.kind(), local(report.origin), report.stale, std::move(path)});
  }
  return seen;
}

/// Everything the dataflow shows: each launch's status, and each buffer read
/// whole and tile by tile.
struct Observation {
  std::vector<LaunchStatus> statuses;
  std::vector<std::string> root_messages; ///< Of failed reads, for CUDA-specific checks.
  std::vector<std::pair<std::string, Seen>> reads;
};

/// The dataflow (n floats per vector, an m x m matmul), with `fault` given
/// to step `faulty` (0-based; steps as listed below). D2: the `iso` chain
/// shares no buffer with the rest.
inline Observation run_dataflow(Ops& ops, std::size_t faulty, Fault fault) {
  constexpr std::size_t n = 4096;
  constexpr std::uint32_t m = 32;
  Device& device = ops.device();
  std::vector<float> xs(n);
  std::vector<float> as(std::size_t{m} * m);
  for (std::size_t i = 0; i < n; ++i) {
    xs[i] = static_cast<float>((i * 7919) % 1000) / 997.0f - 0.5f;
  }
  for (std::size_t i = 0; i < as.size(); ++i) {
    as[i] = static_cast<float>((i * 104729) % 2000) / 1999.0f - 0.25f;
  }
  const Allocation x = device.create_buffer(std::as_bytes(std::span<const float>(xs)));
  const Allocation y = device.create_buffer(n * sizeof(float));
  const Allocation z = device.create_buffer(n * sizeof(float));
  const Allocation w = device.create_buffer(n * sizeof(float));
  const Allocation a = device.create_buffer(std::as_bytes(std::span<const float>(as)));
  const Allocation b = device.create_buffer(std::size_t{m} * m * sizeof(float));
  const Allocation c = device.create_buffer(std::size_t{m} * m * sizeof(float));
  const Allocation iso = device.create_buffer(n * sizeof(float));
  const Allocation iso2 = device.create_buffer(n * sizeof(float));

  Observation seen;
  const auto step = [&](std::size_t index) { return index == faulty ? fault : Fault::None; };
  seen.statuses.push_back(ops.fill("fill y", y, 2.0f, step(0)).status);
  seen.statuses.push_back(ops.axpy("axpy z", x, y, z, 3.0f, step(1)).status);
  seen.statuses.push_back(ops.axpy("axpy w", z, x, w, 0.5f, step(2)).status);
  seen.statuses.push_back(ops.fill("fill b", b, 0.25f, step(3)).status);
  seen.statuses.push_back(ops.matmul("matmul c", a, b, c, m, step(4)).status);
  seen.statuses.push_back(ops.fill("fill iso", iso, 1.0f, step(5)).status);
  seen.statuses.push_back(ops.axpy("axpy iso2", iso, iso, iso2, 2.0f, step(6)).status);

  const std::pair<const char*, const Allocation*> buffers[] = {
      {"x", &x}, {"y", &y}, {"z", &z},     {"w", &w},      {"a", &a},
      {"b", &b}, {"c", &c}, {"iso", &iso}, {"iso2", &iso2}};
  for (const auto& [label, buffer] : buffers) {
    seen.reads.emplace_back(std::string(label), look(device, buffer->whole()));
    const std::uint64_t tile_bytes = buffer == &c ? m * sizeof(float) : kTile * sizeof(float);
    for (std::uint64_t at = 0; at < buffer->size(); at += tile_bytes) {
      seen.reads.emplace_back(
          std::string(label) + "@" + std::to_string(at),
          look(device, buffer->bind(at, std::min(tile_bytes, buffer->size() - at))));
    }
    for (const Report& report : device.stale_reports(buffer->whole())) {
      seen.root_messages.push_back(report.root.message());
    }
  }
  device.check_invariants();
  return seen;
}

} // namespace taintpool::cuda::testing
