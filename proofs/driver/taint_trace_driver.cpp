// taint_trace_driver: runs a seeded random sequence of Taint and ErrorGraph
// calls on the real engine and writes what it did and saw as a TaintTrace
// module (proofs/TRACES.md), so TLC can confirm the C++ run is a behaviour of
// the spec. A stand-in until the taint fuzzer emits traces itself; it is not
// part of the CMake build (the engine has no dependencies, so one compiler
// call builds it):
//
//   c++ -std=c++20 -O1 -I core/include proofs/driver/taint_trace_driver.cpp \
//       core/src/engine/*.cpp -o /tmp/taint_trace_driver
//   /tmp/taint_trace_driver SEED OPS proofs/traces/taint_engine_SEED.tla
//
// Offsets stay in [0, 16] so claims collide; ids come from a fresh graph.
// Contract violations (a dead or never-minted failure, a move onto a taint
// that still holds claims) are generated on purpose and recorded with
// `threw`. The run ends with every taint cleared and every untagged node
// pruned, so the trace ends with an empty graph (R4).
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using taintpool::ByteRange;
using taintpool::Error;
using taintpool::ErrorGraph;
using taintpool::FailureId;
using taintpool::Taint;

constexpr std::size_t kAllocs = 3;
constexpr std::uint64_t kSpace = 16;

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

std::string claims_of(const Taint& taint) {
  std::string out = "<< ";
  bool first = true;
  taint.for_each_claim([&](FailureId failure, ByteRange range) {
    out += first ? "" : ", ";
    out += tuple({failure.raw(), range.begin(), range.end()});
    first = false;
  });
  return out + " >>";
}

std::string graph_of(const ErrorGraph& graph) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> nodes;
  graph.for_each([&](FailureId failure, const Error&, std::uint64_t tags) {
    nodes.emplace_back(failure.raw(), tags);
  });
  std::sort(nodes.begin(), nodes.end());
  std::string out = "<< ";
  for (std::size_t at = 0; at < nodes.size(); ++at) {
    out += at == 0 ? "" : ", ";
    out += tuple({nodes[at].first, nodes[at].second});
  }
  return out + " >>";
}

