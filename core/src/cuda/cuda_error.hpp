// Internal: CUDA runtime errors as text, and which of them poison the
// context. Shared by CudaStorage and CudaBackend.
#pragma once

#include <cuda_runtime.h>
#include <string>

namespace taintpool::cuda::detail {

/// "cudaErrorMemoryAllocation (out of memory)".
[[nodiscard]] inline std::string describe(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" + cudaGetErrorString(error) + ")";
}

/// The errors driver_types.h documents as leaving "the process in an
/// inconsistent state": every later CUDA call returns them, and the
/// context's memory is lost. (CudaBackend also probes the stream after any
/// other error, in case a future toolkit adds one.)
[[nodiscard]] constexpr bool is_sticky(cudaError_t error) noexcept {
  switch (static_cast<int>(error)) {
  case 214: // cudaErrorECCUncorrectable
  case 220: // cudaErrorNvlinkUncorrectable
  case 226: // cudaErrorContained
  case 700: // cudaErrorIllegalAddress
  case 702: // cudaErrorLaunchTimeout
  case 710: // cudaErrorAssert
  case 714: // cudaErrorHardwareStackError
  case 715: // cudaErrorIllegalInstruction
  case 716: // cudaErrorMisalignedAddress
  case 717: // cudaErrorInvalidAddressSpace
  case 718: // cudaErrorInvalidPc
  case 719: // cudaErrorLaunchFailure
  case 721: // cudaErrorTensorMemoryLeak
  case 911: // cudaErrorExternalDevice
    return true;
  default:
    return false;
  }
}

/// Makes `device` current for a scope and restores the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) noexcept {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) {
      previous = -1;
      static_cast<void>(cudaGetLastError());
    }
    if (previous != device) {
      error_ = cudaSetDevice(device);
      if (error_ != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
      } else if (previous >= 0) {
        restore_ = previous;
      }
    }
  }
  ~DeviceGuard() {
    if (restore_ >= 0) {
      static_cast<void>(cudaSetDevice(restore_));
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  /// Why the device could not be made current, if it could not.
  [[nodiscard]] cudaError_t error() const noexcept { return error_; }

 private:
  int restore_ = -1;
  cudaError_t error_ = cudaSuccess;
};

} // namespace taintpool::cuda::detail
