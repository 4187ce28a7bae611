// trace_replay: real allocation traces replayed on a GPU by taintpool's
// MemoryManager and by what users would pick instead (issue 12).
//
//   trace_replay --allocator NAME --out DIR [--repeat N] TRACE...
//   trace_replay --report DIR [--markdown FILE]
//
// The first form replays each trace (bench/replay/trace.hpp) with one
// allocator and writes DIR/<trace>.<allocator>.result (one line of figures)
// and DIR/<trace>.<allocator>.timeline (reserved and in-use bytes over the
// events, reduced to column maxima). Allocators:
//   taintpool        MemoryManager on CudaStorage with virtual memory (the
//                    default: the arena maps chunks of a reserved range);
//   taintpool-pages  the same without virtual memory (cudaMalloc pages);
//   cudaMalloc       cudaMalloc / cudaFree per event;
//   cudaMallocAsync  cudaMallocAsync / cudaFreeAsync on one stream from the
//                    device's default pool, release threshold UINT64_MAX;
//   c10              PyTorch's CUDACachingAllocator through libc10_cuda.so
//                    (raw_alloc / raw_delete; built where CMake found torch:
//                    TAINTPOOL_TORCH); started with
//                    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True it is
//                    "c10, expandable segments".
// One allocator per process, so each starts with a fresh device context and
// c10 reads its configuration once. The second form reads every result and
// timeline in DIR and writes DIR/<trace>.svg (every allocator a panel, side
// by side: bench/replay/plot.hpp) and a markdown table.
//
// Figures, per trace and allocator:
//   cold ns/op   one replay on a fresh allocator (cudaMallocAsync's pool
//                trimmed to 0, c10's cache emptied), wall time over
//                allocate + free events, the stream synchronised at the end;
//   warm ns/op   the median of N more replays (what is live at the end of a
//                replay is freed between them);
//   peak ratio   peak reserved over the trace's peak in use (the highest sum
//                of requested bytes): ours from CountingStorage, the async
//                pool's from its high-water attribute, c10's from its own
//                statistics (max_memory_reserved), cudaMalloc's from
//                cudaMemGetInfo in the plotted replay;
//   calls        device memory calls in the cold replay, and those made
//                after the first step (the second half of the events, as
//                trace.hpp defines it): ours counted by CountingStorage
//                (allocate, free, reserve, map, unmap), c10's segments
//                allocated and freed, cudaMalloc's every event; the async
//                pool's are the driver's business and not counted. Of the
//                calls after the first step, the table says how many came
//                at an event that took in use above every earlier moment
//                (a new high, as pool_replay counts them), where the
//                untimed replay made the timed one's calls.
// The plotted replay is a separate, untimed one that reads the reserved
// figure and counts the calls after every event.
//
// Exit 77 when no GPU is present.
#include <taintpool/cuda/cuda_storage.hpp>
#include <taintpool/error_graph.hpp>
#include <taintpool/pool/counting_storage.hpp>
#include <taintpool/pool/memory_manager.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "replay/plot.hpp"
#include "replay/trace.hpp"

#if TAINTPOOL_HAVE_C10
#include "c10_allocator.hpp"
#endif

namespace {

using taintpool::Allocation;
using taintpool::CountingStorage;
using taintpool::ErrorGraph;
using taintpool::MemoryManager;
using taintpool::cuda::CudaStorage;
using taintpool::cuda::CudaStorageOptions;
using taintpool::replay::Event;
using taintpool::replay::Timeline;
using taintpool::replay::Trace;
using Clock = std::chrono::steady_clock;

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s (%s)\n", what, cudaGetErrorName(error),
                 cudaGetErrorString(error));
    std::exit(1);
  }
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

/// One allocator as the replay drives it.
class Allocator {
 public:
  virtual ~Allocator() = default;
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  Allocator(Allocator&&) = delete;
  Allocator& operator=(Allocator&&) = delete;
  /// Holds a buffer of `size` bytes in `slot`.
  virtual void allocate(std::uint32_t slot, std::uint64_t size) = 0;
  virtual void free(std::uint32_t slot) = 0;
  /// Frees whatever is still held.
  virtual void free_all() = 0;
  /// Waits for stream-ordered work (the end of a timed replay).
  virtual void synchronize() {}
  [[nodiscard]] virtual std::uint64_t reserved() = 0;
  [[nodiscard]] virtual std::uint64_t peak_reserved() = 0;
  /// Device memory calls so far (0 where the allocator does not say).
  [[nodiscard]] virtual std::uint64_t calls() = 0;
};

