// See c10_allocator.hpp. Compiled without the project's warnings: torch's
// headers are not ours to fix.
#include "c10_allocator.hpp"

#include <c10/cuda/CUDACachingAllocator.h>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <dlfcn.h>

namespace taintpool::replay::c10 {

namespace allocator = ::c10::cuda::CUDACachingAllocator;

namespace {
// c10 asks "has this device a primary context?" through a hook that
// libtorch_cuda installs when it loads; with libc10_cuda alone the hook is a
// dummy that throws ("Should never been called"). Install one, found by name
// at run time so that a torch without it still builds: by the time c10 asks,
// the CUDA runtime has made the context, so the answer is yes.
bool assume_primary_context(signed char /*device*/) { return true; }
void install_primary_context_hook() {
  using Hook = bool (*)(signed char);
  using Setter = void (*)(Hook);
  void* found = dlsym(RTLD_DEFAULT, "_ZN3c104cuda9_internal20setHasPrimaryContextEPFbaE");
  if (found != nullptr) {
    reinterpret_cast<Setter>(found)(&assume_primary_context);
  }
}
} // namespace

void init() {
  static bool done = false;
  if (!done) {
    int devices = 0;
    cudaGetDeviceCount(&devices);
    install_primary_context_hook();
    allocator::init(devices);
    done = true;
  }
}

void* allocate(std::uint64_t size) {
  return allocator::raw_alloc(static_cast<std::size_t>(size));
}

void free(void* pointer) {
  allocator::raw_delete(pointer);
}

std::uint64_t reserved() {
  const auto stats = allocator::getDeviceStats(0);
  return static_cast<std::uint64_t>(stats.reserved_bytes[0].current);
}

std::uint64_t peak_reserved() {
  const auto stats = allocator::getDeviceStats(0);
  return static_cast<std::uint64_t>(stats.reserved_bytes[0].peak);
}

std::uint64_t segments() {
  const auto stats = allocator::getDeviceStats(0);
  return static_cast<std::uint64_t>(stats.segment[0].allocated);
}

void reset() {
  allocator::emptyCache();
  allocator::resetPeakStats(0);
}

const char* label() {
  const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
  return conf != nullptr && std::strstr(conf, "expandable_segments:True") != nullptr
             ? "c10, expandable segments"
             : "c10";
}

} // namespace taintpool::replay::c10
