// scopes_trace_driver: runs a seeded random program on a real Device (host
// backend) and writes what it did and saw as a ScopesTrace module
// (proofs/TRACES.md), so TLC can confirm the C++ run is a behaviour of
// Scopes.tla and that every read agrees with its oracle. proofs/check builds
// it and checks freshly generated traces on every run; by hand:
//
//   c++ -std=c++20 -O1 -I core/include -I fuzz -o /tmp/scopes_trace_driver
//       proofs/driver/scopes_trace_driver.cpp core/src/engine/*.cpp
//       core/src/pool/*.cpp core/src/device/*.cpp core/src/host/*.cpp
//   /tmp/scopes_trace_driver SEED OPS proofs/traces/scopes_device_SEED.tla
//
// The program is shaped to be rich in what the device rules are about, not
// in filler: a handful of small buffers (0..8 bytes; Scopes' oracle is per
// byte) so launches share them; reads and read bindings that prefer buffers
// holding stale bytes, so skips chain (S1, G7, G8) and reads report (D1, G9);
// bodies that succeed (some naming the only ranges they wrote, none or some
// past their output, S6), fail with one of three error kinds (G4), fail
// part-way with reported ranges some of which reach past their output (S2), or throw
// (S3); host writes that repair (S5), read-write bindings (S5), bindings to
// dropped buffers and past the end (P3), and drops of tainted buffers (P1).
// The trace itself is written by fuzz/common/device_trace.hpp, the recorder
// device_fuzzer uses too. At the end every buffer is dropped and the graph
// must be empty (R4).
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/device_trace.hpp"

namespace {

using namespace taintpool;
using Trace = fuzz::tla::DeviceTrace;

class Program {
 public:
  explicit Program(std::uint64_t seed)
      : rng_(seed)
      , device_(backend_) {}

  void run(std::size_t ops) {
    create();
    create();
    create();
    for (std::size_t step = 0; step < ops; ++step) {
      const std::uint64_t roll = pick(100);
      if (roll < 8 || live_.size() < 2) {
        create();
      } else if (roll < 14) {
        drop();
      } else if (roll < 24) {
        host_write();
      } else if (roll < 74) {
        launch();
      } else if (roll < 95) {
        read();
      } else {
        if (pick(2) == 0) {
          device_.sweep();
        } else {
          device_.cleanup();
        }
        trace_.called(device_);
      }
    }
    while (!live_.empty()) {
      live_.erase(live_.begin());
    }
    device_.sweep();
    trace_.called(device_);
  }

  [[nodiscard]] bool drained() { return device_.graph().empty(); }
  [[nodiscard]] const Trace& trace() const { return trace_; }

 private:
  std::uint64_t pick(std::uint64_t below) {
    return std::uniform_int_distribution<std::uint64_t>(0, below - 1)(rng_);
  }

  bool stale(std::uint64_t id) {
    bool found = false;
    device_.memory().for_each_allocation([&](const AllocationInfo& info) {
      if (info.id.raw() == id && !info.taint->is_clean()) {
        found = true;
      }
    });
    return found;
  }

  void create() {
    const std::uint64_t size = pick(12) == 0 ? 0 : 1 + pick(8);
    const bool with_bytes = pick(3) == 0;
    Allocation buffer = with_bytes
                            ? device_.create_buffer(std::vector<std::byte>(size, std::byte{3}))
                            : device_.create_buffer(size);
    const AllocationId id = buffer.id();
    sizes_[id.raw()] = size;
    live_.emplace(id.raw(), std::move(buffer));
    trace_.created(device_, id, with_bytes);
  }

  void drop() {
    // Prefer a buffer holding stale bytes: its discovery must release them (P1).
    auto it = live_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(pick(live_.size())));
    for (auto other = live_.begin(); other != live_.end() && pick(2) == 0; ++other) {
      if (stale(other->first)) {
        it = other;
        break;
      }
    }
    live_.erase(it); // Discovered at the device's next call.
  }

  /// A live buffer, preferring one with stale bytes when `stale_first`; now
  /// and then a dropped one (P3).
  std::uint64_t some_buffer(bool stale_first) {
    if (sizes_.size() > live_.size() && pick(25) == 0) {
      std::vector<std::uint64_t> dead;
      for (const auto& [id, size] : sizes_) {
        if (live_.count(id) == 0) {
          dead.push_back(id);
        }
      }
      return dead[pick(dead.size())];
    }
    std::vector<std::uint64_t> candidates;
    for (const auto& [id, handle] : live_) {
      if (!stale_first || stale(id)) {
        candidates.push_back(id);
      }
    }
    if (candidates.empty() || pick(3) == 0) {
      candidates.clear();
      for (const auto& [id, handle] : live_) {
        candidates.push_back(id);
      }
    }
    return candidates[pick(candidates.size())];
  }

  Binding some_binding(bool stale_first) {
    const std::uint64_t id = some_buffer(stale_first);
    const std::uint64_t size = sizes_[id];
    if (pick(2) == 0) {
      return Binding{AllocationId::from_raw(id), ByteRange::of(0, size)};
    }
    std::uint64_t a = pick(size + 1);
    std::uint64_t b = pick(size + 1);
    if (a > b) {
      std::swap(a, b);
    }
    if (pick(30) == 0) {
      b = size + 1 + pick(2); // Past the end (P3).
    }
    return Binding{AllocationId::from_raw(id), ByteRange::of(a, b)};
  }

