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
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

bool replay(const fs::path& file) {
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
  LLVMFuzzerTestOneInput(data, input.size());
  return true;
}

} // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) {
    LLVMFuzzerInitialize(&argc, &argv);
  }
  std::size_t replayed = 0;
  bool ok = true;
  for (int at = 1; at < argc; ++at) {
    const std::string arg = argv[at];
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
      for (const fs::path& file : files) {
        ok = replay(file) && ok;
        ++replayed;
      }
    } else if (fs::is_regular_file(path, error)) {
      ok = replay(path) && ok;
      ++replayed;
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", path.c_str());
      ok = false;
    }
  }
  std::fprintf(stderr, "replay: %zu inputs replayed, %s\n", replayed, ok ? "all passed" : "FAILED");
  return ok ? 0 : 1;
}
