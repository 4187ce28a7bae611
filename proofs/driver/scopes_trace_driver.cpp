// scopes_trace_driver: runs a seeded random program on a real Device (host
// backend) — buffers created and dropped, launches with random read and
// write bindings whose bodies succeed, fail, fail part-way or throw, host
// writes, reads — and writes what it did and saw as a ScopesTrace module
// (proofs/TRACES.md), so TLC can confirm the C++ run is a behaviour of
// Scopes.tla and that every read agrees with its oracle. A stand-in until the
// device fuzzer emits traces itself; not part of the CMake build:
//
//   c++ -std=c++20 -O1 -I core/include proofs/driver/scopes_trace_driver.cpp \
//       core/src/engine/*.cpp core/src/pool/*.cpp core/src/device/*.cpp \
//       core/src/host/*.cpp -o /tmp/scopes_trace_driver
//   /tmp/scopes_trace_driver SEED OPS proofs/traces/scopes_device_SEED.tla
//
// Buffers are 1..6 bytes (Scopes' oracle is per byte). Every event records
// the graph and every claim after it. Drops are followed by sweep(), so the
// pool discovers them at once (the trace's `drop` is the discovery).
#include <taintpool/device/device.hpp>
#include <taintpool/host/host_backend.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace taintpool;

std::string tuple(std::initializer_list<std::uint64_t> values) {
  std::string out = "<<";
  bool first = true;
  for (const std::uint64_t value : values) {
    out += first ? "" : ", ";
    out += std::to_string(value);
    first = false;
  }
  return out + ">>";
}

std::string seq(const std::vector<std::string>& items) {
  std::string out = "<< ";
  for (std::size_t at = 0; at < items.size(); ++at) {
    out += (at == 0 ? "" : ", ") + items[at];
  }
  return out + " >>";
}

std::string binding(const Binding& b) {
  return tuple({b.allocation.raw(), b.range.begin(), b.range.end()});
}