  void host_write() {
    const Binding into = some_binding(true);
    const bool mismatch = pick(20) == 0;
    const std::vector<std::byte> bytes(into.range.size() + (mismatch ? 1 : 0), std::byte{9});
    LaunchResult result;
    Trace::Ending ending = Trace::Ending::returned;
    try {
      result = device_.write(into, bytes);
    } catch (const Exception&) {
      ending = Trace::Ending::refused;
    }
    trace_.host_written(device_, into, ending, result, mismatch);
  }

  void launch() {
    std::vector<Binding> reads;
    std::vector<Binding> writes;
    const std::uint64_t nreads = pick(3);
    const std::uint64_t nwrites = pick(3);
    for (std::uint64_t k = 0; k < nreads; ++k) {
      reads.push_back(some_binding(true));
    }
    for (std::uint64_t k = 0; k < nwrites; ++k) {
      writes.push_back(!reads.empty() && pick(5) == 0 ? reads[pick(reads.size())]
                                                      : some_binding(false));
    }
    // 0-5 ok, 6-8 ok naming what it wrote (S6), 9-12 fail, 13-17 partial,
    // 18-19 throw.
    const std::uint64_t plan = pick(20);
    const bool wrote_only = plan >= 6 && plan <= 8;
    constexpr ErrorKind kinds[] = {ErrorKind::Launch, ErrorKind::OutOfMemory, ErrorKind::Generic};
    const Error error(kinds[pick(3)], "driver");
    std::vector<WrittenRange> written;
    if ((plan >= 13 && plan <= 17) || wrote_only) {
      // A wrote_only body may name nothing: a launch of zero blocks.
      const std::uint64_t count = wrote_only ? pick(3) : 1 + pick(2);
      for (std::uint64_t k = 0; k < count && !writes.empty(); ++k) {
        const auto output = static_cast<std::uint32_t>(pick(writes.size() + (pick(6) == 0)));
        const std::uint64_t span = output < writes.size() ? writes[output].range.size() : 2;
        std::uint64_t a = pick(span + 1);
        std::uint64_t b = pick(span + (pick(6) == 0 ? 3 : 1)); // Sometimes past the output.
        if (a > b) {
          std::swap(a, b);
        }
        written.push_back(WrittenRange{output, ByteRange::of(a, b)});
      }
    }
    LaunchResult result;
    Trace::Ending ending = Trace::Ending::returned;
    try {
      result = device_.launch("k", reads, writes, [&](const KernelContext&) -> LaunchOutcome {
        if (plan >= 18) {
          throw std::runtime_error("body threw");
        }
        if (plan >= 13) {
          return LaunchOutcome::partial(error, written);
        }
        if (plan >= 9) {
          return LaunchOutcome::failure(error);
        }
        if (wrote_only) {
          return LaunchOutcome::wrote_only(written);
        }
        return LaunchOutcome::success();
      });
    } catch (const Exception&) {
      ending = Trace::Ending::refused;
    } catch (const std::runtime_error&) {
      ending = Trace::Ending::body_threw;
    }
    trace_.launched(device_, reads, writes, ending, result, written, false, wrote_only);
  }

  void read() {
    const Binding from = some_binding(true);
    if (live_.count(from.allocation.raw()) == 0 ||
        from.range.end() > sizes_[from.allocation.raw()]) {
      // A bad binding: not in the format, but the call may discover drops.
      try {
        (void)device_.stale_reports(from);
      } catch (const Exception&) {
      }
      trace_.called(device_);
      return;
    }
    std::vector<Report> reports;
    if (pick(2) == 0) {
      reports = device_.stale_reports(from);
    } else {
      std::vector<std::byte> bytes(from.range.size());
      reports = device_.read(from, bytes).reports;
    }
    trace_.read(device_, from, true, reports);
  }

  std::mt19937_64 rng_;
  HostBackend backend_;
  Device device_;
  Trace trace_;
  std::map<std::uint64_t, Allocation> live_;     ///< id -> handle
  std::map<std::uint64_t, std::uint64_t> sizes_; ///< every id ever created
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: scopes_trace_driver SEED OPS OUT.tla\n";
    return 2;
  }
  const std::uint64_t seed = std::strtoull(argv[1], nullptr, 10);
  const std::size_t ops = std::strtoull(argv[2], nullptr, 10);
  Program program(seed);
  program.run(ops);
  if (!program.drained()) {
    std::cerr << "scopes_trace_driver: the graph is not empty at the end (R4)\n";
    return 1;
  }
  const std::string note =
      "Written by proofs/driver/scopes_trace_driver.cpp (seed " + std::to_string(seed) + ", " +
      std::to_string(ops) +
      " random steps on a real Device, host backend): " + std::to_string(program.trace().events()) +
      " events.";
  return program.trace().write(argv[3], {note}) ? 0 : 1;
}