class Ours final : public Allocator {
 public:
  Ours(std::uint32_t slots, bool virtual_memory)
      : storage_(CudaStorageOptions{0, 256, false, nullptr, virtual_memory})
      , counting_(storage_)
      , memory_(counting_, graph_)
      , live_(slots) {}
  void allocate(std::uint32_t slot, std::uint64_t size) override {
    live_[slot] = memory_.allocate(size);
  }
  void free(std::uint32_t slot) override { live_[slot].reset(); }
  void free_all() override {
    for (Allocation& allocation : live_) {
      allocation.reset();
    }
  }
  std::uint64_t reserved() override { return counting_.counts().live_bytes; }
  std::uint64_t peak_reserved() override { return counting_.counts().peak_bytes; }
  std::uint64_t calls() override { return counting_.counts().calls(); }
  [[nodiscard]] bool mapped() { return storage_.virtual_memory() != nullptr; }

 private:
  CudaStorage storage_;
  CountingStorage counting_;
  ErrorGraph graph_;
  MemoryManager memory_;
  std::vector<Allocation> live_;
};

/// Device memory in use by the process, from cudaMemGetInfo, less what was
/// in use when the replay began.
class DeviceUsage {
 public:
  DeviceUsage() { baseline_ = used(); }
  [[nodiscard]] std::uint64_t now() const {
    const std::uint64_t in_use = used();
    return in_use > baseline_ ? in_use - baseline_ : 0;
  }

 private:
  static std::uint64_t used() {
    std::size_t free = 0;
    std::size_t total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return total - free;
  }
  std::uint64_t baseline_ = 0;
};

class PlainMalloc final : public Allocator {
 public:
  explicit PlainMalloc(std::uint32_t slots)
      : live_(slots, nullptr) {}
  void allocate(std::uint32_t slot, std::uint64_t size) override {
    check(cudaMalloc(&live_[slot], std::max<std::uint64_t>(size, 1)), "cudaMalloc");
    ++calls_;
  }
  void free(std::uint32_t slot) override {
    check(cudaFree(live_[slot]), "cudaFree");
    live_[slot] = nullptr;
    ++calls_;
  }
  void free_all() override {
    for (void*& pointer : live_) {
      if (pointer != nullptr) {
        check(cudaFree(pointer), "cudaFree");
        pointer = nullptr;
      }
    }
  }
  std::uint64_t reserved() override {
    const std::uint64_t now = usage_.now();
    peak_ = std::max(peak_, now);
    return now;
  }
  std::uint64_t peak_reserved() override { return peak_; }
  std::uint64_t calls() override { return calls_; }

 private:
  std::vector<void*> live_;
  DeviceUsage usage_;
  std::uint64_t peak_ = 0;
  std::uint64_t calls_ = 0;
};

class AsyncPool final : public Allocator {
 public:
  explicit AsyncPool(std::uint32_t slots)
      : live_(slots, nullptr) {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaDeviceGetDefaultMemPool(&pool_, 0), "cudaDeviceGetDefaultMemPool");
    std::uint64_t threshold = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
          "cudaMemPoolSetAttribute(release threshold)");
    check(cudaMemPoolTrimTo(pool_, 0), "cudaMemPoolTrimTo");
    std::uint64_t zero = 0;
    check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero), "reset high");
  }
  ~AsyncPool() override { static_cast<void>(cudaStreamDestroy(stream_)); }
  AsyncPool(const AsyncPool&) = delete;
  AsyncPool& operator=(const AsyncPool&) = delete;
  AsyncPool(AsyncPool&&) = delete;
  AsyncPool& operator=(AsyncPool&&) = delete;
  void allocate(std::uint32_t slot, std::uint64_t size) override {
    check(cudaMallocAsync(&live_[slot], std::max<std::uint64_t>(size, 1), stream_),
          "cudaMallocAsync");
  }
  void free(std::uint32_t slot) override {
    check(cudaFreeAsync(live_[slot], stream_), "cudaFreeAsync");
    live_[slot] = nullptr;
  }
  void free_all() override {
    for (void*& pointer : live_) {
      if (pointer != nullptr) {
        check(cudaFreeAsync(pointer, stream_), "cudaFreeAsync");
        pointer = nullptr;
      }
    }
    synchronize();
  }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  std::uint64_t reserved() override { return attribute(cudaMemPoolAttrReservedMemCurrent); }
  std::uint64_t peak_reserved() override { return attribute(cudaMemPoolAttrReservedMemHigh); }
  std::uint64_t calls() override { return 0; }

 private:
  std::uint64_t attribute(cudaMemPoolAttr which) {
    std::uint64_t value = 0;
    check(cudaMemPoolGetAttribute(pool_, which, &value), "cudaMemPoolGetAttribute");
    return value;
  }
  std::vector<void*> live_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
};

