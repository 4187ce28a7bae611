// Benchmarks of the taint engine (DESIGN.md §5), each run three ways in one
// binary so the ratios come from one machine and one run:
//   core   — taintpool's Taint + ErrorGraph;
//   model  — the reference EngineModel (per-byte owner runs, recounted tags);
//   boxed  — the naive layout (bench/baselines/boxed_engine.hpp): a boxed
//            vector of claims each with its own vector of ranges, and a
//            std::map error graph.
//
// Workloads:
//   ScopeCycle/k     the success path of one write scope over k buffers:
//                    insert TornDown, taint each buffer's whole binding,
//                    written each, prune. The per-launch cost of taintpool.
//   ReleaseTiles     a buffer claimed whole, then released tile by tile
//                    (order 0: front to back, trimming an edge each time;
//                    order 1: every other tile first, splitting the claim
//                    into tiles/2 ranges, then the rest).
//   FuseTiles        a kernel failing tile by tile: each tile tainted with
//                    one failure (order 0 fuses every time; order 1 taints
//                    the even tiles first, then fuses the odd ones between),
//                    then one write over everything.
//   ManyFailures/n   n failures each claiming one tile of one allocation,
//                    then one write over everything.
//
// Counters: time_per_buffer / time_per_tile / time_per_failure are seconds
// per unit of work (printed with an SI prefix: "3.1ns"); allocs_per_cycle is
// global operator new calls per iteration (testing/src/bench_allocations.cpp).
// Build Release (-DCMAKE_BUILD_TYPE=Release); see bench/README.md.
#include <taintpool/byte_range.hpp>
#include <taintpool/error.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/failure_id.hpp>
#include <taintpool/model/engine_model.hpp>
#include <taintpool/taint.hpp>
#include <taintpool/testing/bench_allocations.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "baselines/boxed_engine.hpp"