std::string seq_of(const std::vector<FailureId>& ids) {
  std::string out = "<<";
  for (std::size_t at = 0; at < ids.size(); ++at) {
    out += at == 0 ? "" : ", ";
    out += std::to_string(ids[at].raw());
  }
  return out + ">>";
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: taint_trace_driver SEED OPS OUT.tla\n";
    return 2;
  }
  const std::uint64_t seed = std::strtoull(argv[1], nullptr, 10);
  const std::size_t ops = std::strtoull(argv[2], nullptr, 10);
  const std::string path = argv[3];
  std::string module = path.substr(path.find_last_of('/') + 1);
  module = module.substr(0, module.rfind(".tla"));

  std::mt19937_64 rng(seed);
  auto pick = [&](std::uint64_t below) { return std::uniform_int_distribution<std::uint64_t>(0, below - 1)(rng); };

  ErrorGraph graph;
  std::array<Taint, kAllocs + 1> taints; // [0] unused: allocations are 1..kAllocs
  std::uint64_t minted = 0;
  std::vector<std::string> events;

  auto range = [&]() {
    std::uint64_t a = pick(kSpace + 1);
    std::uint64_t b = pick(kSpace + 1);
    if (a > b) {
      std::swap(a, b);
    }
    return ByteRange::of(a, b);
  };
  auto some_failure = [&]() -> std::uint64_t {
    // Mostly an id that was minted (live or dead), sometimes the next one.
    return minted == 0 || pick(8) == 0 ? minted + 1 : 1 + pick(minted);
  };
  auto observed = [&](std::size_t alloc) {
    return ",\n   claims |-> " + claims_of(taints[alloc]) + ", graph |-> " + graph_of(graph);
  };
  auto lohi = [](ByteRange r) {
    return "lo |-> " + std::to_string(r.begin()) + ", hi |-> " + std::to_string(r.end());
  };

  for (std::size_t step = 0; step < ops; ++step) {
    const std::size_t alloc = 1 + pick(kAllocs);
    const std::string a = "alloc |-> " + std::to_string(alloc);
    const std::uint64_t roll = pick(100);
    if (roll < 20) {
      const FailureId id = graph.insert(Error::launch("driver"));
      minted = id.raw();
      events.push_back("[op |-> \"insert\", f |-> " + std::to_string(id.raw()) +
                       ", graph |-> " + graph_of(graph) + "]");
    } else if (roll < 55) {
      const ByteRange r = range();
      const std::uint64_t f = some_failure();
      bool threw = false;
      try {
        taints[alloc].taint(r, FailureId::from_raw(f), graph);
      } catch (const std::logic_error&) {
        threw = true;
      }
      events.push_back("[op |-> \"taint\", " + a + ", " + lohi(r) + ", f |-> " +
                       std::to_string(f) + ", threw |-> " + (threw ? "TRUE" : "FALSE") +
                       observed(alloc) + "]");
    } else if (roll < 75) {
      const ByteRange r = range();
      taints[alloc].written(r, graph);
      events.push_back("[op |-> \"written\", " + a + ", " + lohi(r) + observed(alloc) + "]");
    } else if (roll < 79) {
      taints[alloc].clear(graph);
      events.push_back("[op |-> \"clear\", " + a + observed(alloc) + "]");
    } else if (roll < 90) {
      const ByteRange r = range();
      const auto one = taints[alloc].failure(r);
      events.push_back("[op |-> \"query\", " + a + ", " + lohi(r) + ", fs |-> " +
                       seq_of(taints[alloc].failures(r)) + ", one |-> " +
                       std::to_string(one ? one->raw() : 0) + "]");
    } else if (roll < 95) {
      const std::uint64_t f = some_failure();
      graph.prune(FailureId::from_raw(f));
      events.push_back("[op |-> \"prune\", f |-> " + std::to_string(f) + ", graph |-> " +
                       graph_of(graph) + "]");
    } else {
      const std::size_t to = 1 + pick(kAllocs);
      bool threw = false;
      try {
        taints[to] = std::move(taints[alloc]);
      } catch (const std::logic_error&) {
        threw = true;
      }
      events.push_back("[op |-> \"move\", " + a + ", to |-> " + std::to_string(to) +
                       ", threw |-> " + (threw ? "TRUE" : "FALSE") + observed(alloc) + "]");
    }
  }
  // R4: clear every taint, prune every node nothing carries.
  for (std::size_t alloc = 1; alloc <= kAllocs; ++alloc) {
    taints[alloc].clear(graph);
    events.push_back("[op |-> \"clear\", alloc |-> " + std::to_string(alloc) + observed(alloc) +
                     "]");
  }
  for (std::uint64_t f = 1; f <= minted; ++f) {
    if (graph.contains(FailureId::from_raw(f))) {
      graph.prune(FailureId::from_raw(f));
      events.push_back("[op |-> \"prune\", f |-> " + std::to_string(f) + ", graph |-> " +
                       graph_of(graph) + "]");
    }
  }
  if (!graph.empty()) {
    std::cerr << "taint_trace_driver: the graph is not empty at the end (R4)\n";
    return 1;
  }

  std::ofstream out(path);
  out << "---- MODULE " << module << " ----\n"
      << "\\* expect: accepted\n"
      << "\\* Written by proofs/driver/taint_trace_driver.cpp (seed " << seed << ", " << ops
      << " random ops on the real engine).\n"
      << "Trace == <<\n";
  for (std::size_t at = 0; at < events.size(); ++at) {
    out << "  " << events[at] << (at + 1 < events.size() ? ",\n" : "\n");
  }
  out << ">>\n====\n";
  return out ? 0 : 1;
}