#if TAINTPOOL_HAVE_C10
class TorchCaching final : public Allocator {
 public:
  explicit TorchCaching(std::uint32_t slots)
      : live_(slots, nullptr) {
    taintpool::replay::c10::init();
    taintpool::replay::c10::reset();
  }
  void allocate(std::uint32_t slot, std::uint64_t size) override {
    live_[slot] = taintpool::replay::c10::allocate(size);
  }
  void free(std::uint32_t slot) override {
    taintpool::replay::c10::free(live_[slot]);
    live_[slot] = nullptr;
  }
  void free_all() override {
    for (void*& pointer : live_) {
      if (pointer != nullptr) {
        taintpool::replay::c10::free(pointer);
        pointer = nullptr;
      }
    }
  }
  void synchronize() override { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }
  std::uint64_t reserved() override { return taintpool::replay::c10::reserved(); }
  std::uint64_t peak_reserved() override { return taintpool::replay::c10::peak_reserved(); }
  std::uint64_t calls() override { return taintpool::replay::c10::segments(); }

 private:
  std::vector<void*> live_;
};
#endif

std::unique_ptr<Allocator> make(const std::string& name, std::uint32_t slots) {
  if (name == "taintpool") {
    auto ours = std::make_unique<Ours>(slots, true);
    if (!ours->mapped()) {
      std::fprintf(stderr, "trace_replay: this device has no virtual memory management\n");
    }
    return ours;
  }
  if (name == "taintpool-pages") {
    return std::make_unique<Ours>(slots, false);
  }
  if (name == "cudaMalloc") {
    return std::make_unique<PlainMalloc>(slots);
  }
  if (name == "cudaMallocAsync") {
    return std::make_unique<AsyncPool>(slots);
  }
#if TAINTPOOL_HAVE_C10
  if (name == "c10") {
    return std::make_unique<TorchCaching>(slots);
  }
#endif
  std::fprintf(stderr, "trace_replay: unknown or unavailable allocator '%s'\n", name.c_str());
  std::exit(2);
}

std::string label_of(const std::string& name) {
#if TAINTPOOL_HAVE_C10
  if (name == "c10") {
    return taintpool::replay::c10::label();
  }
#endif
  return name == "taintpool-pages" ? "taintpool, pages" : name;
}

std::string slug(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
  }
  return out;
}

/// One timed replay; the calls made from steady_from on go to `steady_calls`.
double timed(const Trace& trace, Allocator& allocator, std::uint64_t* steady_calls) {
  const std::size_t steady_from = trace.steady_from();
  std::uint64_t at_steady = 0;
  const Clock::time_point start = Clock::now();
  for (std::size_t at = 0; at < trace.events.size(); ++at) {
    if (steady_calls != nullptr && at == steady_from) {
      at_steady = allocator.calls();
    }
    const Event& event = trace.events[at];
    if (event.allocate) {
      allocator.allocate(event.slot, event.size);
    } else {
      allocator.free(event.slot);
    }
  }
  allocator.synchronize();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (steady_calls != nullptr) {
    *steady_calls = allocator.calls() - at_steady;
  }
  return seconds * 1e9 / static_cast<double>(trace.events.size());
}

/// Reduces a series to at most `columns` maxima (what the plot keeps).
std::vector<std::uint64_t> reduce(const std::vector<std::uint64_t>& series, std::size_t columns) {
  std::vector<std::uint64_t> out(std::min(columns, series.size()), 0);
  for (std::size_t at = 0; at < series.size() && !out.empty(); ++at) {
    const std::size_t column = at * out.size() / series.size();
    out[column] = std::max(out[column], series[at]);
  }
  return out;
}

