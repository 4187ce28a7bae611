#include <taintpool/cuda/cuda_storage.hpp>

#include <algorithm>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdexcept>
#include <string>

#include "cuda_error.hpp"

namespace taintpool::cuda {

namespace {

cudaStream_t as_stream(Stream stream) noexcept {
  return stream;
}

} // namespace

CudaStorage::CudaStorage(CudaStorageOptions options)
    : options_(options) {
  if (options_.alignment != 256 && options_.alignment != 512) {
    throw std::invalid_argument("CudaStorage: alignment " + std::to_string(options_.alignment) +
                                " is not 256 or 512");
  }
}

// The pool gives every page back before its storage goes; anything left is
// a page whose owner outlived us, and nothing can be done for it here.
CudaStorage::~CudaStorage() = default;

std::string CudaStorage::name() const {
  std::string text = "cuda device " + std::to_string(options_.device);
  if (options_.stream_ordered) {
    text += " (stream-ordered)";
  }
  return text;
}

// Not const, though no member changes: it hands out the storage's device memory.
// NOLINTNEXTLINE(readability-make-member-function-const)
void* CudaStorage::raw_allocate(std::uint64_t size, const char*& call) {
  void* pointer = nullptr;
  cudaError_t error = cudaSuccess;
  if (options_.stream_ordered) {
    call = "cudaMallocAsync";
    error = cudaMallocAsync(&pointer, static_cast<std::size_t>(size), as_stream(options_.stream));
  } else {
    call = "cudaMalloc";
    error = cudaMalloc(&pointer, static_cast<std::size_t>(size));
  }
  if (error != cudaSuccess) {
    // Clear the per-thread last error: a failed page is reported here, as
    // StorageExhausted, and must not also fail the next launch.
    static_cast<void>(cudaGetLastError());
    throw StorageExhausted(name() + ": " + call + " of " + std::to_string(size) +
                           " bytes failed: " + detail::describe(error));
  }
  return pointer;
}

// Not const, though no member changes: it takes back the storage's device memory.
// NOLINTNEXTLINE(readability-make-member-function-const)
void CudaStorage::raw_free(void* pointer) noexcept {
  const cudaError_t error = options_.stream_ordered
                                ? cudaFreeAsync(pointer, as_stream(options_.stream))
                                : cudaFree(pointer);
  if (error != cudaSuccess) {
    // A poisoned context refuses even frees; the memory goes with it.
    static_cast<void>(cudaGetLastError());
  }
}

StorageHandle CudaStorage::allocate(std::uint64_t size) {
  if (size == 0 || size > static_cast<std::uint64_t>(PTRDIFF_MAX)) {
    throw StorageExhausted(name() + ": cannot allocate a page of " + std::to_string(size) +
                           " bytes");
  }
  const detail::DeviceGuard guard(options_.device);
  if (guard.error() != cudaSuccess) {
    throw StorageExhausted(name() +
                           ": cannot make the device current: " + detail::describe(guard.error()));
  }
  const char* call = "";
  void* pointer = raw_allocate(size, call);
  auto address = reinterpret_cast<std::uintptr_t>(pointer);
  if (address % options_.alignment != 0) {
    // Only possible for 512: the driver promises 256. Ask again with room to
    // align, and remember the real address for the free.
    raw_free(pointer);
    const std::uint64_t padded = size + options_.alignment;
    pointer = raw_allocate(padded, call);
    address = reinterpret_cast<std::uintptr_t>(pointer);
    const std::uint64_t aligned =
        (address + options_.alignment - 1) / options_.alignment * options_.alignment;
    try {
      shifted_.emplace_back(aligned, pointer);
    } catch (...) {
      raw_free(pointer);
      throw StorageExhausted(name() + ": out of host memory recording an aligned page");
    }
    address = static_cast<std::uintptr_t>(aligned);
  }
  ++pages_;
  bytes_ += size;
  return StorageHandle{static_cast<std::uint64_t>(address)};
}

void CudaStorage::deallocate(StorageHandle handle, std::uint64_t size) noexcept {
  if (!handle) {
    return;
  }
  const detail::DeviceGuard guard(options_.device);
  void* pointer = resolve(handle);
  const auto shifted = std::find_if(
      shifted_.begin(), shifted_.end(),
      [&](const std::pair<std::uint64_t, void*>& page) { return page.first == handle.value; });
  if (shifted != shifted_.end()) {
    pointer = shifted->second;
    shifted_.erase(shifted);
  }
  raw_free(pointer);
  --pages_;
  bytes_ -= size;
}

} // namespace taintpool::cuda

