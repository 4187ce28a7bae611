// A stand-alone driver for any fuzz target: runs LLVMFuzzerTestOneInput once
// per input file, so the committed corpora and crash reproducers replay as
// ctest tests under any compiler (g++ included), with no libFuzzer.
//
// Usage: <target>_replay PATH...
//   Each PATH is a file or a directory; a directory's regular files are
//   replayed in name order (not recursively), skipping README* files, which
//   document a folder rather than reproduce anything. Arguments starting with
//   '-' are ignored, so a libFuzzer command line (-runs=..., -max_len=...)
//   can be pointed at this binary unchanged.
//
// A target that finds a problem aborts, which fails the test; the driver
// prints each file's name before running it, so the log names the culprit.
// A PATH that does not exist is an error (a misspelt folder would otherwise
// replay nothing and pass).
//
// With -balance (before or among the PATHs), every input is replayed
// twice over, and the driver fails if an input of the second pass ends
// with more blocks from operator new than deletes (testing/'s counters,
// which every replay driver links but MemorySanitizer's; a call refused by
// an injected fault gives no block, so it is not one). Why: libFuzzer runs an
// input that ends with more mallocs than frees a second time (its leak
// check), so a target that keeps state across inputs must free, within each
// input, what that input allocated once its kept lists have their capacity
// (the first pass gives them that). Kept state that frees in one input what
// another allocated cost collective_fuzzer a quarter of its time
// (fuzz/ROUNDS.md, round 53).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// testing/'s counters (heap_allocations.hpp), weak: null in a driver built
// without the replaced operator new, which then refuses -balance.
namespace taintpool::testing {
[[gnu::weak]] std::uint64_t heap_allocations() noexcept;
[[gnu::weak]] std::uint64_t heap_frees() noexcept;
[[gnu::weak]] std::uint64_t heap_refusals() noexcept;
} // namespace taintpool::testing
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

/// testing/'s counters now, for unbalanced_since(): the blocks operator
/// new handed out, which is what libFuzzer's malloc hooks see. A call that
/// an armed fault refused (alloc_faults.hpp: device_fuzzer's synchronize
/// out of memory, the taint targets' faulted core calls) throws bad_alloc
/// and gives no block to free; counted, each input whose fault fired read
/// as keeping a block it never had (fuzz/ROUNDS.md, round 54).
struct Counts {
  std::uint64_t blocks = 0;
  std::uint64_t frees = 0;
};
Counts counts() {
  return Counts{taintpool::testing::heap_allocations() - taintpool::testing::heap_refusals(),
                taintpool::testing::heap_frees()};
}

/// Whether the run since `before` ended with more blocks from operator new
/// than deletes; says so on stderr, naming `file`.
bool unbalanced_since(const Counts& before, const fs::path& file) {
  const Counts now = counts();
  const std::uint64_t made = now.blocks - before.blocks;
  const std::uint64_t freed = now.frees - before.frees;
  if (made <= freed) {
    return false;
  }
  std::fprintf(stderr, "replay: %s ended with %llu allocations and %llu frees\n", file.c_str(),
               static_cast<unsigned long long>(made), static_cast<unsigned long long>(freed));
  return true;
}

/// Replays `file`; with `unbalanced`, sets it to whether the run ended
/// with more blocks from operator new than deletes (counted around the run
/// only).
bool replay(const fs::path& file, bool* unbalanced = nullptr) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
  // A fresh copy, so a target reading past `size` trips AddressSanitizer
  // instead of reading the next file's bytes.
  std::vector<std::uint8_t> input(bytes.begin(), bytes.end());
  const std::uint8_t* data = input.empty() ? nullptr : input.data();
  const Counts before = unbalanced != nullptr ? counts() : Counts{};
  LLVMFuzzerTestOneInput(data, input.size());
  if (unbalanced != nullptr) {
    *unbalanced = unbalanced_since(before, file);
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) {
    LLVMFuzzerInitialize(&argc, &argv);
  }
  bool balance = false;
  bool ok = true;
  std::vector<fs::path> inputs;
  for (int at = 1; at < argc; ++at) {
    const std::string arg = argv[at];
    if (arg == "-balance") {
      balance = true;
      continue;
    }
    if (arg.starts_with("-")) {
      continue;
    }
    const fs::path path(arg);
    std::error_code error;
    if (fs::is_directory(path, error)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry& entry : fs::directory_iterator(path)) {
        if (entry.is_regular_file() && !entry.path().filename().string().starts_with("README")) {
          files.push_back(entry.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (fs::path& file : files) {
        inputs.push_back(std::move(file));
      }
    } else if (fs::is_regular_file(path, error)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", path.c_str());
      ok = false;
    }
  }
  if (balance && (&taintpool::testing::heap_allocations == nullptr ||
                  &taintpool::testing::heap_frees == nullptr ||
                  &taintpool::testing::heap_refusals == nullptr)) {
    std::fprintf(stderr, "replay: -balance needs testing/'s operator new counters, not linked\n");
    return 1;
  }
  std::size_t replayed = 0;
  for (const fs::path& input : inputs) {
    ok = replay(input) && ok;
    ++replayed;
  }
  if (balance) {
    std::size_t unbalanced = 0;
    for (const fs::path& input : inputs) {
      bool more = false;
      ok = replay(input, &more) && ok;
      unbalanced += more ? 1 : 0;
      ++replayed;
    }
    std::fprintf(stderr,
                 "replay: second pass, %zu of %zu inputs ended with more allocations than frees\n",
                 unbalanced, inputs.size());
    ok = ok && unbalanced == 0;
  }
  std::fprintf(stderr, "replay: %zu inputs replayed, %s\n", replayed, ok ? "all passed" : "FAILED");
  return ok ? 0 : 1;
}