int replay(const std::string& name, const std::string& out, int repeat,
           const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    const Trace trace = taintpool::replay::load_trace(path);
    const std::string label = label_of(name);
    // The plotted replay: untimed, the reserved figure after every event,
    // and the calls made from steady_from on, with how many came at an
    // event that took in use above every earlier moment (a new high; as
    // pool_replay counts them: bench/pool_replay.cpp).
    std::vector<std::uint64_t> reserved;
    std::uint64_t plotted_peak = 0;
    std::uint64_t plotted_steady_calls = 0;
    std::uint64_t steady_calls_at_high = 0;
    {
      std::unique_ptr<Allocator> allocator = make(name, trace.slots);
      reserved.reserve(trace.events.size());
      const std::size_t steady_from = trace.steady_from();
      for (std::size_t at = 0; at < trace.events.size(); ++at) {
        const Event& event = trace.events[at];
        const std::uint64_t calls_before = allocator->calls();
        if (event.allocate) {
          allocator->allocate(event.slot, event.size);
        } else {
          allocator->free(event.slot);
        }
        reserved.push_back(allocator->reserved());
        const std::uint64_t calls = allocator->calls() - calls_before;
        if (at >= steady_from) {
          plotted_steady_calls += calls;
          if (trace.new_high[at]) {
            steady_calls_at_high += calls;
          }
        }
      }
      allocator->free_all();
      plotted_peak = allocator->peak_reserved();
    }
#if TAINTPOOL_HAVE_C10
    if (name == "c10") {
      taintpool::replay::c10::reset();
    }
#endif
    std::unique_ptr<Allocator> allocator = make(name, trace.slots);
    std::uint64_t steady_calls = 0;
    const double cold = timed(trace, *allocator, &steady_calls);
    const std::uint64_t cold_calls = allocator->calls();
    std::uint64_t peak = allocator->peak_reserved();
    if (name == "cudaMalloc") {
      peak = plotted_peak; // cudaMemGetInfo after every event: the plotted replay's
    }
    allocator->free_all();
    std::vector<double> warm;
    for (int round = 0; round < repeat; ++round) {
      warm.push_back(timed(trace, *allocator, nullptr));
      allocator->free_all();
    }
    std::sort(warm.begin(), warm.end());
    const double warm_median = warm.empty() ? 0 : warm[warm.size() / 2];
    const std::uint64_t warm_calls = allocator->calls() - cold_calls;
    allocator.reset();
#if TAINTPOOL_HAVE_C10
    if (name == "c10") {
      taintpool::replay::c10::reset();
    }
#endif

    const std::string base = out + "/" + trace.name + "." + slug(label);
    std::ofstream result(base + ".result");
    result << trace.name << "\t" << label << "\t" << cold << "\t" << warm_median << "\t" << peak
           << "\t" << trace.peak_in_use << "\t" << cold_calls << "\t" << steady_calls << "\t"
           << warm_calls << "\t" << trace.events.size()
           << "\t"
           // Only where the untimed replay made the timed one's calls.
           << (plotted_steady_calls == steady_calls ? std::to_string(steady_calls_at_high)
                                                    : std::string("-"))
           << "\n";
    std::ofstream timeline(base + ".timeline");
    timeline << label << "\n";
    for (const std::uint64_t value : reduce(reserved, 720)) {
      timeline << value << " ";
    }
    timeline << "\n";
    for (const std::uint64_t value : reduce(trace.in_use, 720)) {
      timeline << value << " ";
    }
    timeline << "\n";
    std::printf("%s\t%s\tcold %.0f ns/op\twarm %.0f ns/op\tpeak %.4fx\tcalls %llu (%llu after the "
                "first step; %llu warm)\n",
                trace.name.c_str(), label.c_str(), cold, warm_median,
                static_cast<double>(peak) / static_cast<double>(trace.peak_in_use),
                static_cast<unsigned long long>(cold_calls),
                static_cast<unsigned long long>(steady_calls),
                static_cast<unsigned long long>(warm_calls));
    std::fflush(stdout);
  }
  return 0;
}

std::vector<std::string> files_in(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> found;
  if (DIR* handle = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(handle)) {
      const std::string name = entry->d_name;
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        found.push_back(dir + "/" + name);
      }
    }
    closedir(handle);
  }
  std::sort(found.begin(), found.end());
  return found;
}

