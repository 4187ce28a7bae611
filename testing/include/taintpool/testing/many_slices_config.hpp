// many_slices_config.hpp: the pools the Device fuzzers build every rank's
// Device on — 16-byte alignment, two small sliced pools with many slices per
// page (1 KiB pages of 128-byte slices, 4 KiB pages of 1 KiB slices), and
// 1 MiB at most, so reuse, splitting and coalescing happen within a few
// buffers of a short input.
//
// Why shared: device_fuzzer and collective_fuzzer run on it, and
// bench/construction_bench measures what a new Device costs in exactly this
// configuration (issue 13: the fuzzers build Devices per input); written
// once, the benchmark cannot drift from what the fuzzers pay. Header only.
#pragma once

#include <taintpool/pool/memory_config.hpp>

#include <cstdint>

namespace taintpool::testing {

/// The Device fuzzers' pools (see above). Valid under MemoryConfig::validate.
inline MemoryConfig many_slices_config() {
  MemoryConfig config;
  config.alignment = 16;
  config.sliced = {{1024, 128}, {4096, 1024}};
  config.max_allocation = std::uint64_t{1} << 20;
  return config;
}

} // namespace taintpool::testing
