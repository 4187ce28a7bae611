// taint_trace_driver: runs a seeded random sequence of Taint and ErrorGraph
// calls on the real engine and writes what it did and saw as a TaintTrace
// module (proofs/TRACES.md), so TLC can confirm the C++ run is a behaviour of
// TaintOps and ErrorGraph.tla. proofs/check builds it and checks freshly
// generated traces on every run; by hand (the engine has no dependencies):
//
//   c++ -std=c++20 -O1 -I core/include -I fuzz -o /tmp/taint_trace_driver
//       proofs/driver/taint_trace_driver.cpp core/src/engine/*.cpp
//   /tmp/taint_trace_driver SEED OPS proofs/traces/taint_engine_SEED.tla
//
// The sequence is rich in what the engine rules are about, not in filler:
// three allocations whose claims collide on 17 offsets (T1 steals and splits,
// T2 partial releases, T5 fusing), a few of them placed at the top of the
// 64-bit space (the trace writes offsets as ranks, fuzz/common/tla_trace.hpp),
// failures inserted the way the Device does (insert, claim, prune: the node
// goes when its last claim does, G3, or at the prune, G5), replace (G4),
// queries (T3), moves (R1 moves with the claims), and contract violations on
// purpose: a dead or never-minted failure, a hand untag with no tag, a move
// onto a taint that still holds claims — each recorded with `threw`. The run
// ends with every taint cleared and every node pruned: an empty graph (R4).
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/taint.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/tla_trace.hpp"

namespace {

using taintpool::ByteRange;
using taintpool::Error;
using taintpool::ErrorGraph;
using taintpool::FailureId;
using taintpool::Taint;
using taintpool::fuzz::tla::Trace;
using taintpool::fuzz::tla::Value;

constexpr std::size_t kAllocs = 3;
constexpr std::uint64_t kSpace = 16;
constexpr std::uint64_t kTop = UINT64_MAX - kSpace; ///< Where the high offsets start.

class Program {
 public:
  explicit Program(std::uint64_t seed)
      : rng_(seed) {}

  void run(std::size_t ops) {
    for (std::size_t step = 0; step < ops; ++step) {
      const std::size_t alloc = 1 + pick(kAllocs);
      const std::uint64_t roll = pick(100);
      if (roll < 12 || minted_ == 0) {
        insert();
      } else if (roll < 42) {
        taint(alloc);
      } else if (roll < 60) {
        written(alloc);
      } else if (roll < 63) {
        clear(alloc);
      } else if (roll < 73) {
        query(alloc);
      } else if (roll < 81) {
        prune(some_failure());
      } else if (roll < 85) {
        replace();
      } else if (roll < 88) {
        skipped();
      } else if (roll < 92) {
        hand_tag();
      } else {
        move(alloc);
      }
    }
    // R4: clear every taint, prune every node nothing carries.
    for (std::size_t alloc = 1; alloc <= kAllocs; ++alloc) {
      clear(alloc);
    }
    for (std::uint64_t f = 1; f <= minted_; ++f) {
      while (hand_[f] > 0) {
        graph_.untag(FailureId::from_raw(f));
        --hand_[f];
        add(event("untag", {{"f", Value::number(f)}, {"threw", Value::boolean(false)}}), 0);
      }
      if (graph_.contains(FailureId::from_raw(f))) {
        prune(f);
      }
    }
  }

  [[nodiscard]] bool drained() const { return graph_.empty(); }

  bool write(const char* path, std::uint64_t seed, std::size_t ops) {
    std::vector<Value> allocs;
    for (std::size_t at = 1; at <= kAllocs; ++at) {
      allocs.push_back(Value::number(at));
    }
    trace_.define("TraceAllocs", Value::set(std::move(allocs)));
    trace_.define("TraceMaxId", Value::number(std::max<std::uint64_t>(1, minted_ + 1)));
    return trace_.write(
        path, {"Written by proofs/driver/taint_trace_driver.cpp (seed " + std::to_string(seed) +
                   ", " + std::to_string(ops) +
                   " random ops on the real engine): " + std::to_string(trace_.size()) + " events.",
               "Offsets are ranks among the offsets the trace uses (TRACES.md)."});
  }

 private:
  std::uint64_t pick(std::uint64_t below) {
    return std::uniform_int_distribution<std::uint64_t>(0, below - 1)(rng_);
  }

  ByteRange range() {
    const std::uint64_t base = pick(8) == 0 ? kTop : 0;
    std::uint64_t a = pick(kSpace + 1);
    std::uint64_t b = pick(kSpace + 1);
    if (a > b) {
      std::swap(a, b);
    }
    return ByteRange::of(base + a, base + b);
  }

  /// Mostly a live id, sometimes a dead one, now and then the next one
  /// (never minted).
  std::uint64_t some_failure() {
    const std::uint64_t roll = pick(10);
    if (roll == 0 || minted_ == 0) {
      return minted_ + 1;
    }
    std::vector<std::uint64_t> live;
    graph_.for_each([&](FailureId f, const Error&, std::uint64_t) { live.push_back(f.raw()); });
    if (roll < 8 && !live.empty()) {
      return live[pick(live.size())];
    }
    return 1 + pick(minted_);
  }

  static Value event(const char* op, std::vector<std::pair<std::string, Value>> fields) {
    fields.insert(fields.begin(), {"op", Value::string(op)});
    return Value::record(std::move(fields));
  }
  static Value lo(ByteRange r) { return Value::offset(r.begin()); }
  static Value hi(ByteRange r) { return Value::offset(r.end()); }