// ------------------------------------------------------------ virtual memory

namespace taintpool::cuda {

namespace {

/// The driver functions virtual memory needs, looked up through the runtime
/// (cudaGetDriverEntryPointByVersion) rather than linked: a program using
/// taintpool::cuda still starts, and gets clear errors, on a machine with no
/// CUDA driver at all.
struct DriverApi {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuCtxSynchronize) context_synchronize = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  bool loaded = false;
};

template <class Fn>
bool look_up(const char* symbol, Fn& fn) noexcept {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &found, 12000, cudaEnableDefault, &status) !=
          cudaSuccess ||
      status != cudaDriverEntryPointSuccess || found == nullptr) {
    static_cast<void>(cudaGetLastError());
    return false;
  }
  fn = reinterpret_cast<Fn>(found);
  return true;
}

/// The driver's functions, looked up once; null when any is missing.
const DriverApi* driver() noexcept {
  static const DriverApi api = [] {
    DriverApi table;
    table.loaded = look_up("cuGetErrorName", table.get_error_name) &&
                   look_up("cuGetErrorString", table.get_error_string) &&
                   look_up("cuDeviceGet", table.device_get) &&
                   look_up("cuDeviceGetAttribute", table.device_get_attribute) &&
                   look_up("cuCtxSynchronize", table.context_synchronize) &&
                   look_up("cuMemGetAllocationGranularity", table.granularity) &&
                   look_up("cuMemAddressReserve", table.address_reserve) &&
                   look_up("cuMemAddressFree", table.address_free) &&
                   look_up("cuMemCreate", table.create) && look_up("cuMemRelease", table.release) &&
                   look_up("cuMemMap", table.map) && look_up("cuMemUnmap", table.unmap) &&
                   look_up("cuMemSetAccess", table.set_access);
    return table;
  }();
  return api.loaded ? &api : nullptr;
}

std::string describe_driver(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  const DriverApi& api = *driver();
  if (api.get_error_name(result, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "CUDA_ERROR_UNKNOWN";
  }
  if (api.get_error_string(result, &text) != CUDA_SUCCESS || text == nullptr) {
    text = "unknown error";
  }
  return std::string(name) + " (" + text + ")";
}

CUmemAllocationProp chunk_properties(int device) noexcept {
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = device;
  return properties;
}

CUdeviceptr address_of(StorageHandle handle, std::uint64_t offset) noexcept {
  return static_cast<CUdeviceptr>(handle.value) + static_cast<CUdeviceptr>(offset);
}

} // namespace

