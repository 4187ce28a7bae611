// cuda::launch: a body launches its kernel through the backend, which then
// knows the launch's status without asking the runtime (issue 11, item 7).
//
// Why. A body that launches with <<<>>> leaves a launch error in the
// runtime's per-thread "last error"; CudaBackend::run must then clear that
// error before the body (so an unrelated earlier failure is not blamed on
// this launch) and read it after — two cudaGetLastError calls, ~50 ns on an
// H200 host, more than the whole budget the Device's scope has (1% of a
// ~4 us empty-kernel launch). cudaLaunchKernelExC returns the status of the
// launch it made, so a body that launches through cuda::launch hands the
// backend every status directly and run() asks the runtime nothing.
//
//   device.launch(stream, "axpy", {x.whole(), y.whole()}, {out.whole()},
//                 [&](const KernelContext& context) {
//                   cuda::launch(context, axpy_kernel, {blocks, 256},
//                                context.read_as<float>(0).data(), ...);
//                   return LaunchOutcome::success();
//                 });
//
// What the backend does with the statuses: a launch that failed makes the
// whole launch fail — whatever the body returns — with the runtime's error
// named (S1), exactly as a <<<>>> launch's last error does; a sticky error
// poisons the backend. The body may ignore the returned status.
//
// The contract: a body that launches through cuda::launch launches *every*
// kernel of it that way. Its <<<>>> launches would go unchecked at launch
// time (run() reads no last error for it). Bodies that launch only with
// <<<>>> keep working as before, with the two calls. The backend learns
// which kind of body it is running: after a body that used cuda::launch it
// skips the clearing call too; the first <<<>>> body after such bodies is
// run without the clearing call, so an error an unrelated runtime call left
// pending on that thread since the previous launch is blamed on it
// (conservatively: its outputs are tainted, the message names the runtime's
// error), and the backend clears before raw bodies again from then on.
//
// Works from .cu and .cpp files alike (the kernel is passed by address; a
// .cpp file gets it from a .cu file that defines it). Arguments are
// converted to the kernel's parameter types, held for the call, and passed
// by address, as the runtime expects. Only inside a body on a CudaBackend:
// elsewhere it throws std::logic_error.
//
// Cost: one cudaLaunchKernelExC, a counter and a compare; no allocation.
#pragma once

#include <taintpool/cuda/cuda_backend.hpp>
#include <taintpool/device/launch.hpp>

#include <cstddef>
#include <cuda_runtime.h>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

namespace taintpool::cuda {

/// A kernel's launch configuration: grid, block and dynamic shared memory.
struct LaunchShape {
  dim3 grid{1, 1, 1};           ///< Blocks.
  dim3 block{1, 1, 1};          ///< Threads per block.
  std::size_t shared_bytes = 0; ///< Dynamic shared memory per block.
};

/// The CudaBackend running the body `context` belongs to (its
/// backend_data()). Throws std::logic_error on the host backends, whose
/// backend_data() is null; a backend of another kind must not be given.
[[nodiscard]] inline CudaBackend& backend_of(const KernelContext& context) {
  auto* backend = static_cast<CudaBackend*>(context.backend_data());
  if (backend == nullptr) [[unlikely]] {
    throw std::logic_error("cuda::launch: called from a body that is not running on a "
                           "CudaBackend");
  }
  return *backend;
}

/// Launches `kernel` (its address, as a host function) with `arguments`
/// (one pointer per parameter) on the launch's stream, and tells the
/// backend the status. Returns that status.
inline cudaError_t launch_raw(const KernelContext& context, const void* kernel,
                              const LaunchShape& shape, void** arguments) {
  CudaBackend& backend = backend_of(context);
  cudaLaunchConfig_t config{};
  config.gridDim = shape.grid;
  config.blockDim = shape.block;
  config.dynamicSmemBytes = shape.shared_bytes;
  config.stream = stream_of(context);
  config.attrs = nullptr;
  config.numAttrs = 0;
  const cudaError_t status = cudaLaunchKernelExC(&config, kernel, arguments);
  backend.launched(static_cast<int>(status));
  return status;
}

/// Launches `kernel(arguments...)` with `shape` on the launch's stream (see
/// above) and returns the launch's status; the backend has it too.
template <class... Params, class... Args>
cudaError_t launch(const KernelContext& context, void (*kernel)(Params...),
                   const LaunchShape& shape, Args&&... arguments) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "cuda::launch: pass exactly one argument per kernel parameter");
  // The values the kernel receives, converted to its parameter types and
  // alive until the runtime has copied them (it does so before returning).
  std::tuple<std::remove_cvref_t<Params>...> values(
      static_cast<std::remove_cvref_t<Params>>(std::forward<Args>(arguments))...);
  return std::apply(
      [&](auto&... value) {
        void* pointers[] = {static_cast<void*>(&value)..., nullptr};
        return launch_raw(context, reinterpret_cast<const void*>(kernel), shape, pointers);
      },
      values);
}

} // namespace taintpool::cuda
