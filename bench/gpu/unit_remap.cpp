// unit_remap: what moving one unit of physical memory to another address costs
// on this GPU (issue 12). A timed main, not a test.
//
// Why: bench/unit_placement.cpp simulates an arena whose physical memory is
// cut into units of the allocation granularity (2 MiB) that it maps wherever
// a request lands, unmapping a free unit elsewhere when it runs out. It
// reaches issue 12's peak on every trace but remaps units in warm replays;
// whether that is affordable depends on the price of one remap with no
// memory created or freed: a cuMemUnmap of a unit, then a cuMemMap of its
// handle at a new address and a cuMemSetAccess there. Nothing in the library makes these calls yet.
//
// The driver maps a handle only whole (cuMemMap's offset must be 0), so a
// unit that moves alone is a cuMemCreate handle of its own. Measured, medians
// over rounds of 64 such units, each round at addresses the last one did not
// use:
//  - create / release: cuMemCreate and cuMemRelease of one unit;
//  - map: cuMemMap + cuMemSetAccess of one unit;
//  - unmap: cuMemUnmap of one unit, the device idle;
//  - unmap busy: the same with a 1 GiB cudaMemsetAsync queued on another
//    buffer (does an unmap wait for unrelated work?);
//  - map run: one cuMemMap + cuMemSetAccess of a 32-unit handle, per unit
//    (what today's arena pays for a growth chunk).
//
//   unit_remap [--rounds N]      exit 77 where there is no GPU or no virtual memory.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <string>
#include <vector>

namespace {

struct Driver {
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
};

template <class Fn>
bool look_up(const char* symbol, Fn& fn) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &found, 12000, cudaEnableDefault, &status) !=
          cudaSuccess ||
      status != cudaDriverEntryPointSuccess || found == nullptr) {
    return false;
  }
  fn = reinterpret_cast<Fn>(found);
  return true;
}

void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "unit_remap: %s failed (%d)\n", what, static_cast<int>(result));
    std::exit(1);
  }
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

using Clock = std::chrono::steady_clock;

double nanoseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
  int rounds = 50;
  for (int arg = 1; arg + 1 < argc; ++arg) {
    if (std::string(argv[arg]) == "--rounds") {
      rounds = std::max(1, std::atoi(argv[++arg]));
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0 ||
      cudaFree(nullptr) != cudaSuccess) {
    std::printf("unit_remap: no GPU, skipped\n");
    return 77;
  }
  Driver api;
  if (!(look_up("cuDeviceGet", api.device_get) &&
        look_up("cuMemGetAllocationGranularity", api.granularity) &&
        look_up("cuMemAddressReserve", api.address_reserve) &&
        look_up("cuMemAddressFree", api.address_free) && look_up("cuMemCreate", api.create) &&
        look_up("cuMemRelease", api.release) && look_up("cuMemMap", api.map) &&
        look_up("cuMemUnmap", api.unmap) && look_up("cuMemSetAccess", api.set_access))) {
    std::printf("unit_remap: no virtual memory API, skipped\n");
    return 77;
  }
  CUdevice device = 0;
  check(api.device_get(&device, 0), "cuDeviceGet");
  CUmemAllocationProp properties{};
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = device;
  std::size_t unit = 0;
  check(api.granularity(&unit, &properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  constexpr std::size_t units = 64;
  CUmemAccessDesc access{};
  access.location = properties.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  // cuMemMap maps a handle only whole (its offset must be 0: the driver
  // answers CUDA_ERROR_NOT_SUPPORTED to any other), so a unit that moves on
  // its own is a handle of its own: one cuMemCreate per unit.
  std::vector<CUmemGenericAllocationHandle> handles(units);
  std::vector<double> create_ns;
  for (std::size_t u = 0; u < units; ++u) {
    const auto start = Clock::now();
    check(api.create(&handles[u], unit, &properties, 0), "cuMemCreate");
    create_ns.push_back(nanoseconds_since(start));
  }
  CUmemGenericAllocationHandle run_handle = 0;
  check(api.create(&run_handle, 32 * unit, &properties, 0), "cuMemCreate (run)");
  const std::size_t space = units * unit * static_cast<std::size_t>(rounds + 1) * 2;
  CUdeviceptr base = 0;
  check(api.address_reserve(&base, space, 0, 0, 0), "cuMemAddressReserve");
  void* busy = nullptr;
  if (cudaMalloc(&busy, std::size_t{1} << 30) != cudaSuccess) {
    std::fprintf(stderr, "unit_remap: cudaMalloc of 1 GiB failed\n");
    return 1;
  }

  std::vector<double> map_ns;
  std::vector<double> unmap_ns;
  std::vector<double> unmap_busy_ns;
  std::vector<double> run_ns;
  for (int round = 0; round < rounds; ++round) {
    // Each round maps the units, one by one, at a window of address space no
    // earlier round used, in reverse order (a remap puts a unit anywhere),
    // then unmaps them.
    const CUdeviceptr window = base + static_cast<CUdeviceptr>(round) * units * unit * 2;
    for (std::size_t u = 0; u < units; ++u) {
      const CUdeviceptr at = window + (units - 1 - u) * unit;
      const auto start = Clock::now();
      check(api.map(at, unit, 0, handles[u], 0), "cuMemMap");
      check(api.set_access(at, unit, &access, 1), "cuMemSetAccess");
      map_ns.push_back(nanoseconds_since(start));
    }
    const bool with_work = round % 2 == 1;
    for (std::size_t u = 0; u < units; ++u) {
      if (with_work && u % 8 == 0) {
        if (cudaMemsetAsync(busy, static_cast<int>(u & 0xFF), std::size_t{1} << 30, nullptr) !=
            cudaSuccess) {
          return 1;
        }
      }
      const CUdeviceptr at = window + (units - 1 - u) * unit;
      const auto start = Clock::now();
      check(api.unmap(at, unit), "cuMemUnmap");
      (with_work ? unmap_busy_ns : unmap_ns).push_back(nanoseconds_since(start));
    }
    if (cudaDeviceSynchronize() != cudaSuccess) {
      return 1;
    }
    // One handle of 32 units mapped whole in one call.
    const CUdeviceptr run_at = window + units * unit;
    const auto start = Clock::now();
    check(api.map(run_at, 32 * unit, 0, run_handle, 0), "cuMemMap (run)");
    check(api.set_access(run_at, 32 * unit, &access, 1), "cuMemSetAccess (run)");
    run_ns.push_back(nanoseconds_since(start) / 32);
    check(api.unmap(run_at, 32 * unit), "cuMemUnmap (run)");
  }
  std::vector<double> release_ns;
  for (std::size_t u = 0; u < units; ++u) {
    const auto start = Clock::now();
    check(api.release(handles[u]), "cuMemRelease");
    release_ns.push_back(nanoseconds_since(start));
  }
  check(api.release(run_handle), "cuMemRelease (run)");
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("unit_remap on %s: unit %zu KiB, %d rounds of %zu units\n", prop.name, unit >> 10,
              rounds, units);
  std::printf("cuMemCreate of one unit: median %.0f ns; cuMemRelease of one: median %.0f ns\n",
              median(create_ns), median(release_ns));
  std::printf("map one unit (cuMemMap + cuMemSetAccess): median %.0f ns\n", median(map_ns));
  std::printf("unmap one unit, device idle: median %.0f ns\n", median(unmap_ns));
  std::printf("unmap one unit, 1 GiB memset queued: median %.0f ns (max %.0f)\n",
              median(unmap_busy_ns), *std::max_element(unmap_busy_ns.begin(), unmap_busy_ns.end()));
  std::printf("map a 32-unit handle in one call: median %.0f ns per unit\n", median(run_ns));
  std::printf("a remap (unmap + map), device idle: %.0f ns\n", median(unmap_ns) + median(map_ns));
  cudaFree(busy);
  check(api.address_free(base, space), "cuMemAddressFree");
  return 0;
}