VirtualMemory* CudaStorage::virtual_memory() noexcept {
  if (!options_.virtual_memory || options_.stream_ordered) {
    return nullptr;
  }
  if (!virtual_memory_asked_) {
    virtual_memory_asked_ = true;
    const detail::DeviceGuard guard(options_.device);
    // cudaFree(nullptr) makes the runtime create the device's primary
    // context and make it current, which the driver calls below need.
    const DriverApi* api = driver();
    if (api != nullptr && guard.error() == cudaSuccess && cudaFree(nullptr) == cudaSuccess) {
      CUdevice device = 0;
      int supported = 0;
      std::size_t granularity = 0;
      const CUmemAllocationProp properties = chunk_properties(options_.device);
      if (api->device_get(&device, options_.device) == CUDA_SUCCESS &&
          api->device_get_attribute(&supported,
                                    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                    device) == CUDA_SUCCESS &&
          supported != 0 &&
          api->granularity(&granularity, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
              CUDA_SUCCESS &&
          granularity >= options_.alignment && (granularity & (granularity - 1)) == 0) {
        granularity_ = granularity;
        virtual_memory_supported_ = true;
      }
    }
    static_cast<void>(cudaGetLastError());
  }
  return virtual_memory_supported_ ? this : nullptr;
}

StorageHandle CudaStorage::reserve(std::uint64_t size) {
  const detail::DeviceGuard guard(options_.device);
  CUdeviceptr base = 0;
  const CUresult result = driver()->address_reserve(&base, static_cast<std::size_t>(size), 0, 0, 0);
  if (result != CUDA_SUCCESS) {
    throw StorageExhausted(name() + ": cuMemAddressReserve of " + std::to_string(size) +
                           " bytes failed: " + describe_driver(result));
  }
  return StorageHandle{static_cast<std::uint64_t>(base)};
}

void CudaStorage::unreserve(StorageHandle reservation, std::uint64_t size) noexcept {
  const detail::DeviceGuard guard(options_.device);
  static_cast<void>(
      driver()->address_free(address_of(reservation, 0), static_cast<std::size_t>(size)));
}

StorageHandle CudaStorage::map(StorageHandle reservation, std::uint64_t offset,
                               std::uint64_t size) {
  const detail::DeviceGuard guard(options_.device);
  if (guard.error() != cudaSuccess) {
    throw StorageExhausted(name() +
                           ": cannot make the device current: " + detail::describe(guard.error()));
  }
  const CUmemAllocationProp properties = chunk_properties(options_.device);
  CUmemGenericAllocationHandle chunk = 0;
  const DriverApi& api = *driver();
  CUresult result = api.create(&chunk, static_cast<std::size_t>(size), &properties, 0);
  if (result != CUDA_SUCCESS) {
    throw StorageExhausted(name() + ": cuMemCreate of " + std::to_string(size) +
                           " bytes failed: " + describe_driver(result));
  }
  const CUdeviceptr at = address_of(reservation, offset);
  result = api.map(at, static_cast<std::size_t>(size), 0, chunk, 0);
  if (result != CUDA_SUCCESS) {
    static_cast<void>(api.release(chunk));
    throw StorageExhausted(name() + ": cuMemMap of " + std::to_string(size) +
                           " bytes failed: " + describe_driver(result));
  }
  CUmemAccessDesc access{};
  access.location = properties.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  result = api.set_access(at, static_cast<std::size_t>(size), &access, 1);
  if (result != CUDA_SUCCESS) {
    static_cast<void>(api.unmap(at, static_cast<std::size_t>(size)));
    static_cast<void>(api.release(chunk));
    throw StorageExhausted(name() + ": cuMemSetAccess of " + std::to_string(size) +
                           " bytes failed: " + describe_driver(result));
  }
  ++pages_;
  bytes_ += size;
  // Handles are opaque integers; +1 keeps a (theoretical) handle 0 from
  // reading as "no chunk".
  return StorageHandle{static_cast<std::uint64_t>(chunk) + 1};
}

void CudaStorage::unmap(StorageHandle reservation, std::uint64_t offset, std::uint64_t size,
                        StorageHandle chunk) noexcept {
  const detail::DeviceGuard guard(options_.device);
  // Work queued before the pool freed these bytes may still touch them.
  const DriverApi& api = *driver();
  static_cast<void>(api.context_synchronize());
  static_cast<void>(api.unmap(address_of(reservation, offset), static_cast<std::size_t>(size)));
  static_cast<void>(api.release(static_cast<CUmemGenericAllocationHandle>(chunk.value - 1)));
  --pages_;
  bytes_ -= size;
}

} // namespace taintpool::cuda