namespace taintpool::bench {
namespace {

constexpr std::uint64_t kBinding = 1 << 20; // a buffer's whole binding, bytes
constexpr std::uint64_t kTile = 4096;       // one tile of a tiled kernel, bytes

/// The model recounts every failure ever minted on each operation, so its
/// cost grows with the run; it is rebuilt (untimed) after this many cycles.
constexpr std::int64_t kModelBatch = 256;

void per_unit(benchmark::State& state, const char* name, double units_per_iteration) {
  state.counters[name] =
      benchmark::Counter(units_per_iteration, benchmark::Counter::kIsIterationInvariantRate |
                                                  benchmark::Counter::kInvert);
}

/// A tile's range, and the order tiles are visited in: 0 front to back,
/// 1 even tiles then odd ones.
ByteRange tile(std::uint64_t index) {
  return ByteRange::sized(index * kTile, kTile);
}
std::vector<std::uint64_t> tile_order(std::uint64_t tiles, std::int64_t order) {
  std::vector<std::uint64_t> indices;
  if (order == 0) {
    for (std::uint64_t at = 0; at < tiles; ++at) {
      indices.push_back(at);
    }
  } else {
    for (std::uint64_t at = 0; at < tiles; at += 2) {
      indices.push_back(at);
    }
    for (std::uint64_t at = 1; at < tiles; at += 2) {
      indices.push_back(at);
    }
  }
  return indices;
}

BoxedTaint::Range boxed(ByteRange range) {
  return {range.begin(), range.end()};
}

model::EngineModel fresh_model(std::size_t allocations) {
  model::EngineModel model;
  for (std::size_t at = 0; at < allocations; ++at) {
    model.add_allocation();
  }
  return model;
}

// ---- the success-path scope cycle ------------------------------------------------

void ScopeCycle_Core(benchmark::State& state) {
  const auto buffers = static_cast<std::size_t>(state.range(0));
  const ByteRange whole = ByteRange::sized(0, kBinding);
  ErrorGraph graph;
  std::vector<Taint> taints(buffers);
  const auto cycle = [&] {
    // As Device's write scope mints it (S1): insert_provisional() skips
    // moving an Error in when the hot slot is free.
    const FailureId provisional = graph.insert_provisional();
    for (Taint& taint : taints) {
      taint.taint(whole, provisional, graph);
    }
    for (Taint& taint : taints) {
      taint.written(whole, graph);
    }
    graph.prune(provisional);
  };
  cycle(); // warm-up
  run_counted(state, cycle, taints.data());
  per_unit(state, "time_per_buffer", static_cast<double>(buffers));
  if (!graph.empty()) {
    state.SkipWithError("the graph kept a node");
  }
}

void ScopeCycle_Model(benchmark::State& state) {
  const auto buffers = static_cast<std::size_t>(state.range(0));
  const ByteRange whole = ByteRange::sized(0, kBinding);
  model::EngineModel model = fresh_model(buffers);
  std::int64_t cycles = 0;
  std::uint64_t untimed = 0;
  const std::uint64_t before = heap_allocations();
  for (auto _ : state) {
    const FailureId provisional = model.insert(Error::torn_down());
    for (std::size_t at = 0; at < buffers; ++at) {
      model.taint(at, whole, provisional);
    }
    for (std::size_t at = 0; at < buffers; ++at) {
      model.written(at, whole);
    }
    model.prune(provisional);
    if (++cycles % kModelBatch == 0) {
      state.PauseTiming();
      const std::uint64_t rebuild = heap_allocations();
      model = fresh_model(buffers);
      untimed += heap_allocations() - rebuild;
      state.ResumeTiming();
    }
  }
  report_allocations(state, before + untimed, static_cast<double>(state.iterations()));
  per_unit(state, "time_per_buffer", static_cast<double>(buffers));
}

void ScopeCycle_Boxed(benchmark::State& state) {
  const auto buffers = static_cast<std::size_t>(state.range(0));
  const BoxedTaint::Range whole{0, kBinding};
  BoxedGraph graph;
  std::vector<BoxedTaint> taints(buffers);
  const auto cycle = [&] {
    const std::uint64_t provisional = graph.insert(Error::torn_down());
    for (BoxedTaint& taint : taints) {
      taint.taint(whole, provisional, graph);
    }
    for (BoxedTaint& taint : taints) {
      taint.written(whole, graph);
    }
    graph.prune(provisional);
  };
  cycle(); // warm-up
  run_counted(state, cycle, taints.data());
  per_unit(state, "time_per_buffer", static_cast<double>(buffers));
}

// ---- a claim released tile by tile ----------------------------------------------------

void ReleaseTiles_Core(benchmark::State& state) {
  const auto tiles = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::uint64_t> order = tile_order(tiles, state.range(1));
  ErrorGraph graph;
  Taint taint;
  const auto cycle = [&] {
    const FailureId failure = graph.insert(Error::launch("tile kernel"));
    taint.taint(ByteRange::sized(0, tiles * kTile), failure, graph);
    for (const std::uint64_t index : order) {
      taint.written(tile(index), graph);
    }
  };
  cycle(); // warm-up
  run_counted(state, cycle, &taint);
  per_unit(state, "time_per_tile", static_cast<double>(tiles));
  if (!taint.is_clean() || !graph.empty()) {
    state.SkipWithError("the claim was not fully released");
  }
}

void ReleaseTiles_Model(benchmark::State& state) {
  const auto tiles = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::uint64_t> order = tile_order(tiles, state.range(1));
  model::EngineModel model = fresh_model(1);
  std::int64_t cycles = 0;
  for (auto _ : state) {
    const FailureId failure = model.insert(Error::launch("tile kernel"));
    model.taint(0, ByteRange::sized(0, tiles * kTile), failure);
    for (const std::uint64_t index : order) {
      model.written(0, tile(index));
    }
    if (++cycles % kModelBatch == 0) {
      state.PauseTiming();
      model = fresh_model(1);
      state.ResumeTiming();
    }
  }
  per_unit(state, "time_per_tile", static_cast<double>(tiles));
}

void ReleaseTiles_Boxed(benchmark::State& state) {
  const auto tiles = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::uint64_t> order = tile_order(tiles, state.range(1));
  BoxedGraph graph;
  BoxedTaint taint;
  const auto cycle = [&] {
    const std::uint64_t failure = graph.insert(Error::launch("tile kernel"));
    taint.taint({0, tiles * kTile}, failure, graph);
    for (const std::uint64_t index : order) {
      taint.written(boxed(tile(index)), graph);
    }
  };
  cycle(); // warm-up
  run_counted(state, cycle, &taint);
  per_unit(state, "time_per_tile", static_cast<double>(tiles));
}

// ---- a kernel failing tile by tile ------------------------------------------------------

void FuseTiles_Core(benchmark::State& state) {
  const auto tiles = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::uint64_t> order = tile_order(tiles, state.range(1));
  ErrorGraph graph;
  Taint taint;
  const auto cycle = [&] {
    const FailureId failure = graph.insert(Error::launch("tile kernel"));
    for (const std::uint64_t index : order) {
      taint.taint(tile(index), failure, graph);
    }
    taint.written(ByteRange::sized(0, tiles * kTile), graph);
  };
  cycle(); // warm-up
  run_counted(state, cycle, &taint);
  per_unit(state, "time_per_tile", static_cast<double>(tiles));
  if (!taint.is_clean() || !graph.empty()) {
    state.SkipWithError("the claim was not fully released");
  }
}

void FuseTiles_Model(benchmark::State& state) {
  const auto tiles = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::uint64_t> order = tile_order(tiles, state.range(1));
  model::EngineModel model = fresh_model(1);
  std::int64_t cycles = 0;
  for (auto _ : state) {
    const FailureId failure = model.insert(Error::launch("tile kernel"));
    for (const std::uint64_t index : order) {
      model.taint(0, tile(index), failure);
    }
    model.written(0, ByteRange::sized(0, tiles * kTile));
    if (++cycles % kModelBatch == 0) {
      state.PauseTiming();
      model = fresh_model(1);
      state.ResumeTiming();
    }
  }
  per_unit(state, "time_per_tile", static_cast<double>(tiles));
}

void FuseTiles_Boxed(benchmark::State& state) {
  const auto tiles = static_cast<std::uint64_t>(state.range(0));
  const std::vector<std::uint64_t> order = tile_order(tiles, state.range(1));
  BoxedGraph graph;
  BoxedTaint taint;
  const auto cycle = [&] {
    const std::uint64_t failure = graph.insert(Error::launch("tile kernel"));
    for (const std::uint64_t index : order) {
      taint.taint(boxed(tile(index)), failure, graph);
    }
    taint.written({0, tiles * kTile}, graph);
  };
  cycle(); // warm-up
  run_counted(state, cycle, &taint);
  per_unit(state, "time_per_tile", static_cast<double>(tiles));
}

// ---- many failures on one allocation -------------------------------------------------

void ManyFailures_Core(benchmark::State& state) {
  const auto failures = static_cast<std::uint64_t>(state.range(0));
  ErrorGraph graph;
  Taint taint;
  const auto cycle = [&] {
    for (std::uint64_t index = 0; index < failures; ++index) {
      taint.taint(tile(index), graph.insert(Error::launch("tile")), graph);
    }
    taint.written(ByteRange::sized(0, failures * kTile), graph);
  };
  cycle(); // warm-up
  run_counted(state, cycle, &taint);
  per_unit(state, "time_per_failure", static_cast<double>(failures));
  if (!taint.is_clean() || !graph.empty()) {
    state.SkipWithError("a failure outlived the write");
  }
}

void ManyFailures_Model(benchmark::State& state) {
  const auto failures = static_cast<std::uint64_t>(state.range(0));
  model::EngineModel model = fresh_model(1);
  std::int64_t cycles = 0;
  for (auto _ : state) {
    for (std::uint64_t index = 0; index < failures; ++index) {
      model.taint(0, tile(index), model.insert(Error::launch("tile")));
    }
    model.written(0, ByteRange::sized(0, failures * kTile));
    if (++cycles % std::max<std::int64_t>(1, kModelBatch / state.range(0)) == 0) {
      state.PauseTiming();
      model = fresh_model(1);
      state.ResumeTiming();
    }
  }
  per_unit(state, "time_per_failure", static_cast<double>(failures));
}

void ManyFailures_Boxed(benchmark::State& state) {
  const auto failures = static_cast<std::uint64_t>(state.range(0));
  BoxedGraph graph;
  BoxedTaint taint;
  const auto cycle = [&] {
    for (std::uint64_t index = 0; index < failures; ++index) {
      taint.taint(boxed(tile(index)), graph.insert(Error::launch("tile")), graph);
    }
    taint.written({0, failures * kTile}, graph);
  };
  cycle(); // warm-up
  run_counted(state, cycle, &taint);
  per_unit(state, "time_per_failure", static_cast<double>(failures));
}

void buffers(benchmark::internal::Benchmark* bench) {
  bench->ArgName("buffers")->Arg(1)->Arg(2)->Arg(4)->Arg(8);
}
void tiles(benchmark::internal::Benchmark* bench) {
  bench->ArgNames({"tiles", "order"})->ArgsProduct({{16, 64, 256}, {0, 1}});
}
void failures(benchmark::internal::Benchmark* bench) {
  bench->ArgName("failures")->Arg(8)->Arg(64);
}

BENCHMARK(ScopeCycle_Core)->Apply(buffers);
BENCHMARK(ScopeCycle_Model)->Apply(buffers);
BENCHMARK(ScopeCycle_Boxed)->Apply(buffers);
BENCHMARK(ReleaseTiles_Core)->Apply(tiles);
BENCHMARK(ReleaseTiles_Model)->Apply(tiles);
BENCHMARK(ReleaseTiles_Boxed)->Apply(tiles);
BENCHMARK(FuseTiles_Core)->Apply(tiles);
BENCHMARK(FuseTiles_Model)->Apply(tiles);
BENCHMARK(FuseTiles_Boxed)->Apply(tiles);
BENCHMARK(ManyFailures_Core)->Apply(failures);
BENCHMARK(ManyFailures_Model)->Apply(failures);
BENCHMARK(ManyFailures_Boxed)->Apply(failures);

} // namespace
} // namespace taintpool::bench

BENCHMARK_MAIN();