std::string observed(Device& device) {
  std::vector<std::string> nodes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> sorted;
  device.graph().for_each([&](FailureId f, const Error&, std::uint64_t tags) {
    sorted.emplace_back(f.raw(), tags);
  });
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [f, tags] : sorted) {
    nodes.push_back(tuple({f, tags}));
  }
  std::vector<std::string> claims;
  device.memory().for_each_allocation([&](const AllocationInfo& info) {
    info.taint->for_each_claim([&](FailureId f, ByteRange r) {
      claims.push_back(tuple({info.id.raw(), f.raw(), r.begin(), r.end()}));
    });
  });
  return ",\n   graph |-> " + seq(nodes) + ", claims |-> " + seq(claims);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: scopes_trace_driver SEED OPS OUT.tla\n";
    return 2;
  }
  const std::uint64_t seed = std::strtoull(argv[1], nullptr, 10);
  const std::size_t ops = std::strtoull(argv[2], nullptr, 10);
  const std::string path = argv[3];
  std::string module = path.substr(path.find_last_of('/') + 1);
  module = module.substr(0, module.rfind(".tla"));

  std::mt19937_64 rng(seed);
  auto pick = [&](std::uint64_t below) {
    return std::uniform_int_distribution<std::uint64_t>(0, below - 1)(rng);
  };

  HostBackend backend;
  Device device(backend);
  std::map<std::uint64_t, Allocation> live;   // id -> handle
  std::map<std::uint64_t, std::uint64_t> sizes; // every id ever created
  std::vector<std::string> events;

  auto create = [&]() {
    const std::uint64_t size = 1 + pick(6);
    Allocation buffer = device.create_buffer(size);
    const std::uint64_t id = buffer.id().raw();
    live.emplace(id, std::move(buffer));
    sizes[id] = size;
    events.push_back("[op |-> \"create\", alloc |-> " + std::to_string(id) +
                     ", size |-> " + std::to_string(size) + "]");
  };
  // A binding inside a live buffer; now and then one of a dropped buffer.
  auto some_binding = [&]() -> Binding {
    std::uint64_t id;
    if (live.empty() || (sizes.size() > live.size() && pick(12) == 0)) {
      std::vector<std::uint64_t> dead;
      for (const auto& [d, size] : sizes) {
        if (live.count(d) == 0) {
          dead.push_back(d);
        }
      }
      id = dead.empty() ? sizes.begin()->first : dead[pick(dead.size())];
    } else {
      auto it = live.begin();
      std::advance(it, pick(live.size()));
      id = it->first;
    }
    const std::uint64_t size = sizes[id];
    std::uint64_t a = pick(size + 1);
    std::uint64_t b = pick(size + 1);
    if (a > b) {
      std::swap(a, b);
    }
    if (a == b && pick(2) == 0) {
      a = 0;
      b = size; // prefer whole bindings over empty ones
    }
    return Binding{AllocationId::from_raw(id), ByteRange::of(a, b)};
  };

  create();
  create();
  for (std::size_t step = 0; step < ops; ++step) {
    const std::uint64_t roll = pick(100);
    if (roll < 10 || live.empty()) {
      create();
    } else if (roll < 16 && live.size() > 1) {
      auto it = live.begin();
      std::advance(it, pick(live.size()));
      const std::uint64_t id = it->first;
      live.erase(it);
      device.sweep();
      events.push_back("[op |-> \"drop\", alloc |-> " + std::to_string(id) + observed(device) +
                       "]");
    } else if (roll < 30) {
      const Binding where = some_binding();
      const bool valid = live.count(where.allocation.raw()) != 0;
      std::vector<std::byte> bytes(where.range.size(), std::byte{7});
      const std::uint64_t p = device.graph().next_id().raw();
      try {
        device.write(where, bytes);
      } catch (const Exception&) {
        if (valid) {
          throw;
        }
      }
      if (!valid) {
        events.push_back("[op |-> \"launch\", reads |-> << >>, writes |-> << " + binding(where) +
                         " >>, status |-> \"refused\"" + observed(device) + "]");
        continue;
      }
      events.push_back("[op |-> \"launch\", reads |-> << >>, writes |-> << " + binding(where) +
                       " >>, status |-> \"entered\", p |-> " + std::to_string(p) + "]");
      events.push_back("[op |-> \"close\", outcome |-> \"ok\"" + observed(device) + "]");
    } else if (roll < 80) {
      std::vector<Binding> reads;
      std::vector<Binding> writes;
      const std::size_t nreads = pick(3);
      const std::size_t nwrites = pick(3);
      for (std::size_t k = 0; k < nreads; ++k) {
        reads.push_back(some_binding());
      }
      for (std::size_t k = 0; k < nwrites; ++k) {
        writes.push_back(pick(5) == 0 && !reads.empty() ? reads[0] : some_binding());
      }
      const std::uint64_t plan = pick(10); // 0-4 ok, 5-6 fail, 7-8 partial, 9 throw
      std::vector<WrittenRange> written;
      if (plan == 7 || plan == 8) {
        const std::size_t count = 1 + pick(2);
        for (std::size_t k = 0; k < count && !writes.empty(); ++k) {
          const auto output = static_cast<std::uint32_t>(pick(writes.size() + 1)); // may be out of range
          const std::uint64_t span = output < writes.size() ? writes[output].range.size() : 2;
          std::uint64_t a = pick(span + 2);
          std::uint64_t b = pick(span + 2); // may reach past the output
          if (a > b) {
            std::swap(a, b);
          }
          written.push_back(WrittenRange{output, ByteRange::of(a, b)});
        }
      }
      const std::uint64_t p = device.graph().next_id().raw();
      std::string status;
      std::string extra;
      try {
        const LaunchResult result = device.launch(
            "k", reads, writes, [&](const KernelContext&) -> LaunchOutcome {
              if (plan == 9) {
                throw std::runtime_error("body threw");
              }
              if (plan >= 7) {
                return LaunchOutcome::partial(Error::launch("partial"), written);
              }
              if (plan >= 5) {
                return LaunchOutcome::failure(Error::launch("failed"));
              }
              return LaunchOutcome::success();
            });
        if (result.status == LaunchStatus::Skipped) {
          status = "skipped";
          extra = ", root |-> " + std::to_string(result.failure->raw()) +
                  ", needed |-> " + std::to_string(result.needed->raw());
        } else {
          status = "entered";
        }
      } catch (const Exception&) {
        status = "refused"; // a binding error, before anything was claimed
      } catch (const std::runtime_error&) {
        status = "entered"; // S3: the body's exception came back
      }
      std::vector<std::string> r;
      std::vector<std::string> w;
      for (const Binding& b : reads) {
        r.push_back(binding(b));
      }
      for (const Binding& b : writes) {
        w.push_back(binding(b));
      }
      std::string launch = "[op |-> \"launch\", reads |-> " + seq(r) + ", writes |-> " + seq(w) +
                           ", status |-> \"" + status + "\"" + extra;
      if (status == "entered" && !writes.empty()) {
        launch += ", p |-> " + std::to_string(p);
      }
      if (status != "entered") {
        events.push_back(launch + observed(device) + "]");
        continue;
      }
      events.push_back(launch + "]");
      std::string close = "[op |-> \"close\", outcome |-> ";
      if (plan == 9) {
        close += "\"throw\"";
      } else if (plan >= 7) {
        std::vector<std::string> parts;
        for (const WrittenRange& part : written) {
          parts.push_back(tuple({part.output + 1ull, part.range.begin(), part.range.end()}));
        }
        close += "\"fail\", written |-> " + seq(parts);
      } else if (plan >= 5) {
        close += "\"fail\"";
      } else {
        close += "\"ok\"";
      }
      events.push_back(close + observed(device) + "]");
    } else {
      Binding from = some_binding();
      if (live.count(from.allocation.raw()) == 0) {
        continue; // a read of a dropped buffer is not in the trace format
      }
      const std::vector<Report> reports = device.stale_reports(from);
      std::vector<std::string> failures;
      std::vector<std::string> described;
      for (const Report& report : reports) {
        failures.push_back(std::to_string(report.failure.raw()));
        std::vector<std::string> needed;
        for (const SkipRecord& record : report.path) {
          needed.push_back(std::to_string(record.needed.raw()));
        }
        described.push_back("[f |-> " + std::to_string(report.failure.raw()) + ", origin |-> " +
                            std::to_string(report.origin.raw()) + ", path |-> " + seq(needed) +
                            "]");
      }
      events.push_back("[op |-> \"read\", alloc |-> " + std::to_string(from.allocation.raw()) +
                       ", lo |-> " + std::to_string(from.range.begin()) + ", hi |-> " +
                       std::to_string(from.range.end()) + ", ok |-> " +
                       (reports.empty() ? "TRUE" : "FALSE") + ", failures |-> " + seq(failures) +
                       ", reports |-> " + seq(described) + "]");
    }
  }
  // R4: drop every buffer; the graph must end empty.
  while (!live.empty()) {
    const std::uint64_t id = live.begin()->first;
    live.erase(live.begin());
    device.sweep();
    events.push_back("[op |-> \"drop\", alloc |-> " + std::to_string(id) + observed(device) + "]");
  }
  if (!device.graph().empty()) {
    std::cerr << "scopes_trace_driver: the graph is not empty at the end (R4)\n";
    return 1;
  }

  std::ofstream out(path);
  out << "---- MODULE " << module << " ----\n"
      << "\\* expect: accepted\n"
      << "\\* Written by proofs/driver/scopes_trace_driver.cpp (seed " << seed << ", " << ops
      << " random steps on a real Device, host backend).\n"
      << "Trace == <<\n";
  for (std::size_t at = 0; at < events.size(); ++at) {
    out << "  " << events[at] << (at + 1 < events.size() ? ",\n" : "\n");
  }
  out << ">>\n====\n";
  return out ? 0 : 1;
}