  /// Adds the event with the claims of `alloc` (0: none) and the graph.
  void add(Value e, std::size_t alloc) {
    if (alloc != 0) {
      std::vector<Value> claims;
      taints_[alloc].for_each_claim([&](FailureId f, ByteRange r) {
        claims.push_back(Value::tuple({Value::number(f.raw()), lo(r), hi(r)}));
      });
      e.set("claims", Value::tuple(std::move(claims)));
    }
    std::vector<std::pair<std::uint64_t, std::uint64_t>> nodes;
    graph_.for_each(
        [&](FailureId f, const Error&, std::uint64_t tags) { nodes.emplace_back(f.raw(), tags); });
    std::sort(nodes.begin(), nodes.end());
    std::vector<Value> graph;
    for (const auto& [f, tags] : nodes) {
      graph.push_back(Value::tuple({Value::number(f), Value::number(tags)}));
    }
    e.set("graph", Value::tuple(std::move(graph)));
    trace_.add(std::move(e));
  }

  template <class Call>
  static bool threw(Call&& call) {
    try {
      call();
    } catch (const std::logic_error&) {
      return true;
    }
    return false;
  }

  void insert() {
    const FailureId id = graph_.insert(Error::launch("driver"));
    minted_ = id.raw();
    hand_.resize(minted_ + 1, 0);
    add(event("insert", {{"f", Value::number(id.raw())}}), 0);
  }

  void taint(std::size_t alloc) {
    const ByteRange r = range();
    const std::uint64_t f = some_failure();
    const bool failed = threw([&] { taints_[alloc].taint(r, FailureId::from_raw(f), graph_); });
    add(event("taint", {{"alloc", Value::number(alloc)},
                        {"lo", lo(r)},
                        {"hi", hi(r)},
                        {"f", Value::number(f)},
                        {"threw", Value::boolean(failed)}}),
        alloc);
  }

  void written(std::size_t alloc) {
    const ByteRange r = range();
    taints_[alloc].written(r, graph_);
    add(event("written", {{"alloc", Value::number(alloc)}, {"lo", lo(r)}, {"hi", hi(r)}}), alloc);
  }

  void clear(std::size_t alloc) {
    taints_[alloc].clear(graph_);
    add(event("clear", {{"alloc", Value::number(alloc)}}), alloc);
  }

  void query(std::size_t alloc) {
    const ByteRange r = range();
    std::vector<Value> fs;
    for (const FailureId f : taints_[alloc].failures(r)) {
      fs.push_back(Value::number(f.raw()));
    }
    const auto one = taints_[alloc].failure(r);
    trace_.add(event("query", {{"alloc", Value::number(alloc)},
                               {"lo", lo(r)},
                               {"hi", hi(r)},
                               {"fs", Value::tuple(std::move(fs))},
                               {"one", Value::number(one ? one->raw() : 0)}}));
  }

  void prune(std::uint64_t f) {
    graph_.prune(FailureId::from_raw(f));
    add(event("prune", {{"f", Value::number(f)}}), 0);
  }

  void replace() {
    const std::uint64_t f = some_failure();
    graph_.replace(FailureId::from_raw(f), Error::out_of_memory("driver"));
    add(event("replace", {{"f", Value::number(f)}}), 0);
  }

  void skipped() {
    const std::uint64_t f = some_failure();
    const bool failed = threw([&] {
      graph_.skipped(FailureId::from_raw(f),
                     taintpool::SkipRecord{"k", taintpool::AllocationId::from_raw(1), {}, false});
    });
    add(event("skipped", {{"f", Value::number(f)}, {"threw", Value::boolean(failed)}}), 0);
  }

  /// G2/G3 by hand: a tag, or an untag of a hand tag (or of none: refused).
  void hand_tag() {
    const std::uint64_t f = some_failure();
    const bool up = pick(2) == 0;
    const bool failed = threw([&] {
      if (up) {
        graph_.tag(FailureId::from_raw(f));
      } else if (f < hand_.size() && hand_[f] > 0) {
        graph_.untag(FailureId::from_raw(f));
      } else {
        // An untag with no hand tag: only refused when the node has no tag
        // at all, else it would take a claim's tag (the spec catches that),
        // so make it one the engine refuses: a never-minted id.
        graph_.untag(FailureId::from_raw(minted_ + 1));
      }
    });
    const std::uint64_t named = !up && !(f < hand_.size() && hand_[f] > 0) ? minted_ + 1 : f;
    if (!failed && f < hand_.size()) {
      hand_[f] += up ? 1 : -1;
    }
    add(event(up ? "tag" : "untag",
              {{"f", Value::number(named)}, {"threw", Value::boolean(failed)}}),
        0);
  }

  void move(std::size_t alloc) {
    const std::size_t to = 1 + pick(kAllocs);
    const bool failed = threw([&] { taints_[to] = std::move(taints_[alloc]); });
    add(event("move", {{"alloc", Value::number(alloc)},
                       {"to", Value::number(to)},
                       {"threw", Value::boolean(failed)}}),
        alloc);
  }

  std::mt19937_64 rng_;
  ErrorGraph graph_;                      ///< Outlives the taints (declared first).
  std::array<Taint, kAllocs + 1> taints_; ///< [0] unused: allocations are 1..kAllocs.
  std::uint64_t minted_ = 0;
  std::vector<std::int64_t> hand_ = {0}; ///< Hand tags per id.
  Trace trace_;
};

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: taint_trace_driver SEED OPS OUT.tla\n";
    return 2;
  }
  const std::uint64_t seed = std::strtoull(argv[1], nullptr, 10);
  const std::size_t ops = std::strtoull(argv[2], nullptr, 10);
  Program program(seed);
  program.run(ops);
  if (!program.drained()) {
    std::cerr << "taint_trace_driver: the graph is not empty at the end (R4)\n";
    return 1;
  }
  return program.write(argv[3], seed, ops) ? 0 : 1;
}