int report(const std::string& dir, const std::string& markdown) {
  // Allocators in a fixed order, the rest after.
  const std::vector<std::string> order = {
      "taintpool",       "taintpool, pages", "c10", "c10, expandable segments",
      "cudaMallocAsync", "cudaMalloc"};
  auto rank = [&](const std::string& label) {
    const auto found = std::find(order.begin(), order.end(), label);
    return static_cast<std::size_t>(found - order.begin());
  };
  struct Row {
    std::vector<std::string> fields;
  };
  std::map<std::string, std::vector<Row>> rows;
  for (const std::string& path : files_in(dir, ".result")) {
    std::ifstream in(path);
    std::string line;
    if (std::getline(in, line)) {
      Row row;
      std::stringstream split(line);
      std::string field;
      while (std::getline(split, field, '\t')) {
        row.fields.push_back(field);
      }
      if (row.fields.size() >= 10) {
        rows[row.fields[0]].push_back(row);
      }
    }
  }
  // Of the calls after the first step, those at a new high of in use
  // (results of older binaries have no such field).
  auto at_high = [](const Row& row) {
    if (row.fields.size() < 11 || row.fields[10] == "-" || row.fields[7] == "0") {
      return std::string();
    }
    return " (" + row.fields[10] + " at a new high)";
  };
  std::string table = "| trace | allocator | cold ns/op | warm ns/op | peak reserved / peak in use "
                      "| device memory calls (cold; after the first step, with those at a new "
                      "high of in use; warm) |\n"
                      "|---|---|---:|---:|---:|---|\n";
  for (auto& [trace, list] : rows) {
    std::sort(list.begin(), list.end(),
              [&](const Row& a, const Row& b) { return rank(a.fields[1]) < rank(b.fields[1]); });
    std::vector<Timeline> timelines;
    for (const Row& row : list) {
      const double ratio = std::stod(row.fields[4]) / std::stod(row.fields[5]);
      const bool counted = row.fields[1] != "cudaMallocAsync";
      table += "| " + trace + " | " + row.fields[1] + " | " + fixed(std::stod(row.fields[2]), 0) +
               " | " + fixed(std::stod(row.fields[3]), 0) + " | " + fixed(ratio, 3) + " | " +
               (counted ? row.fields[6] + "; " + row.fields[7] + at_high(row) + "; " + row.fields[8]
                        : std::string("not counted")) +
               " |\n";
      std::ifstream in(dir + "/" + trace + "." + slug(row.fields[1]) + ".timeline");
      Timeline timeline;
      std::string line;
      std::getline(in, timeline.allocator);
      for (std::vector<std::uint64_t>* series : {&timeline.reserved, &timeline.in_use}) {
        std::getline(in, line);
        std::stringstream values(line);
        std::uint64_t value = 0;
        while (values >> value) {
          series->push_back(value);
        }
      }
      timeline.note =
          fixed(ratio, 3) + "x peak; " + fixed(std::stod(row.fields[3]), 0) + " ns/op warm";
      timelines.push_back(std::move(timeline));
    }
    taintpool::replay::write_svg(dir + "/" + trace + ".svg", trace + " on the GPU", timelines);
  }
  std::cout << table;
  if (!markdown.empty()) {
    std::ofstream(markdown) << table;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  std::string allocator;
  std::string out = ".";
  std::string report_dir;
  std::string markdown;
  int repeat = 3;
  std::vector<std::string> paths;
  for (int at = 1; at < argc; ++at) {
    const std::string arg = argv[at];
    if (arg == "--allocator" && at + 1 < argc) {
      allocator = argv[++at];
    } else if (arg == "--out" && at + 1 < argc) {
      out = argv[++at];
    } else if (arg == "--repeat" && at + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++at]));
    } else if (arg == "--report" && at + 1 < argc) {
      report_dir = argv[++at];
    } else if (arg == "--markdown" && at + 1 < argc) {
      markdown = argv[++at];
    } else if (arg == "--list") {
      std::cout << "taintpool taintpool-pages cudaMalloc cudaMallocAsync"
#if TAINTPOOL_HAVE_C10
                << " c10"
#endif
                << "\n";
      return 0;
    } else {
      paths.push_back(arg);
    }
  }
  if (!report_dir.empty()) {
    return report(report_dir, markdown);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trace_replay: no GPU\n");
    return 77;
  }
  if (allocator.empty() || paths.empty()) {
    std::fprintf(stderr, "usage: trace_replay --allocator NAME --out DIR [--repeat N] TRACE...\n"
                         "       trace_replay --report DIR [--markdown FILE]\n");
    return 2;
  }
  return replay(allocator, out, repeat, paths);
}
